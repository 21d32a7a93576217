"""Static membership (KIP-345 in the consumer protocol): leave with -2, rejoin by instance id."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.consumer import (
    MemberState,
)
from tests.groups.harness import Coordinator, assigned, image, topic, tps
from tests.messages import tid

FOO = tid("foo")


def stable_pair() -> Coordinator:
    c = Coordinator(image(topic("foo", 4)))
    c.join("A1", ["foo"], instance_id="a")
    c.join("B1", ["foo"], instance_id="b")
    c.beat("A1", 1, tps(FOO, 0, 1, 2, 3))
    c.beat("A1", 1, tps(FOO, 0, 1))
    c.beat("B1", 2, tps(FOO))
    assert c.member("A1") == (2, [0, 1], []) and c.member("B1") == (2, [2, 3], [])
    return c


def test_bounce_keeps_assignment_without_rebalance() -> None:
    c = stable_pair()
    epochs = c.epochs()
    r = c.beat("B1", -2, instance_id="b")
    assert (r.error_code, r.member_epoch) == (ErrorCode.NONE, -2)
    assert c.member("B1") == (-2, [2, 3], [])
    assert c.epochs() == epochs  # no rebalance for a static leave
    # Nobody else gets B's partitions while it is away.
    c.beat("A1", 2, tps(FOO, 0, 1))
    assert c.member("A1") == (2, [0, 1], [])
    # The restarted process (new member id, same instance id) takes over the assignment.
    r = c.join("B2", ["foo"], instance_id="b")
    assert (r.error_code, r.member_id, r.member_epoch, assigned(r)) == (ErrorCode.NONE, "B2", 2, [2, 3])
    g = c.group()
    assert "B1" not in g.members and "B1" not in g.target
    assert c.target("B2") == {FOO: [2, 3]}
    assert g.static_members["b"] == "B2"
    assert c.epochs() == epochs
    assert g.state().value == "Stable"
    assert "consumer-session\x00grp\x00B1" not in c.timers
    assert c.replayed() == c.state.snapshot()


def test_replacing_a_present_static_member_is_rejected() -> None:
    c = stable_pair()
    r = c.join("B2", ["foo"], instance_id="b")
    assert r.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    assert "B2" not in c.group().members


def test_static_member_that_does_not_return_is_fenced() -> None:
    c = stable_pair()
    c.beat("B1", -2, instance_id="b")
    epochs = c.epochs()
    c.fire("consumer-session\x00grp\x00B1")
    assert "B1" not in c.group().members and "b" not in c.group().static_members
    assert c.epochs()[0] == epochs[0] + 1
    r = c.beat("A1", 2, tps(FOO, 0, 1))
    assert (r.member_epoch, assigned(r)) == (3, [0, 1, 2, 3])


def test_static_member_leaving_for_good_with_minus_one() -> None:
    c = stable_pair()
    r = c.beat("B1", -1, instance_id="b")
    assert (r.error_code, r.member_epoch) == (ErrorCode.NONE, -1)
    assert "B1" not in c.group().members


def test_static_leave_releases_partitions_being_revoked() -> None:
    c = stable_pair()
    c.join("C1", ["foo"])
    # B is asked to revoke one partition, then bounces before acknowledging.
    c.beat("B1", 2, tps(FOO, 2, 3))
    b = c.group().members["B1"]
    assert b.state == MemberState.UNREVOKED_PARTITIONS
    revoking = sorted(p for ps in b.pending_revocation.values() for p in ps)
    assert revoking
    c.beat("B1", -2, instance_id="b")
    assert c.member("B1")[2] == []
    for p in revoking:
        assert c.group().owner_of(FOO, p) is None
    # C can have it now; B comes back and continues from the partition it kept.
    r = c.beat("C1", 3, tps(FOO))
    assert assigned(r) == revoking
    r = c.join("B2", ["foo"], instance_id="b")
    assert r.error_code == ErrorCode.NONE
    assert c.group().members["B2"].state == MemberState.STABLE
    assert c.replayed() == c.state.snapshot()


def test_epoch_zero_with_own_live_member_id_is_unreleased_instance_id() -> None:
    """Kafka 4.4 refuses an epoch-0 heartbeat for an instance id whose holder has not left with
    -2, even when it names the holder's own member id (this test once pinned the lenient NONE):
    a second process started with the same instance id must not take the assignment over."""
    c = stable_pair()
    before = c.state.snapshot()
    r = c.join("B1", ["foo"], instance_id="b")
    assert (r.error_code, r.member_id, r.assignment) == (ErrorCode.UNRELEASED_INSTANCE_ID, None, None)
    assert r.error_message == (
        "Static member B1 with instance id b cannot join the group because the instance id is owned by B1 member."
    )
    assert c.state.snapshot() == before
    # The holder itself goes on heartbeating at its epoch.
    assert c.beat("B1", 2, tps(FOO, 2, 3)).error_code == ErrorCode.NONE


def test_rejoin_with_same_member_id_after_leaving_is_not_a_replacement() -> None:
    c = stable_pair()
    c.beat("B1", -2, instance_id="b")
    r = c.join("B1", ["foo"], instance_id="b")
    assert (r.error_code, r.member_id, assigned(r)) == (ErrorCode.NONE, "B1", [2, 3])
