"""DESIGN.md's invariants, written once and numbered as there. Each raises ``InvariantViolation``
through ``fail`` (which adds the seed and the trace)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from coordinator.group_shard import GroupCoordinatorState
from coordinator.runtime.shard import Shard
from tests.sim.clients import TP, ConsumerClient
from tests.sim.kernel import SimLog

Fail = Callable[[str], None]


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


def invariant_2_epochs(state: GroupCoordinatorState, group_id: str, last_epoch: int, fail: Fail) -> int:
    """2. Epochs never go backwards: group epoch >= assignment epoch >= every member epoch.
    Returns the group epoch, to compare with the next check."""
    group = state.consumer.group(group_id)
    if group is None:
        return last_epoch
    if group.group_epoch < last_epoch:
        fail(f"2. group epoch went back from {last_epoch} to {group.group_epoch}")
    if group.assignment_epoch > group.group_epoch:
        fail(f"2. assignment epoch {group.assignment_epoch} > group epoch {group.group_epoch}")
    for member_id, member in group.members.items():
        if member.member_epoch > group.assignment_epoch:
            fail(f"2. {member_id} epoch {member.member_epoch} > assignment epoch {group.assignment_epoch}")
    return int(group.group_epoch)


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


def invariant_4_acknowledged_commits_survive(
    state: GroupCoordinatorState, group_id: str, acked: Mapping[tuple[str, int], int], fail: Fail
) -> None:
    """4. An acknowledged commit survives ownership moves, reloads and zombies: the committed
    offset is the acknowledged one or a later one (offsets only grow in the simulations)."""
    for (topic, partition), offset in acked.items():
        value = state.offsets.get(group_id, topic, partition)
        if value is None or value.offset < offset:
            fail(f"4. acknowledged commit {topic}-{partition}@{offset} lost (log has {value})")


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


def invariant_6_quiet_group_covered(
    state: GroupCoordinatorState, group_id: str, clients: Iterable[ConsumerClient], partitions: set[TP], fail: Fail
) -> None:
    """6. Once quiet, every subscribed partition is owned by exactly one live member, and each
    member owns exactly what the coordinator assigned it."""
    group = state.consumer.group(group_id)
    owned: dict[TP, str] = {}
    for c in clients:
        if not c.alive:
            continue
        member = group.members.get(c.member_id) if group is not None else None
        if member is None:
            fail(f"6. live client {c.member_id} is not a member")
            return
        assigned = {(t, p) for t, ps in member.assigned.items() for p in ps}
        if assigned != c.owned:
            fail(f"6. {c.member_id} owns {sorted(c.owned)} but is assigned {sorted(assigned)}")
        for tp in c.owned:
            owned[tp] = c.member_id
    if set(owned) != partitions:
        fail(f"6. partitions owned by nobody: {sorted(partitions - set(owned))}")
