"""ClassicGroup: the membership, generation and state machine of one classic group.

Everything here is what Kafka's ClassicGroup holds. Only part of it is durable: the
GroupMetadata record written when the group becomes Stable or Empty (see ``log_records``).
The rest (who is parked in the join barrier, who still owes a SyncGroup) is soft state that a
reload forgets, exactly as in Kafka, where waiting clients retry against the new coordinator.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolError,
    subscribed_topics,
)
from groupcoord.coordinator.groups.classic.group_state import ClassicGroupState, check_transition
from groupcoord.coordinator.groups.classic.log_records import group_metadata_tombstone
from groupcoord.coordinator.groups.classic.member import ClassicGroupMember
from groupcoord.coordinator.groups.group import CLASSIC, GroupSummary
from groupcoord.coordinator.messages.join_group import JoinGroupRequestProtocol, JoinGroupResponseMember
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest
from groupcoord.coordinator.offsets.handlers import CommitVerdict
from groupcoord.coordinator.offsets.retention import GroupRetentionView
from groupcoord.records import CoordinatorRecord
from groupcoord.records.definitions import ClassicMemberMetadata, GroupMetadataValue

EMPTY = ClassicGroupState.EMPTY
PREPARING_REBALANCE = ClassicGroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = ClassicGroupState.COMPLETING_REBALANCE
STABLE = ClassicGroupState.STABLE
DEAD = ClassicGroupState.DEAD


class ClassicGroup:
    """Implements ``groupcoord.coordinator.groups.group.Group``."""

    type = CLASSIC

    def __init__(
        self,
        group_id: str,
        state: ClassicGroupState = EMPTY,
        current_state_timestamp: int | None = None,
        generation_id: int = 0,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        leader_id: str | None = None,
    ) -> None:
        self.group_id = group_id
        self.state = state
        self.previous_state = DEAD
        self.current_state_timestamp = current_state_timestamp
        self.generation_id = generation_id
        self.protocol_type = protocol_type
        self.protocol_name = protocol_name
        self.leader_id = leader_id
        # Insertion-ordered: leader re-election and every sweep over members must not depend on
        # hash order, or two replays of the same log could pick different leaders.
        self.members: dict[str, ClassicGroupMember] = {}
        self.static_members: dict[str, str] = {}  # group instance id -> member id
        self.pending_join_members: dict[str, None] = {}  # ids handed out with MEMBER_ID_REQUIRED
        self.pending_sync_members: dict[str, None] = {}
        # Set when a member joins during the initial rebalance, which extends the initial delay.
        self.new_member_added = False
        self.subscribed_topics: frozenset[str] | None = None
        # GroupMetadata values this group emitted that replay has not applied yet; lets replay
        # tell our own write (keep the soft state) from a record to load (rebuild from it).
        self.unreplayed_writes: deque[GroupMetadataValue] = deque()
        # Loaded from a record that names members but no leader: a generation no join phase
        # completed (a downgrade's), so the group must rebalance once loaded (see ``from_record``).
        self.rebalance_on_load = False

    # --- queries ----------------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"ClassicGroup({self.group_id!r}, {self.state.value}, generation={self.generation_id}, members={list(self.members)})"

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def is_empty(self) -> bool:
        return self.state is EMPTY

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.is_awaiting_join)

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join() == len(self.members) and not self.pending_join_members

    def not_yet_rejoined_members(self) -> list[ClassicGroupMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        """The join barrier waits for the slowest member's rebalance timeout."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def can_rebalance(self) -> bool:
        return self.state in (STABLE, COMPLETING_REBALANCE, EMPTY)

    def static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    # --- membership -------------------------------------------------------------------------

    def add(self, member: ClassicGroupMember, join_token: Hashable | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"static member {member.group_instance_id!r} is already in group {self.group_id!r}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise ValueError("the group's and the member's protocol types differ")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        member.awaiting_join = join_token
        self.pending_join_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        """Drop a member (or a pending one); the first remaining member becomes leader if needed."""
        removed = self.members.pop(member_id, None)
        if removed is not None and removed.group_instance_id is not None:
            self.static_members.pop(removed.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.pop(member_id, None)
        self.pending_sync_members.pop(member_id, None)
        return removed

    def add_pending_member(self, member_id: str) -> None:
        if member_id in self.members:
            raise ValueError(f"{member_id} is already a member of {self.group_id!r}")
        self.pending_join_members[member_id] = None

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else promote a member that did; False if nobody rejoined."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def replace_static_member(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> tuple[ClassicGroupMember, ClassicGroupMember]:
        """A restarted static instance takes over its old member's place, assignment included.

        Returns (new member, old member); the caller fences whatever the old one has parked.
        """
        old = self.members.pop(old_member_id)
        new = ClassicGroupMember(
            member_id=new_member_id,
            group_instance_id=old.group_instance_id,
            client_id=old.client_id,
            client_host=old.client_host,
            rebalance_timeout_ms=old.rebalance_timeout_ms,
            session_timeout_ms=old.session_timeout_ms,
            protocol_type=old.protocol_type,
            supported_protocols=old.supported_protocols,
            assignment=old.assignment,
        )
        self.members[new_member_id] = new
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        # Kafka leaves the old id among the pending syncs, so the sync deadline later "removes"
        # it and forces a needless rebalance; the new id owes nothing the old one did not.
        self.pending_sync_members.pop(old_member_id, None)
        return new, old

    def update_member(
        self,
        member: ClassicGroupMember,
        protocols: tuple[JoinGroupRequestProtocol, ...],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        join_token: Hashable | None,
    ) -> Hashable | None:
        """Refresh a rejoining member; returns a superseded parked join token, if any."""
        member.supported_protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        superseded = member.awaiting_join if member.awaiting_join != join_token else None
        member.awaiting_join = join_token
        return superseded

    def validate_member(self, member_id: str, group_instance_id: str | None) -> ErrorCode:
        """A static member must present the member id currently mapped to its instance id."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    # --- protocol selection -----------------------------------------------------------------

    def candidate_protocols(self) -> frozenset[str]:
        """The protocols every member supports."""
        names: frozenset[str] | None = None
        for member in self.members.values():
            names = member.protocol_names if names is None else names & member.protocol_names
        return names or frozenset()

    def supports_protocols(self, protocol_type: str, protocol_names: Iterable[str]) -> bool:
        """Could a member with these protocols join? (INCONSISTENT_GROUP_PROTOCOL otherwise.)"""
        names = frozenset(protocol_names)
        if self.state is EMPTY:
            return bool(protocol_type) and bool(names)
        if self.protocol_type != protocol_type:
            return False
        if not self.members:
            # A rebalancing group whose members all left (one still pending) constrains nothing
            # but the protocol type, as Kafka's per-protocol counts all equal the size, zero.
            return bool(names)
        return bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """Each member votes for its most preferred common protocol; the plurality wins.

        Kafka breaks a tie by hash order; here the protocol first voted for (in member order) wins,
        so the outcome is a function of the log alone.
        """
        if not self.members:
            raise ValueError(f"cannot select a protocol for empty group {self.group_id!r}")
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            name = member.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        return max(votes, key=lambda name: votes[name])

    # --- state machine ----------------------------------------------------------------------

    def transition_to(self, target: ClassicGroupState, now_ms: int) -> None:
        check_transition(self.group_id, self.state, target)
        self.previous_state = self.state
        self.state = target
        self.current_state_timestamp = now_ms

    def init_next_generation(self, now_ms: int) -> None:
        """Close the join barrier: bump the generation and pick the protocol (or go Empty)."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_members_for_join(self) -> list[JoinGroupResponseMember]:
        """What the leader's JoinGroup response carries: every member's metadata for the chosen protocol."""
        if self.state in (DEAD, PREPARING_REBALANCE):
            raise ValueError(f"group {self.group_id!r} has no settled membership in state {self.state.value}")
        return [
            JoinGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata(self.protocol_name)
            )
            for m in self.members.values()
        ]

    def group_assignment(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}

    # --- subscriptions (offset retention) ---------------------------------------------------

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Union of the members' subscribed topics; None when unknown (not the consumer protocol,
        no protocol chosen yet, or metadata that does not parse)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                topics.update(subscribed_topics(member.metadata(self.protocol_name)))
        except (ConsumerProtocolError, KeyError):
            return None
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """When the topics are unknown, a consumer-protocol group is assumed subscribed (keep offsets)."""
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol()
        return topic in self.subscribed_topics

    def offset_expiration_base_ms(self, commit_timestamp_ms: int) -> int | None:
        """The instant an offset's retention is measured from, or None while it must not expire
        (Kafka's ClassicGroup.offsetExpirationCondition)."""
        if self.protocol_type is None:
            return commit_timestamp_ms  # a simple group: retention runs from each commit
        if self.state is EMPTY:
            if self.current_state_timestamp is not None:
                return self.current_state_timestamp
            return commit_timestamp_ms
        if self.uses_consumer_protocol() and self.subscribed_topics is not None and self.state is STABLE:
            return commit_timestamp_ms
        return None

    # --- validation for offsets and admin ---------------------------------------------------

    def validate_offset_commit(self, request: OffsetCommitRequest, api_version: int) -> CommitVerdict:
        error = self.validate_commit_generation(
            request.member_id, request.group_instance_id, request.generation_id_or_member_epoch
        )
        return CommitVerdict(error)

    def validate_commit_generation(
        self, member_id: str, group_instance_id: str | None, generation_id: int, is_transactional: bool = False
    ) -> ErrorCode:
        """Kafka's ClassicGroup.validateOffsetCommit: a classic commit names a generation, never partitions."""
        if self.state is DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and self.state is EMPTY:
            return ErrorCode.NONE  # admin client or a consumer that does not use group management
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = self.validate_member(member_id, group_instance_id)
            if error is not ErrorCode.NONE:
                return error
            if generation_id != self.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif not is_transactional and self.state is not EMPTY:
            # v0 commits carry neither member nor generation: only an empty group accepts them.
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not is_transactional and self.state is COMPLETING_REBALANCE:
            # The member holds the new generation from its JoinGroup but not yet its assignment.
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def validate_offset_fetch(self, member_id: str | None = None, member_epoch: int = -1) -> ErrorCode:
        return ErrorCode.GROUP_ID_NOT_FOUND if self.state is DEAD else ErrorCode.NONE

    def validate_offset_delete(self) -> ErrorCode:
        if self.state is DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if self.state is not EMPTY and not self.uses_consumer_protocol():
            return ErrorCode.NON_EMPTY_GROUP
        return ErrorCode.NONE

    def validate_delete(self) -> ErrorCode:
        if self.state is DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if self.state is not EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        return ErrorCode.NONE

    def tombstones(self) -> list[CoordinatorRecord]:
        return [group_metadata_tombstone(self.group_id)]

    def subscribed_topic_names(self) -> frozenset[str]:
        return self.subscribed_topics or frozenset()

    def listed(self) -> GroupSummary:
        return GroupSummary(self.group_id, self.protocol_type or "", self.state.value, CLASSIC)

    def retention_view(self) -> GroupRetentionView:
        empty = self.is_empty()
        return GroupRetentionView(
            subscribed_topics=self.subscribed_topic_names(),
            subscribed_to_all=self.subscribed_topics is None and self.uses_consumer_protocol(),
            is_empty=empty,
            empty_since_ms=self.current_state_timestamp if empty and self.protocol_type else None,
            managed=True,
            expires=self.offset_expiration_base_ms(0) is not None,
        )

    # --- the GroupMetadata record -----------------------------------------------------------

    def to_record_value(self) -> GroupMetadataValue:
        """The group as its GroupMetadata record states it: members with the chosen protocol's
        subscription and their current assignment."""
        members = [
            ClassicMemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms,
                subscription=m.metadata(self.protocol_name),
                assignment=m.assignment,
            )
            for m in self.members.values()
        ]
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation_id,
            protocol=self.protocol_name,
            leader=self.leader_id,
            current_state_timestamp=-1 if self.current_state_timestamp is None else self.current_state_timestamp,
            members=members,
        )

    def to_empty_record_value(self) -> GroupMetadataValue:
        """What Kafka writes when a JoinGroup creates a group and nothing else is written: the
        group exists (generation 0, no members) so a reload does not lose it."""
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "",
            generation=0,
            protocol=None,
            leader=None,
            current_state_timestamp=-1 if self.current_state_timestamp is None else self.current_state_timestamp,
            members=[],
        )

    @classmethod
    def from_record(cls, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        """Load: Stable with the recorded members, or Empty, as Kafka's replay of GroupMetadata."""
        group = cls(
            group_id,
            state=STABLE if value.members else EMPTY,
            current_state_timestamp=None if value.current_state_timestamp == -1 else value.current_state_timestamp,
            generation_id=value.generation,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
            leader_id=value.leader,
        )
        for m in value.members:
            group.add(
                ClassicGroupMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    # Records from before rebalance timeouts existed carry -1.
                    rebalance_timeout_ms=m.session_timeout_ms
                    if m.rebalance_timeout_ms == -1
                    else m.rebalance_timeout_ms,
                    session_timeout_ms=m.session_timeout_ms,
                    protocol_type=value.protocol_type,
                    # Only the chosen protocol is recorded; a member rejoining with its full list
                    # therefore "changed metadata" and triggers a rebalance, as in Kafka.
                    supported_protocols=(JoinGroupRequestProtocol(name=value.protocol or "", metadata=m.subscription),),
                    assignment=m.assignment,
                )
            )
        group.subscribed_topics = group.compute_subscribed_topics()
        # Every completed join phase elects a leader, so a non-empty record without one was written
        # by a downgrade whose rebalance had not completed yet.
        group.rebalance_on_load = bool(value.members) and value.leader is None
        return group
