"""DESIGN.md's invariants, written once and numbered as there. Each raises ``InvariantViolation``
through ``fail`` (which adds the seed and the trace). The workloads call them after every event.

1. At most one member owns a partition at any instant; a partition moves only after its owner
   gave it up.
2. Epochs never go backwards: group epoch >= assignment epoch >= every member epoch.
3. In-memory state equals the replay of the committed log prefix.
4. An acknowledged write survives the loss of any coordinator process.
5. A fenced or stale member's commit is rejected.
6. Every subscribed partition is eventually owned by exactly one live member once quiet.
7. A committed offset is always a plain commit's value or a committed transaction's; an aborted
   or fenced transaction never moves one.

Besides these, ``invariant_shard_life``: every shard moves only along its transition table.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from groupcoord.coordinator.group_shard import GroupCoordinatorState
from groupcoord.coordinator.groups.classic import ClassicGroupsState
from groupcoord.coordinator.runtime.shard import TRANSITIONS, Shard, ShardPhase
from groupcoord.records import RecordType, decode
from tests.sim.clients import TP, ConsumerClient
from tests.sim.kernel import Entry, InvariantViolation, SimLog, TransitionLog

Fail = Callable[[str], None]


# --- 1. exclusive ownership -----------------------------------------------------------------------


def invariant_1_no_partition_owned_twice(owners: Iterable[tuple[str, Iterable[TP]]], fail: Fail) -> None:
    """1, as the clients see it: no partition is owned by two live clients (``owners`` lists
    the live ones with what they own)."""
    holder: dict[TP, str] = {}
    for name, owned in owners:
        for tp in owned:
            if tp in holder:
                fail(f"1. {tp} owned by both {holder[tp]} and {name}")
            holder[tp] = name


def invariant_1_exclusive_ownership(clients: Iterable[ConsumerClient], members: Mapping[str, Any], fail: Fail) -> None:
    """1. At most one live member owns a partition at any instant, and a member owns only what
    the coordinator's committed state gives it (assigned, or still being revoked). A client the
    coordinator no longer counts among the ``members`` (its session expired while it was cut
    off) is a zombie: it may still believe it owns partitions, but its commits are refused (5)."""
    holder: dict[TP, str] = {}
    for c in clients:
        member = members.get(c.member_id) if c.alive else None
        if member is None:
            continue
        for tp in c.owned:
            if not member.owns(*tp):
                fail(f"1. {c.member_id} owns {tp}, which the coordinator does not give it")
            if tp in holder:
                fail(f"1. {tp} owned by both {holder[tp]} and {c.member_id}")
            holder[tp] = c.member_id


def invariant_1_coordinator_holders(group: Any, fail: Fail) -> None:
    """1, in the coordinator: no partition is assigned to (or still being revoked from) two
    members of a consumer group at once."""
    holders: dict[TP, str] = {}
    for member_id, member in group.members.items():
        for epochs in (member.assigned, member.pending_revocation):
            for t, ps in epochs.items():
                for p in ps:
                    other = holders.get((t, p))
                    if other is not None and other != member_id:
                        fail(f"1. {(t, p)} held by {other} and {member_id} in the coordinator")
                    holders[(t, p)] = member_id


# --- 2. epochs ------------------------------------------------------------------------------------


def invariant_2_epochs(state: GroupCoordinatorState, group_id: str, last: dict[str, int], fail: Fail) -> None:
    """2. Epochs never go backwards: group epoch >= assignment epoch >= every member epoch, and
    neither the group nor the assignment epoch goes back (``last`` remembers them)."""
    group = state.consumer.group(group_id)
    if group is None:
        return
    if group.group_epoch < last.get("group", 0) or group.assignment_epoch < last.get("assignment", 0):
        fail(f"2. group or assignment epoch went back from {last} to {group.group_epoch}/{group.assignment_epoch}")
    if group.assignment_epoch > group.group_epoch:
        fail(f"2. assignment epoch {group.assignment_epoch} > group epoch {group.group_epoch}")
    for member_id, member in group.members.items():
        if member.member_epoch > group.assignment_epoch:
            fail(f"2. {member_id} epoch {member.member_epoch} > assignment epoch {group.assignment_epoch}")
    last["group"], last["assignment"] = group.group_epoch, group.assignment_epoch


def invariant_2_member_epochs(group: Any, highest: dict[str, int], fail: Fail) -> None:
    """2. A member's epoch never goes back (``highest`` remembers each member's highest)."""
    for member_id, member in group.members.items():
        seen = highest.get(member_id)
        if member.member_epoch >= 0:
            if seen is not None and member.member_epoch < seen:
                fail(f"2. {member_id} epoch went back from {seen} to {member.member_epoch}")
            highest[member_id] = member.member_epoch


def invariant_2_client_epoch(name: str, before: int, after: int, fail: Fail) -> None:
    """2. The epoch the coordinator gives a member never goes back (until it rejoins from 0)."""
    if before > 0 and after < before:
        fail(f"2. {name} epoch went back {before} -> {after}")


def invariant_2_generation(name: str, last: int | None, generation: int | None, fail: Fail) -> None:
    """2. A classic group's generation never goes back."""
    if last is not None and generation is not None and generation < last:
        fail(f"2. {name} generation went back from {last} to {generation}")


def invariant_2_logged_generations(log: SimLog, partition: int, cursor: list[int], fail: Fail) -> None:
    """2. The generations a classic group's records carry never go back in the log (``cursor``
    holds the entries already checked and the highest generation seen), until the group is
    deleted (its tombstone): one created again starts from generation 0, as in Kafka."""
    entries = log.entries.get(partition, [])
    for entry in entries[cursor[0] :]:
        record = decode(entry.key, entry.value)
        if record.type is not RecordType.GROUP_METADATA:
            continue
        if record.value is None:
            cursor[1] = 0
        else:
            if record.value.generation < cursor[1] and record.value.members:
                fail(f"2. logged generation went back to {record.value.generation}")
            cursor[1] = max(cursor[1], record.value.generation)
    cursor[0] = len(entries)


_GROUP_METADATA = (RecordType.GROUP_METADATA, RecordType.CONSUMER_GROUP_METADATA)


def _offset(entry: Entry) -> int:
    return entry.offset


class Deletions:
    """How many times a group was deleted (its metadata record tombstoned: the retention sweep
    deleting it empty, DeleteGroups) in what a log partition holds so far. A deleted group is
    created again by the next join from epoch (generation) 0, as Kafka's is: the invariants that
    an epoch never goes back hold within one life of the group (``within_one_life``)."""

    def __init__(self, log: SimLog, partition: int, group_id: str) -> None:
        self.log, self.partition, self.group_id = log, partition, group_id
        self.scanned = -1
        self.count = 0

    def seen(self) -> int:
        entries = self.log.entries.get(self.partition, [])
        for entry in entries[bisect.bisect_right(entries, self.scanned, key=_offset) :]:
            self.scanned = entry.offset
            if entry.value is None:
                record = decode(entry.key, None)
                if record.type in _GROUP_METADATA and record.key.group == self.group_id:
                    self.count += 1
        return self.count


def within_one_life(
    deletions: Deletions, forgotten: list[int], check: Callable[[], None], forget: Callable[[], None]
) -> None:
    """Run ``check`` (epoch invariants over state read back from the log). If it fails after the
    group was deleted again (``forgotten[0]``: the deletions seen when its memory was last
    forgotten), that is the group's next life: ``forget`` what the check remembers of the last
    one, and check again. Forgetting only once the check fails keeps a state read back before the
    deletion (the tombstone is written before it is read back) from being taken for the new life."""
    try:
        check()
    except InvariantViolation:
        deleted = deletions.seen()
        if deleted == forgotten[0]:
            raise
        forgotten[0] = deleted
        forget()
        check()


# --- the shard's life -----------------------------------------------------------------------------


def invariant_shard_life(transitions: TransitionLog, fail: Fail) -> None:
    """Every phase change seen since the last check is in the shard's transition table, and each
    shard's changes chain: each starts where its previous one ended, the first from CLOSED."""
    seen = transitions.seen
    for shard, before, after in seen[transitions.checked :]:
        expected = transitions.phase_of.get(id(shard), ShardPhase.CLOSED)
        if before is not expected:
            fail(f"shard {shard.partition} moved {before.value} -> {after.value} while {expected.value}")
        if after not in TRANSITIONS[before]:
            fail(f"shard {shard.partition} moved {before.value} -> {after.value}, not in its transition table")
        transitions.phase_of[id(shard)] = after
    transitions.checked = len(seen)


# --- 3. replay ------------------------------------------------------------------------------------


def invariant_3_replay_matches(
    shard: Shard[GroupCoordinatorState],
    log: SimLog,
    fail: Fail,
    full: bool,
    view: Callable[[GroupCoordinatorState], Any] | None = None,
) -> None:
    """3. In-memory state equals the replay of the committed log prefix (live once caught up,
    and, with ``full``, a fresh load of the whole, possibly compacted, log). ``view`` narrows
    the live/committed comparison to the part of the state a workload changes."""
    if not shard.caught_up:
        return
    if view is not None:
        if view(shard.live) != view(shard.committed):
            fail("3. live state differs from the replay of the committed log")
    elif not shard.replay_matches():
        fail("3. live state differs from the replay of the committed log")
    if full and shard.committed_offset >= log.end.get(shard.partition, 0):
        fresh = GroupCoordinatorState()
        log.replay(shard.partition, fresh)
        if fresh.snapshot() != shard.committed.snapshot():
            fail("3. a fresh load of the log differs from the committed state")


def invariant_3_classic_groups_match_records(
    live: ClassicGroupsState, committed: ClassicGroupsState, fail: Fail
) -> None:
    """3. A classic group at rest (Stable or Empty) is exactly what its last record says."""
    for group_id, group in live.groups.items():
        if group.state.value in ("Stable", "Empty"):
            replayed = committed.group(group_id)
            if replayed is None or replayed.to_record_value() != group.to_record_value():
                fail(f"3. live {group} is not what its record says")


# --- 4. acknowledged writes -----------------------------------------------------------------------


def invariant_4_acknowledged_commits_survive(
    state: GroupCoordinatorState, group_id: str, acked: Mapping[tuple[str, int], int], fail: Fail
) -> None:
    """4. An acknowledged commit survives ownership moves, reloads and zombies: the committed
    offset is the acknowledged one or a later one (offsets only grow in the simulations)."""
    for (topic, partition), offset in acked.items():
        value = state.offsets.get(group_id, topic, partition)
        if value is None or value.offset < offset:
            fail(f"4. acknowledged commit {topic}-{partition}@{offset} lost (log has {value})")


# --- 5. commits -----------------------------------------------------------------------------------


def invariant_5_only_the_holder_commits(
    state: GroupCoordinatorState, group_id: str, member_id: str, epoch: int, accepted: Iterable[TP], fail: Fail
) -> None:
    """5. Fenced members and newer epochs are refused; a commit at an older epoch is accepted
    only for partitions the member was given at or before that epoch, so a zombie that lost a
    partition cannot overwrite its new owner (KIP-1251, Kafka 4.4). At its current epoch a
    member's commit is not checked partition by partition. Checked against the state the commit
    was validated on."""
    group = state.consumer.group(group_id)
    member = group.members.get(member_id) if group is not None else None
    for tp in accepted:
        if member is None or epoch > member.member_epoch:
            fail(f"5. commit of {tp} by {member_id}@{epoch} accepted but the member is gone or behind the request")
            return
        assigned_at = member.assignment_epoch_of(*tp)
        if epoch < member.member_epoch and (assigned_at is None or assigned_at > epoch):
            fail(f"5. commit of {tp} by {member_id}@{epoch} accepted but it was not assigned at that epoch")


# --- 6. quiet coverage ----------------------------------------------------------------------------


def invariant_6_owned_exactly_once(owners: Iterable[tuple[str, Iterable[TP]]], wanted: set[TP], fail: Fail) -> None:
    """6. Once quiet, every wanted partition is owned by exactly one live client, and nothing else."""
    owned: dict[TP, str] = {}
    for name, tps in owners:
        for tp in tps:
            if tp in owned:
                fail(f"6. {tp} owned by {owned[tp]} and {name} at the quiet end")
            owned[tp] = name
    if set(owned) != wanted:
        missing = sorted(wanted - set(owned))[:5]
        extra = sorted(set(owned) - wanted)[:5]
        fail(f"6. the quiet group does not cover its partitions: unowned {missing}, unexpected {extra}")


def invariant_6_quiet_group_covered(
    state: GroupCoordinatorState, group_id: str, clients: Iterable[ConsumerClient], partitions: set[TP], fail: Fail
) -> None:
    """6. Once quiet, every subscribed partition is owned by exactly one live member, and each
    member owns exactly what the coordinator assigned it."""
    group = state.consumer.group(group_id)
    live = [c for c in clients if c.alive]
    for c in live:
        member = group.members.get(c.member_id) if group is not None else None
        if member is None:
            fail(f"6. live client {c.member_id} is not a member")
            return
        assigned = {(t, p) for t, ps in member.assigned.items() for p in ps}
        if assigned != c.owned:
            fail(f"6. {c.member_id} owns {sorted(c.owned)} but is assigned {sorted(assigned)}")
    invariant_6_owned_exactly_once([(c.member_id, c.owned) for c in live], partitions, fail)


# --- 7. transactional offsets ---------------------------------------------------------------------


def invariant_7_committed_offsets_come_from_commits(
    state: GroupCoordinatorState,
    group_id: str,
    plain: set[int],
    committed_transactions: set[int],
    aborted_transactions: set[int],
    fail: Fail,
) -> None:
    """7. Every committed offset of the group is a value some plain commit or some committed
    transaction wrote (the workloads make every value unique), never an aborted transaction's."""
    for topic, partitions in state.offsets.group_offsets(group_id).items():
        for partition, value in partitions.items():
            if value.offset in aborted_transactions:
                fail(f"7. {topic}-{partition} holds {value.offset}, written by an aborted transaction")
            if value.offset not in plain and value.offset not in committed_transactions:
                fail(f"7. {topic}-{partition} holds {value.offset}, neither a plain commit nor a committed transaction")
