"""Converting a non-empty group between the two protocols (Kafka's convertToConsumerGroup and
convertToClassicGroup).

Upgrade: the first consumer-protocol member joining a classic group turns it into a consumer
group. The classic generation becomes the group epoch and the target assignment epoch; every
classic member becomes a consumer-group member that keeps speaking the classic protocol
(``classic_member_metadata``), subscribed to what its Subscription names and owning what its
classic Assignment gave it, at the generation as member epoch. Offsets are not touched.

Downgrade: when the last consumer-protocol member leaves (or is fenced) and every remaining
member speaks the classic protocol, the consumer group becomes a classic group again: one
GroupMetadata record with the members' subscriptions and target assignments at generation = the
group epoch (see ``classic_group_of``), the consumer records tombstoned, and the live group put in
PreparingRebalance so every member rejoins through the classic protocol (also after a failover:
see ``downgrade``). A downgrade by static replacement that changes nothing (same subscription,
every member at its target) leaves the group Stable instead (``routing``).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.groups.classic import ClassicGroupConfig, ClassicGroupsState
from groupcoord.coordinator.groups.classic.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    LATEST_ASSIGNMENT_VERSION,
    Assignment,
    ConsumerProtocolError,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from groupcoord.coordinator.groups.classic.effects import Effects
from groupcoord.coordinator.groups.classic.group import STABLE, ClassicGroup
from groupcoord.coordinator.groups.classic.member import ClassicGroupMember
from groupcoord.coordinator.groups.classic.rebalance import prepare_rebalance, schedule_heartbeat
from groupcoord.coordinator.groups.classic.requests import join_error
from groupcoord.coordinator.groups.classic.timers import heartbeat_key, join_key, sync_key
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import log_records
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember, MemberState, PartitionEpochs
from groupcoord.coordinator.groups.consumer.requests import Owned
from groupcoord.coordinator.groups.consumer.state import ConsumerGroupsState
from groupcoord.coordinator.groups.consumer.subscriptions import group_topic_names
from groupcoord.coordinator.groups.consumer.timers import assignment_key, cancel_member_timers, schedule_session
from groupcoord.coordinator.groups.context import GroupContext
from groupcoord.coordinator.groups.migration.timers import cancel_classic_member_timers
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.messages.join_group import JoinGroupRequestProtocol
from groupcoord.coordinator.messages.sync_group import SyncGroupResponse
from groupcoord.coordinator.runtime.api import CancelTimer, Result, TimerOp
from groupcoord.records import CoordinatorRecord
from groupcoord.records.definitions import ClassicMemberInConsumerGroup, ClassicProtocol, GroupMetadataValue

# --- translating the embedded consumer protocol -----------------------------------------------


def partitions_by_id(items: Iterable[TopicPartitions], image: TopicsImage) -> dict[str, frozenset[int]]:
    """Topic names -> topic ids; topics or partitions the metadata does not know are dropped."""
    out: dict[str, set[int]] = {}
    for tp in items:
        topic_id = image.topic_id(tp.topic)
        if topic_id is None:
            continue
        count = image.partition_count(topic_id)
        valid = {p for p in tp.partitions if 0 <= p < count}
        if valid:
            out.setdefault(topic_id, set()).update(valid)
    return {t: frozenset(ps) for t, ps in out.items()}


def owned_partitions(subscription: Subscription, image: TopicsImage) -> Owned:
    """What a classic member says it owns (Subscription v1+), as a heartbeat's owned partitions."""
    by_id = partitions_by_id(subscription.owned_partitions, image)
    return [(t, sorted(ps)) for t, ps in sorted(by_id.items())]


def assignment_bytes(partitions: Mapping[str, Iterable[int]], image: TopicsImage, version: int) -> bytes:
    """A member's partitions (by topic id) as ConsumerProtocolAssignment bytes (by topic name)."""
    items = []
    for topic_id in sorted(partitions, key=lambda t: image.topic_name(t) or ""):
        name = image.topic_name(topic_id)
        ps = sorted(partitions[topic_id])
        if name is not None and ps:
            items.append(TopicPartitions(name, tuple(ps)))
    return encode_assignment(Assignment(tuple(items)), version)


def metadata_version(metadata: bytes) -> int:
    """The version a classic member speaks (the Subscription's), within what we can write."""
    if len(metadata) < 2:
        return LATEST_ASSIGNMENT_VERSION
    version = int.from_bytes(metadata[:2], "big", signed=True)
    return min(max(version, 0), LATEST_ASSIGNMENT_VERSION)


def classic_metadata(
    session_timeout_ms: int, protocols: Iterable[JoinGroupRequestProtocol]
) -> ClassicMemberInConsumerGroup:
    return ClassicMemberInConsumerGroup(
        session_timeout_ms=session_timeout_ms,
        supported_protocols=[ClassicProtocol(p.name, p.metadata) for p in protocols],
    )


def _epochs(partitions: Mapping[str, frozenset[int]], epoch: int) -> PartitionEpochs:
    return {t: dict.fromkeys(sorted(ps), epoch) for t, ps in partitions.items() if ps}


# --- upgrade: classic -> consumer ---------------------------------------------------------------


def validate_online_upgrade(group: ClassicGroup, config: ConsumerGroupConfig) -> GroupError | None:
    """Why this non-empty classic group cannot become a consumer group now (None: it can)."""
    gid = group.group_id
    if not config.upgrade_enabled:
        return GroupError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade classic group {gid} to consumer group because online upgrade is disabled.",
        )
    if not group.uses_consumer_protocol():
        return GroupError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade classic group {gid} to consumer group because the group does not use "
            "the consumer embedded protocol.",
        )
    if len(group.members) > config.max_size:
        return GroupError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade classic group {gid} to consumer group because the group size exceeds "
            "the consumer group maximum size.",
        )
    # No state check: a group in PreparingRebalance/CompletingRebalance converts at once, as in
    # Kafka; its members keep what their last Stable generation gave them and the parked
    # requests are answered REBALANCE_IN_PROGRESS (``parked_answers``).
    return None


def owned_assignments(group: ClassicGroup, last_stable: GroupMetadataValue | None) -> dict[str, bytes]:
    """What each member may still own. In a Stable group: its assignment. In a rebalance the live
    assignments may already be reset (CompletingRebalance -> PreparingRebalance clears them)
    while cooperative clients keep consuming, so the last Stable generation's record says what
    each member may hold; the consumer group then waits for those partitions to be released."""
    if group.state is STABLE:
        return {m.member_id: m.assignment for m in group.members.values()}
    recorded = {m.member_id: m.assignment for m in last_stable.members} if last_stable is not None else {}
    return {mid: recorded.get(mid, b"") for mid in group.members}


def consumer_members_of(
    group: ClassicGroup, image: TopicsImage, assignments: Mapping[str, bytes]
) -> list[ConsumerGroupMember]:
    """The classic members as consumer-group members (ConsumerGroup.fromClassicGroup)."""
    generation = group.generation_id
    out = []
    try:
        for m in group.members.values():
            subscription = decode_subscription(m.metadata(group.protocol_name))
            owned = assignments.get(m.member_id, b"")
            assignment = decode_assignment(owned) if owned else Assignment()
            assigned = partitions_by_id(assignment.assigned_partitions, image)
            out.append(
                ConsumerGroupMember(
                    member_id=m.member_id,
                    instance_id=m.group_instance_id,
                    rack_id=subscription.rack_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    subscribed_topic_names=tuple(sorted(set(subscription.topics))),
                    member_epoch=generation,
                    previous_member_epoch=generation,
                    state=MemberState.STABLE,
                    assigned=_epochs(assigned, generation),
                    has_metadata=True,
                    has_assignment=True,
                    classic_member_metadata=classic_metadata(m.session_timeout_ms, m.supported_protocols),
                )
            )
    except (ConsumerProtocolError, KeyError) as exc:
        raise GroupError(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade classic group {group.group_id} to consumer group because the embedded "
            "consumer protocol is malformed.",
        ) from exc
    return out


def upgrade_records(
    group: ClassicGroup, image: TopicsImage, assignments: Mapping[str, bytes]
) -> list[CoordinatorRecord]:
    """The consumer-group records of the converted group (createConsumerGroupRecords)."""
    gid = group.group_id
    generation = group.generation_id
    members = sorted(consumer_members_of(group, image, assignments), key=lambda m: m.member_id)
    records = [log_records.member_metadata_record(gid, m) for m in members]
    metadata_hash = image.metadata_hash(group_topic_names(members, {}))
    records.append(log_records.group_epoch_record(gid, generation, metadata_hash))
    records += [log_records.target_member_record(gid, m.member_id, m.assigned) for m in members]
    # Timestamp 0: no assignor ran for this group yet, so the first bump is not throttled.
    records.append(log_records.target_metadata_record(gid, generation, 0))
    records += [log_records.current_assignment_record(gid, m) for m in members]
    return records


def classic_teardown_timers(state: ClassicGroupsState, group: ClassicGroup) -> list[TimerOp]:
    """Cancel the classic group's own timers (they would find no classic group anyway)."""
    fx = Effects(state.timers)
    for member_id in list(group.members) + list(group.pending_join_members):
        fx.cancel(heartbeat_key(group.group_id, member_id))
    fx.cancel(join_key(group.group_id))
    fx.cancel(sync_key(group.group_id))
    return fx.timers


def converted_session_timers(group_id: str, members: Iterable[ConsumerGroupMember], now_ms: int) -> list[TimerOp]:
    timers: list[TimerOp] = []
    for m in members:
        assert m.classic_member_metadata is not None
        timers.append(schedule_session(group_id, m.member_id, now_ms, m.classic_member_metadata.session_timeout_ms))
    return timers


def parked_answers(group: ClassicGroup) -> list[tuple[Hashable, Any]]:
    """REBALANCE_IN_PROGRESS for every JoinGroup/SyncGroup parked in the classic group's
    rebalance (completeAllJoinFutures / completeAllSyncFutures on conversion)."""
    out: list[tuple[Hashable, Any]] = []
    for m in group.members.values():
        if m.awaiting_join is not None:
            out.append((m.awaiting_join, join_error(m.member_id, ErrorCode.REBALANCE_IN_PROGRESS)))
        if m.awaiting_sync is not None:
            out.append((m.awaiting_sync, SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)))
    return out


def scratch_state(records: Iterable[CoordinatorRecord]) -> ConsumerGroupsState:
    """A consumer state holding only the converted group, to run the joining heartbeat against."""
    scratch = ConsumerGroupsState()
    for record in records:
        scratch.replay(record)
    return scratch


# --- downgrade: consumer -> classic -------------------------------------------------------------


def downgrade_allowed(
    group: ConsumerGroup,
    leaving: Iterable[str],
    config: ConsumerGroupConfig,
    classic_config: ClassicGroupConfig,
) -> bool:
    """validateOnlineDowngradeWithFencedMembers: only classic members would remain, at least one."""
    gone = set(leaving)
    remaining = 0
    for mid, m in group.members.items():
        if mid in gone:
            continue
        if not m.uses_classic_protocol:
            # Stops at the first consumer-protocol member: a leave of a big consumer group is
            # asked this every time, and walking all its members made a rolling restart n^2.
            return False
        remaining += 1
    if not remaining or not config.downgrade_enabled:
        return False
    return remaining <= classic_config.max_size


def consumer_group_tombstones(group: ConsumerGroup) -> list[CoordinatorRecord]:
    gid = group.group_id
    records: list[CoordinatorRecord] = []
    for mid in sorted(group.members):
        records.append(log_records.current_assignment_tombstone(gid, mid))
    for mid in sorted(group.target):
        records.append(log_records.target_member_tombstone(gid, mid))
    records.append(log_records.target_metadata_tombstone(gid))
    for mid in sorted(group.members):
        records.append(log_records.member_metadata_tombstone(gid, mid))
    for regex in sorted(group.regexes):
        records.append(log_records.regex_tombstone(gid, regex))
    records.append(log_records.group_epoch_tombstone(gid))
    return records


def classic_group_of(
    group: ConsumerGroup, leaving: Iterable[str], image: TopicsImage, now_ms: int
) -> ClassicGroup | None:
    """ClassicGroup.fromConsumerGroup; None if the remaining members share no protocol."""
    gone = set(leaving)
    classic = ClassicGroup(
        group.group_id,
        state=STABLE,
        current_state_timestamp=now_ms,
        # The group epoch, as Kafka's ClassicGroup.fromConsumerGroup: the remaining members hold
        # this generation, so they get REBALANCE_IN_PROGRESS (not ILLEGAL_GENERATION) and may
        # still commit while they rejoin.
        generation_id=group.group_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
    )
    for mid in sorted(group.members):
        m = group.members[mid]
        if mid in gone or m.classic_member_metadata is None:
            continue
        protocols = tuple(
            JoinGroupRequestProtocol(name=p.name, metadata=p.metadata)
            for p in m.classic_member_metadata.supported_protocols
        )
        if not protocols:
            return None
        classic.add(
            ClassicGroupMember(
                member_id=mid,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.classic_member_metadata.session_timeout_ms,
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                supported_protocols=protocols,
                # The target assignment (what the member is converging to), as Kafka does; the
                # rebalance prepared right after hands out the leaving members' partitions.
                assignment=assignment_bytes(group.target.get(mid, {}), image, metadata_version(protocols[0].metadata)),
            )
        )
    if not classic.members or not classic.candidate_protocols():
        return None
    classic.protocol_name = classic.select_protocol()
    classic.subscribed_topics = classic.compute_subscribed_topics()
    return classic


def downgrade(
    classic_state: ClassicGroupsState,
    group: ConsumerGroup,
    leaving: Iterable[str],
    ctx: GroupContext,
    rebalance: bool = True,
) -> Result[None] | None:
    """Convert ``group`` (minus ``leaving``) to a classic group in PreparingRebalance, or, with
    ``rebalance=False`` (a static replacement that changes nothing, see routing), Stable at once.

    Returns None, changing nothing, when the remaining members cannot form a classic group.
    Otherwise the live classic group is installed at once (its soft state: the join barrier and
    the members' session timers), and its GroupMetadata record, replayed after the consumer
    tombstones, is recognised as its own write.
    """
    gone = list(leaving)
    now_ms = ctx.now_ms
    classic = classic_group_of(group, gone, ctx.image, now_ms)
    if classic is None:
        return None
    gid = group.group_id
    records = consumer_group_tombstones(group)
    timers: list[TimerOp] = []
    for mid in sorted(group.members):
        timers += cancel_member_timers(gid, mid)
        timers += cancel_classic_member_timers(gid, mid)
    timers.append(CancelTimer(assignment_key(gid)))
    fx = Effects(classic_state.timers)
    classic_state.groups[gid] = classic
    if not rebalance:
        # Every member keeps its target assignment as it is and nobody's partitions are left
        # over: a settled Stable generation, also after a reload.
        fx.write_group_metadata(classic)
    else:
        # Written without a leader. The record alone would reload as a settled Stable generation
        # that leaves the departed members' partitions assigned to nobody until some later
        # rebalance; no completed join phase writes a record without a leader, so a loaded group
        # in that shape is rebalanced on load (classic_on_loaded), and a failover cannot strand
        # partitions. Clients never see the leader field of the record.
        fx.write_group_metadata(classic, replace(classic.to_record_value(), leader=None))
    for member in classic.members.values():
        schedule_heartbeat(fx, classic, member, now_ms)
    if rebalance:
        # Every member must rejoin through the classic protocol (Kafka prepares a rebalance too).
        prepare_rebalance(fx, classic, now_ms, ctx.classic)
    return Result(None, records + fx.records, timers + fx.timers, fx.completions)
