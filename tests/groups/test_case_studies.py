"""The case studies of KIP-848 (seed 000), state by state, on the uniform assignor."""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.consumer import (
    ConsumerGroupsState,
    MemberState,
)
from tests.groups.harness import GROUP, Coordinator, assigned, image, topic, tps
from tests.messages import tid

FOO = tid("foo")


def view(state: ConsumerGroupsState) -> dict[str, Any]:
    """Group epoch, target epoch, targets and member assignments, as the case studies draw them."""
    g = state.group(GROUP)
    assert g is not None
    return {
        "group": g.group_epoch,
        "target_epoch": g.assignment_epoch,
        "target": {m: sorted(p for ps in t.values() for p in ps) for m, t in sorted(g.target.items())},
        "members": {
            m: (
                v.member_epoch,
                sorted(p for ps in v.assigned.values() for p in ps),
                sorted(p for ps in v.pending_revocation.values() for p in ps),
            )
            for m, v in sorted(g.members.items())
        },
    }


def states_during(c: Coordinator, fn: Any) -> list[dict[str, Any]]:
    """Run ``fn`` and return the group as seen after each record it wrote (every intermediate state)."""
    start = len(c.log)
    fn()
    fresh = ConsumerGroupsState()
    for r in c.log[:start]:
        fresh.replay(r)
    out = []
    for r in c.log[start:]:
        fresh.replay(r)
        if fresh.group(GROUP) is not None:
            out.append(view(fresh))
    assert fresh.snapshot() == c.state.snapshot()
    return out


def test_join_of_a_b_c_revokes_before_assigning() -> None:
    c = Coordinator(image(topic("foo", 3)))

    seen = states_during(c, lambda: c.join("A", ["foo"]))
    # Group (epoch=1) with A, target epoch 0, A epoch 0 ...
    assert {"group": 1, "target_epoch": 0, "target": {}, "members": {"A": (0, [], [])}} in seen
    # ... the coordinator installs the target assignment (all partitions to A) ...
    assert {"group": 1, "target_epoch": 1, "target": {"A": [0, 1, 2]}, "members": {"A": (0, [], [])}} in seen
    # ... and A moves to epoch 1 with everything: nothing to revoke.
    assert seen[-1] == {"group": 1, "target_epoch": 1, "target": {"A": [0, 1, 2]}, "members": {"A": (1, [0, 1, 2], [])}}

    seen = states_during(c, lambda: c.join("B", ["foo"]))
    assert {
        "group": 2,
        "target_epoch": 1,
        "target": {"A": [0, 1, 2]},
        "members": {"A": (1, [0, 1, 2], []), "B": (0, [], [])},
    } in seen
    # B moves to epoch 2 but cannot have foo-2 until A revokes it.
    assert seen[-1] == {
        "group": 2,
        "target_epoch": 2,
        "target": {"A": [0, 1], "B": [2]},
        "members": {"A": (1, [0, 1, 2], []), "B": (2, [], [])},
    }
    assert c.group().members["B"].state == MemberState.UNRELEASED_PARTITIONS

    # A heartbeats: told to revoke foo-2 (the response leaves it out), stays on epoch 1.
    r = c.beat("A", 1, tps(FOO, 0, 1, 2))
    assert (r.member_epoch, assigned(r)) == (1, [0, 1])
    assert c.member("A") == (1, [0, 1], [2])
    assert c.group().members["A"].state == MemberState.UNREVOKED_PARTITIONS
    # B asks again: foo-2 is still A's.
    r = c.beat("B", 2, tps(FOO))
    assert c.member("B") == (2, [], [])
    # A acknowledges the revocation: epoch 2, foo-2 released.
    r = c.beat("A", 1, tps(FOO, 0, 1))
    # Same partitions, new epoch: no assignment in the response (it did not change).
    assert (r.member_epoch, assigned(r)) == (2, None)
    assert c.member("A") == (2, [0, 1], [])
    # B gets foo-2.
    r = c.beat("B", 2, tps(FOO))
    assert (r.member_epoch, assigned(r)) == (2, [2])
    assert view(c.state)["members"] == {"A": (2, [0, 1], []), "B": (2, [2], [])}

    seen = states_during(c, lambda: c.join("C", ["foo"]))
    assert {
        "group": 3,
        "target_epoch": 2,
        "target": {"A": [0, 1], "B": [2]},
        "members": {"A": (2, [0, 1], []), "B": (2, [2], []), "C": (0, [], [])},
    } in seen
    assert seen[-1]["target"] == {"A": [0], "B": [2], "C": [1]}
    assert seen[-1]["target_epoch"] == 3
    # C moves to epoch 3 but cannot get foo-1 yet.
    assert c.member("C") == (3, [], [])

    # B has nothing to revoke: straight to epoch 3.
    r = c.beat("B", 2, tps(FOO, 2))
    assert c.member("B") == (3, [2], [])
    # A is told to revoke foo-1.
    r = c.beat("A", 2, tps(FOO, 0, 1))
    assert (r.member_epoch, assigned(r)) == (2, [0])
    assert c.member("A") == (2, [0], [1])
    # A acknowledges; C then gets foo-1.
    c.beat("A", 2, tps(FOO, 0))
    assert c.member("A") == (3, [0], [])
    r = c.beat("C", 3, tps(FOO))
    assert (r.member_epoch, assigned(r)) == (3, [1])
    assert view(c.state) == {
        "group": 3,
        "target_epoch": 3,
        "target": {"A": [0], "B": [2], "C": [1]},
        "members": {"A": (3, [0], []), "B": (3, [2], []), "C": (3, [1], [])},
    }
    assert c.group().state().value == "Stable"
    assert c.replayed() == c.state.snapshot()


def _stable_a_b_six_partitions(c: Coordinator) -> None:
    c.join("A", ["foo"])
    c.join("B", ["foo"])
    c.beat("A", 1, tps(FOO, 0, 1, 2, 3, 4, 5))
    c.beat("A", 1, tps(FOO, 0, 1, 2))
    c.beat("B", 2, tps(FOO))
    assert view(c.state)["members"] == {"A": (2, [0, 1, 2], []), "B": (2, [3, 4, 5], [])}


def test_third_member_waits_for_two_revocations() -> None:
    c = Coordinator(image(topic("foo", 6)))
    _stable_a_b_six_partitions(c)
    c.join("C", ["foo"])
    assert view(c.state)["target"] == {"A": [0, 1], "B": [3, 4], "C": [2, 5]}
    assert c.member("C") == (3, [], [])  # epoch 3, nothing yet
    c.beat("A", 2, tps(FOO, 0, 1, 2))  # told to revoke foo-2
    c.beat("B", 2, tps(FOO, 3, 4, 5))  # told to revoke foo-5
    assert c.member("A") == (2, [0, 1], [2]) and c.member("B") == (2, [3, 4], [5])
    c.beat("C", 3, tps(FOO))
    assert c.member("C") == (3, [], [])  # no change
    c.beat("A", 2, tps(FOO, 0, 1))  # ack: A at 3, foo-2 released
    assert c.member("A") == (3, [0, 1], [])
    r = c.beat("C", 3, tps(FOO))  # C gets foo-2 but not foo-5
    assert assigned(r) == [2] and c.group().members["C"].state == MemberState.UNRELEASED_PARTITIONS
    c.beat("B", 2, tps(FOO, 3, 4))
    r = c.beat("C", 3, tps(FOO, 2))
    assert assigned(r) == [2, 5]
    assert view(c.state)["members"] == {"A": (3, [0, 1], []), "B": (3, [3, 4], []), "C": (3, [2, 5], [])}


def test_member_failure() -> None:
    c = Coordinator(image(topic("foo", 6)))
    _stable_a_b_six_partitions(c)
    c.join("C", ["foo"])
    c.beat("A", 2, tps(FOO, 0, 1, 2))
    c.beat("A", 2, tps(FOO, 0, 1))
    c.beat("B", 2, tps(FOO, 3, 4, 5))
    c.beat("B", 2, tps(FOO, 3, 4))
    c.beat("C", 3, tps(FOO))
    assert view(c.state)["members"] == {"A": (3, [0, 1], []), "B": (3, [3, 4], []), "C": (3, [2, 5], [])}

    # A stops heartbeating: its session timer fences it and bumps the group epoch.
    seen = states_during(c, lambda: c.fire("consumer-session\x00grp\x00A"))
    assert seen[-1] == {
        "group": 4,
        "target_epoch": 3,
        "target": {"B": [3, 4], "C": [2, 5]},
        "members": {"B": (3, [3, 4], []), "C": (3, [2, 5], [])},
    }
    # The next heartbeat computes the new target; B and C move to epoch 4 with A's partitions.
    r = c.beat("B", 3, tps(FOO, 3, 4))
    assert view(c.state)["target"] == {"B": [0, 3, 4], "C": [1, 2, 5]}
    assert (r.member_epoch, assigned(r)) == (4, [0, 3, 4])
    r = c.beat("C", 3, tps(FOO, 2, 5))
    assert (r.member_epoch, assigned(r)) == (4, [1, 2, 5])
    assert c.group().state().value == "Stable"
    # The fenced member is told so.
    r = c.beat("A", 3, tps(FOO, 0, 1))
    assert r.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_partition_added() -> None:
    c = Coordinator(image(topic("foo", 1)))
    c.join("A", ["foo"])
    c.join("B", ["foo"])
    c.beat("A", 1, tps(FOO, 0))
    c.beat("B", 2, tps(FOO))
    assert view(c.state)["members"] == {"A": (2, [0], []), "B": (2, [], [])}
    g_epoch = c.group().group_epoch

    c.metadata = image(topic("foo", 2), version=2)
    seen = states_during(c, lambda: c.beat("B", 2, tps(FOO)))
    # The coordinator detects the new partition, bumps the group epoch, computes a new target.
    assert {
        "group": g_epoch + 1,
        "target_epoch": g_epoch,
        "target": {"A": [0]},
        "members": {"A": (2, [0], []), "B": (2, [], [])},
    } in seen
    assert view(c.state)["target"] == {"A": [0], "B": [1]}
    assert c.member("B") == (3, [1], [])
    c.beat("A", 2, tps(FOO, 0))
    assert view(c.state)["members"] == {"A": (3, [0], []), "B": (3, [1], [])}
