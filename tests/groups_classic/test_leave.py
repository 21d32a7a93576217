"""LeaveGroup: batches with per-member results (v3+), a single member (v0-2)."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic import ClassicGroupState
from groupcoord.coordinator.messages.leave_group import LeaveGroupResponseMemberResponse
from tests.groups_classic.harness import Coordinator, settle
from tests.messages import member_identity

S = ClassicGroupState


def answer(member_id: str, instance_id: str | None, error: ErrorCode) -> LeaveGroupResponseMemberResponse:
    return LeaveGroupResponseMemberResponse(member_id=member_id, group_instance_id=instance_id, error_code=error)


def stable(c: Coordinator, n: int, static: bool = False) -> list[str]:
    ids = []
    for i in range(n):
        if static:
            t, r = c.join(instance_id=f"i{i}", client_id=f"c{i}")
            ids.append(c.group().static_member_id(f"i{i}") or "")
        else:
            ids.append(c.join_new(client_id=f"c{i}")[1])
    c.advance(3000 * (n + 1))
    settle(c, *ids)
    return ids


def test_batch_leave_with_per_member_errors() -> None:
    c = Coordinator()
    m1, m2, m3 = stable(c, 3)
    response = c.leave(
        member_identity(m1),
        member_identity("ghost"),
        member_identity(m2, "wrong-instance"),
        member_identity(m3, reason="shutdown"),
    )
    assert response.error_code == ErrorCode.NONE
    assert response.members == [
        answer(m1, None, ErrorCode.NONE),
        answer("ghost", None, ErrorCode.UNKNOWN_MEMBER_ID),
        answer(m2, "wrong-instance", ErrorCode.UNKNOWN_MEMBER_ID),
        answer(m3, None, ErrorCode.NONE),
    ]
    group = c.group()
    assert list(group.members) == [m2] and group.leader_id == m2
    assert group.state is S.PREPARING_REBALANCE


def test_everyone_leaving_empties_the_group() -> None:
    c = Coordinator()
    m1, m2 = stable(c, 2)
    response = c.leave(member_identity(m1), member_identity(m2))
    assert all(m.error_code == ErrorCode.NONE for m in response.members)
    group = c.group()
    assert group.state is S.EMPTY and group.generation_id == 2
    assert c.log[-1].value is not None and c.log[-1].value.members == []
    c.assert_replay_matches()


def test_static_member_removed_by_instance_id_alone() -> None:
    c = Coordinator()
    m1, m2 = stable(c, 2, static=True)
    response = c.leave(member_identity(group_instance_id="i1"), member_identity(group_instance_id="nope"))
    assert [m.error_code for m in response.members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    assert list(c.group().members) == [m1]
    # A stale member id with the instance id is fenced.
    response = c.leave(member_identity("old-id", "i0"))
    assert response.members[0].error_code == ErrorCode.FENCED_INSTANCE_ID


def test_pending_member_leaves() -> None:
    c = Coordinator()
    _, r = c.join()
    assert r.member_id  # type: ignore[union-attr]
    response = c.leave(member_identity(r.member_id))  # type: ignore[union-attr]
    assert response.members[0].error_code == ErrorCode.NONE
    assert not c.group().pending_join_members


def test_old_versions_report_the_member_error_at_top_level() -> None:
    c = Coordinator()
    (m1,) = stable(c, 1)
    assert c.leave(member_id="ghost", api_version=2).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    response = c.leave(member_id=m1, api_version=0)
    assert response.error_code == ErrorCode.NONE and response.members == []
    assert c.group().state is S.EMPTY


def test_leave_unknown_group_and_invalid_group() -> None:
    c = Coordinator()
    response = c.leave(member_identity("m"), group_id="nope")
    assert response.members[0].error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert c.leave(member_identity("m"), group_id="").error_code == ErrorCode.INVALID_GROUP_ID


def test_leaving_member_parked_in_join_is_answered() -> None:
    c = Coordinator()
    m1, m2 = stable(c, 2)
    t1, _ = c.join(m1)
    c.leave(member_identity(m1))
    assert c.answer(t1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    # m2 alone: its rejoin closes the barrier.
    _, r = c.join(m2)
    assert r.generation_id == 2  # type: ignore[union-attr]


def test_leave_during_rebalance_completes_the_barrier() -> None:
    c = Coordinator()
    m1, m2 = stable(c, 2)
    t1, _ = c.join(m1)
    c.leave(member_identity(m2))
    assert c.answer(t1).generation_id == 2 and c.group().state is S.COMPLETING_REBALANCE


def test_leave_while_waiting_for_the_leader_releases_parked_followers() -> None:
    c = Coordinator()
    ids = [c.join_new(client_id=f"c{i}")[1] for i in range(3)]
    c.advance(12000)
    m1, m2, m3 = ids
    t2, _ = c.sync(m2, 1)
    c.leave(member_identity(m3))
    assert c.answer(t2).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert c.group().state is S.PREPARING_REBALANCE
