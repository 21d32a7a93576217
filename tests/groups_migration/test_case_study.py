"""Seed 000's "Online Migration" case study, step by step, through the composed shard.

The case study starts from a classic group (generation 22) with A, B and C; A is rolled to the
consumer protocol, B leaves and comes back upgraded while C stays on the classic protocol
(eager). After every step the group, the target assignment and each member's assignment are
checked, and the log replayed into a fresh shard must equal the live state.

Where Kafka's actual behaviour and the illustration differ, the test follows Kafka:

* "A leaves and rejoins with the new protocol" is A's process restarting with
  ``group.protocol=consumer`` under the same (client-generated, KIP-1082) member id, so the
  converted group knows it: no epoch bump, A keeps foo-0 and foo-1 at epoch 22, as drawn.
* B's LeaveGroup fences B at once: its target slice is tombstoned with it (the illustration still
  lists B in the epoch-22 target until the next assignment).
* The coordinator computes a target when a request needs it: C's JoinGroup computes epoch 23.
* At epoch 24 the uniform assignor, sticky and balanced, takes foo-5 from C (the illustration
  takes foo-4): B gets foo-3 and foo-5, C keeps foo-2 and foo-4.
"""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.consumer import ConsumerGroupState
from tests.groups_migration.harness import GROUP, Shard, classic_group_record, partitions_of


def test_online_migration_case_study() -> None:
    s = Shard()

    # A generic (classic) group, generation 22.
    s.load(classic_group_record(22, {"A": [0, 1], "B": [3, 4], "C": [2, 5]}))
    assert s.kind() == "classic" and s.classic_group().generation_id == 22
    # Offsets committed by the classic members must survive the conversion.
    assert s.commit("C", 22, {2: 200, 5: 500}) == [0, 0]
    s.check_replay()

    # A rejoins with the consumer protocol: the group is converted. The generation becomes the
    # group epoch and the target and member assignments are the current assignment.
    a = s.cg_join("A")
    assert (a.error_code, a.member_epoch) == (0, 22)
    assert a.assignment is not None and [tp.partitions for tp in a.assignment.topic_partitions] == [[0, 1]]
    assert s.kind() == "consumer" and s.state.classic.group(GROUP) is None
    assert s.epochs() == (22, 22)
    assert s.targets() == {"A": [0, 1], "B": [3, 4], "C": [2, 5]}
    assert s.members() == {"A": (22, [0, 1], []), "B": (22, [3, 4], []), "C": (22, [2, 5], [])}
    g = s.cgroup()
    assert not g.members["A"].uses_classic_protocol
    assert g.members["B"].uses_classic_protocol and g.members["C"].uses_classic_protocol
    assert s.state.offsets.get(GROUP, "foo", 2) is not None and s.state.offsets.get(GROUP, "foo", 5) is not None
    s.check_replay()

    # B leaves the group: removed, group epoch bumped; nobody's assignment changes yet.
    left = s.leave("B")
    assert [m.error_code for m in left.members] == [0]
    assert s.epochs() == (23, 22)
    assert s.targets() == {"A": [0, 1], "C": [2, 5]}
    assert s.members() == {"A": (22, [0, 1], []), "C": (22, [2, 5], [])}
    s.check_replay()

    # C heartbeats and is told to rebalance; it revokes everything (eager) and rejoins. Its
    # JoinGroup computes the epoch-23 target; C owns nothing, so it moves to epoch 23 at once.
    assert s.heartbeat("C", 22) == ErrorCode.REBALANCE_IN_PROGRESS
    joined = s.join("C", owned=())
    assert (joined.error_code, joined.generation_id, joined.leader, joined.members) == (0, 23, "", [])
    assert s.epochs() == (23, 23)
    assert s.targets() == {"A": [0, 1, 3], "C": [2, 4, 5]}
    assert s.members() == {"A": (22, [0, 1], []), "C": (23, [2, 4, 5], [])}
    s.check_replay()

    # C collects its assignment with SyncGroup (all free) and is stable.
    synced = s.sync("C", 23)
    assert synced.error_code == 0 and partitions_of(synced.assignment) == [2, 4, 5]
    assert s.heartbeat("C", 23) == ErrorCode.NONE

    # In the meantime A heartbeats and moves to epoch 23.
    a = s.cg_beat("A", 22, owned=[0, 1])
    assert a.member_epoch == 23
    assert s.members() == {"A": (23, [0, 1, 3], []), "C": (23, [2, 4, 5], [])}
    assert s.cgroup().state() == ConsumerGroupState.STABLE
    s.check_replay()

    # B rejoins with the consumer protocol: group epoch 24, new target. B gets nothing yet:
    # foo-3 is still A's and foo-5 still C's.
    b = s.cg_join("B")
    assert (b.member_epoch, b.assignment is not None and b.assignment.topic_partitions) == (24, [])
    assert s.epochs() == (24, 24)
    assert s.targets() == {"A": [0, 1], "B": [3, 5], "C": [2, 4]}
    assert s.members() == {"A": (23, [0, 1, 3], []), "B": (24, [], []), "C": (23, [2, 4, 5], [])}
    s.check_replay()

    # A heartbeats and is told to revoke foo-3 (revoke before assign: it stays on epoch 23).
    a = s.cg_beat("A", 23, owned=[0, 1, 3])
    assert a.member_epoch == 23
    assert s.members()["A"] == (23, [0, 1], [3])

    # C must revoke foo-5: its heartbeat asks it to rejoin; it revokes all (eager) and rejoins,
    # moving to epoch 24 with what it keeps. foo-5 is released.
    assert s.heartbeat("C", 23) == ErrorCode.REBALANCE_IN_PROGRESS
    joined = s.join("C", owned=())
    assert joined.generation_id == 24
    assert s.members()["C"] == (24, [2, 4], [])
    synced = s.sync("C", 24)
    assert partitions_of(synced.assignment) == [2, 4]
    s.check_replay()

    # A confirms the revocation of foo-3 and moves to epoch 24. foo-3 is released.
    a = s.cg_beat("A", 23, owned=[0, 1])
    assert a.member_epoch == 24
    assert s.members()["A"] == (24, [0, 1], [])

    # B heartbeats and gets its assignment. Everyone is at epoch 24, each partition owned once.
    b = s.cg_beat("B", 24, owned=[])
    assert b.assignment is not None and [tp.partitions for tp in b.assignment.topic_partitions] == [[3, 5]]
    assert s.members() == {"A": (24, [0, 1], []), "B": (24, [3, 5], []), "C": (24, [2, 4], [])}
    assert s.cgroup().state() == ConsumerGroupState.STABLE
    assert s.heartbeat("C", 24) == ErrorCode.NONE
    # The classic member commits with its generation (= its member epoch).
    assert s.commit("C", 24, {2: 201}) == [0]
    assert s.commit("C", 23, {2: 202}) == [ErrorCode.ILLEGAL_GENERATION]
    s.check_replay()
