"""ConsumerGroup: the in-memory hard state of one consumer group plus indexes derived from it.

Only ``ConsumerGroupsState.replay`` mutates a group; handlers read it and describe changes as
records. The indexes (static members, partition owners, subscription counts) are rebuilt by
the same replay, so they never disagree with the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.assignors.target_index import TargetIndex
from groupcoord.coordinator.groups.consumer import log_records
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember, MemberState, TopicPartitionSet
from groupcoord.coordinator.groups.group import CONSUMER, GroupSummary
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest, OffsetCommitRequestTopic
from groupcoord.coordinator.messages.offset_commit_columns import request_columns
from groupcoord.coordinator.messages.schema import known_topic_id
from groupcoord.coordinator.offsets.handlers import CommitVerdict
from groupcoord.coordinator.offsets.retention import GroupRetentionView
from groupcoord.records import CoordinatorRecord

# Groups this big or bigger keep a TargetIndex and assign incrementally (uniform, homogeneous).
INCREMENTAL_MIN_MEMBERS = 64

# OffsetCommit v9 introduced member epochs; members speaking the consumer protocol must use it.
MEMBER_EPOCH_COMMIT_VERSION = 9


class ConsumerGroupState(Enum):
    """Derived group state (ConsumerGroup.maybeUpdateGroupState); values are Kafka's display strings."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ResolvedRegularExpression:
    topics: frozenset[str]
    version: int
    timestamp: int


def _same_indexed(old: ConsumerGroupMember, new: ConsumerGroupMember) -> bool:
    """Whether ``ConsumerGroup``'s indexes (static members, partition owners, subscription and
    assignor counts) are the same for ``new`` as for ``old``: the assignment maps the very same
    objects (a replay keeps the old ones when they are equal), the rest equal."""
    return (
        old.assigned is new.assigned
        and old.pending_revocation is new.pending_revocation
        and old.subscribed_topic_names is new.subscribed_topic_names
        and old.subscribed_topic_regex == new.subscribed_topic_regex
        and old.server_assignor == new.server_assignor
        and old.instance_id == new.instance_id
    )


def _bump(counts: dict[str, int], key: str | None, delta: int) -> None:
    if key is None:
        return
    n = counts.get(key, 0) + delta
    if n > 0:
        counts[key] = n
    else:
        counts.pop(key, None)


class ConsumerGroup:
    """Implements ``groupcoord.coordinator.groups.group.Group``."""

    type = CONSUMER

    __slots__ = (
        "group_id",
        "group_epoch",
        "metadata_hash",
        "assignment_epoch",
        "assignment_timestamp",
        "members",
        "target",
        "regexes",
        "static_members",
        "partition_owner",
        "topic_name_counts",
        "regex_counts",
        "assignor_counts",
        "_target_index",
        "_subscribed_names",
        "_names",
    )

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.assignment_epoch = 0
        self.assignment_timestamp = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target: dict[str, TopicPartitionSet] = {}
        self.regexes: dict[str, ResolvedRegularExpression] = {}
        self.static_members: dict[str, str] = {}
        # (topic id, partition) -> member id currently holding it (assigned or pending revocation):
        # Kafka's currentPartitionEpoch, the map that keeps two members from owning one partition.
        self.partition_owner: dict[tuple[str, int], str] = {}
        self.topic_name_counts: dict[str, int] = {}
        self.regex_counts: dict[str, int] = {}
        self.assignor_counts: dict[str, int] = {}
        # Counts over ``target`` for the incremental assignor path (TargetIndex), built on first
        # use by a big enough group and kept by replay from then on; None costs small groups nothing.
        self._target_index: TargetIndex | None = None
        self._subscribed_names: frozenset[str] | None = None
        # Subscribed-name tuples shared by members: tuple -> [the one shared object, users]. Members
        # with equal subscriptions hold one object, so the assignment step can tell them equal by
        # identity (O(members)) instead of comparing 1,000 names per member.
        self._names: dict[tuple[str, ...], list[Any]] = {}

    # --- mutation, replay only ---------------------------------------------------------------

    def shared_names(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """The object members with these subscribed names share, else ``names`` itself: a replay
        that builds its member with it is kept as built by ``put_member`` (not copied again)."""
        shared = self._names.get(names)
        return names if shared is None else shared[0]

    def put_member(self, member: ConsumerGroupMember, share_names: bool = True) -> None:
        """Hold ``member``; with ``share_names``, with this group's shared tuple of its subscribed
        names (a copy if it holds an equal other one), else as it is (a member another state holds:
        ``ConsumerGroupsState.replay_noted``)."""
        shared = self._names.get(member.subscribed_topic_names) if share_names else None
        if shared is not None and shared[0] is not member.subscribed_topic_names:
            member = member.evolve(subscribed_topic_names=shared[0])
        old = self.members.get(member.member_id)
        if old is not None:
            if _same_indexed(old, member):
                # An epoch move (every member's, after each target assignment): nothing the
                # indexes hold changed, so they are not walked out and in again.
                self.members[member.member_id] = member
                return
            self._unindex(old)
        self.members[member.member_id] = member
        self._index(member)

    def drop_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._unindex(old)

    def put_target(self, member_id: str, partitions: TopicPartitionSet) -> None:
        if self._target_index is not None:
            self._target_index.replace(member_id, self.target.get(member_id), partitions)
        self.target[member_id] = partitions

    def drop_target(self, member_id: str) -> None:
        old = self.target.pop(member_id, None)
        if old is not None and self._target_index is not None:
            self._target_index.replace(member_id, old, None)

    def put_regex(self, regex: str, resolved: ResolvedRegularExpression | None) -> None:
        if resolved is None:
            self.regexes.pop(regex, None)
        else:
            self.regexes[regex] = resolved
        self._subscribed_names = None

    def _index(self, m: ConsumerGroupMember) -> None:
        if m.instance_id is not None:
            self.static_members[m.instance_id] = m.member_id
        for t, ps in m.assigned.items():
            for p in ps:
                self.partition_owner[(t, p)] = m.member_id
        for t, ps in m.pending_revocation.items():
            for p in ps:
                self.partition_owner[(t, p)] = m.member_id
        names = self._names.setdefault(m.subscribed_topic_names, [m.subscribed_topic_names, 0])
        names[1] += 1
        for name in m.subscribed_topic_names:
            _bump(self.topic_name_counts, name, 1)
        _bump(self.regex_counts, m.subscribed_topic_regex, 1)
        _bump(self.assignor_counts, m.server_assignor, 1)
        self._subscribed_names = None

    def _unindex(self, m: ConsumerGroupMember) -> None:
        if m.instance_id is not None and self.static_members.get(m.instance_id) == m.member_id:
            del self.static_members[m.instance_id]
        for epochs in (m.assigned, m.pending_revocation):
            for t, ps in epochs.items():
                for p in ps:
                    if self.partition_owner.get((t, p)) == m.member_id:
                        del self.partition_owner[(t, p)]
        names = self._names[m.subscribed_topic_names]
        names[1] -= 1
        if names[1] == 0:
            del self._names[m.subscribed_topic_names]
        for name in m.subscribed_topic_names:
            _bump(self.topic_name_counts, name, -1)
        _bump(self.regex_counts, m.subscribed_topic_regex, -1)
        _bump(self.assignor_counts, m.server_assignor, -1)
        self._subscribed_names = None

    # --- queries -------------------------------------------------------------------------------

    def target_index(self) -> TargetIndex | None:
        """The TargetIndex of ``target`` for a group of at least INCREMENTAL_MIN_MEMBERS members
        (built here the first time, from ``target``), else None: below that the full assignor is
        cheap and the index's memory is not worth keeping."""
        if len(self.members) < INCREMENTAL_MIN_MEMBERS:
            self._target_index = None
            return None
        if self._target_index is None:
            index = TargetIndex()
            for mid, partitions in self.target.items():
                index.replace(mid, None, partitions)
            self._target_index = index
        return self._target_index

    def subscription_counts_with(
        self, gone: Iterable[ConsumerGroupMember | None], added: ConsumerGroupMember | None = None
    ) -> tuple[dict[str, int], dict[str, int]]:
        """(topic name counts, regex counts) as they would be without the ``gone`` members and
        with ``added``: the group's counts adjusted for those members alone, so a join or a
        leave costs what the member's own subscription does, not a walk over every member
        (which made a mass join or a rolling restart of n members cost n^2)."""
        names, regexes = dict(self.topic_name_counts), dict(self.regex_counts)
        for m in gone:
            if m is not None:
                for name in m.subscribed_topic_names:
                    _bump(names, name, -1)
                _bump(regexes, m.subscribed_topic_regex, -1)
        if added is not None:
            for name in added.subscribed_topic_names:
                _bump(names, name, 1)
            _bump(regexes, added.subscribed_topic_regex, 1)
        return names, regexes

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def owner_of(self, topic_id: str, partition: int) -> str | None:
        return self.partition_owner.get((topic_id, partition))

    def subscribed_topic_names(self) -> frozenset[str]:
        """Every topic name the group subscribes to, by name or through a resolved regex."""
        if self._subscribed_names is None:
            names = set(self.topic_name_counts)
            for regex in self.regex_counts:
                resolved = self.regexes.get(regex)
                if resolved is not None:
                    names |= resolved.topics
            self._subscribed_names = frozenset(names)
        return self._subscribed_names

    def member_topic_names(self, member: ConsumerGroupMember) -> frozenset[str]:
        names = frozenset(member.subscribed_topic_names)
        if member.subscribed_topic_regex is not None:
            resolved = self.regexes.get(member.subscribed_topic_regex)
            if resolved is not None:
                names = names | resolved.topics
        return names

    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if not m.is_reconciled_to(self.assignment_epoch):
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    # --- the Group face (offsets, retention, admin) ---------------------------------------------

    def is_empty(self) -> bool:
        return not self.members

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    # Kafka 4.4's ConsumerGroup.validateOffsetCommit / validateOffsetFetch, on the group itself
    # (KIP-848, KIP-1251): a commit at the member's current epoch is accepted as is; a newer epoch
    # is STALE_MEMBER_EPOCH; an older epoch (the member's response was lost, or it is still
    # revoking) is accepted only if every committed partition was assigned to the member at or
    # before that epoch, so a zombie that lost a partition cannot overwrite the new owner's
    # offsets. A refusal refuses the whole request: nothing of it is written. Classic members
    # inside a consumer group are checked like classic members: the generation must be the
    # member epoch.

    def offset_commit_error(
        self,
        member_id: str,
        member_epoch: int,
        partitions: Iterable[tuple[str, int]] = (),
        api_version: int = MEMBER_EPOCH_COMMIT_VERSION,
    ) -> ErrorCode:
        """Check a commit of ``partitions`` (topic id, partition) by ``member_id`` at ``member_epoch``."""
        if member_epoch < 0 and not self.members:
            # Admin clients and consumers without group management commit to an empty group.
            return ErrorCode.NONE
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member.uses_classic_protocol:
            # A classic member's generation is its member epoch; classic clients do not know error 113.
            return ErrorCode.NONE if member_epoch == member.member_epoch else ErrorCode.ILLEGAL_GENERATION
        if api_version < MEMBER_EPOCH_COMMIT_VERSION:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch > member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        if member_epoch == member.member_epoch:
            return ErrorCode.NONE
        for topic_id, partition in partitions:
            assigned_at = member.assignment_epoch_of(topic_id, partition)
            if assigned_at is None or assigned_at > member_epoch:
                return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def validate_offset_commit(self, request: OffsetCommitRequest, api_version: int) -> CommitVerdict:
        """Partitions are checked by topic id: each request topic carries its name and id,
        resolved once at the edge. A refusal is always the whole request's."""
        partitions: list[tuple[str, int]] = []
        for t in request.topics:
            topic_id = known_topic_id(t.topic_id) or ""
            partitions += [(topic_id, index) for index in _indexes(t)]
        return CommitVerdict(
            self.offset_commit_error(request.member_id, request.generation_id_or_member_epoch, partitions, api_version)
        )

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode:
        """OffsetFetch v9+: a member fetching with its id must be current.

        Only a fetch with neither member id nor epoch (admin clients, older consumers) skips the
        checks; a classic member inside a consumer group is checked on its generation
        (ILLEGAL_GENERATION), a consumer-protocol one on its epoch.
        """
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = None if member_id is None else self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def validate_offset_delete(self) -> ErrorCode:
        # Kafka's ConsumerGroup.validateOffsetDelete accepts any state: subscribed topics are
        # refused per partition (GROUP_SUBSCRIBED_TO_TOPIC) by the offsets code.
        return ErrorCode.NONE

    def validate_delete(self) -> ErrorCode:
        return ErrorCode.NON_EMPTY_GROUP if self.members else ErrorCode.NONE

    def tombstones(self) -> list[CoordinatorRecord]:
        gid = self.group_id
        records = [log_records.regex_tombstone(gid, r) for r in sorted(self.regexes)]
        records += [log_records.target_member_tombstone(gid, m) for m in sorted(self.target)]
        records.append(log_records.target_metadata_tombstone(gid))
        records.append(log_records.group_epoch_tombstone(gid))
        return records

    def listed(self) -> GroupSummary:
        return GroupSummary(self.group_id, CONSUMER, self.state().value, CONSUMER)

    def retention_view(self) -> GroupRetentionView:
        return GroupRetentionView(
            subscribed_topics=self.subscribed_topic_names(), is_empty=self.is_empty(), managed=True
        )

    def preferred_assignor(self, configured: Iterable[str], default: str) -> str:
        return choose_assignor(self.assignor_counts, configured, default)

    def snapshot(self) -> dict[str, Any]:
        return {
            "group_epoch": self.group_epoch,
            "metadata_hash": self.metadata_hash,
            "assignment_epoch": self.assignment_epoch,
            "assignment_timestamp": self.assignment_timestamp,
            "members": {mid: member_snapshot(self.members[mid]) for mid in sorted(self.members)},
            "target": {mid: partitions_snapshot(self.target[mid]) for mid in sorted(self.target)},
            "regexes": {r: (tuple(sorted(v.topics)), v.version, v.timestamp) for r, v in sorted(self.regexes.items())},
        }


def choose_assignor(counts: Mapping[str, int], configured: Iterable[str], default: str) -> str:
    """The most common member preference; ties go to the assignor configured first."""
    order = {name: i for i, name in enumerate(configured)}
    best: str | None = None
    for name, n in counts.items():
        if name not in order:
            continue
        if best is None or n > counts[best] or (n == counts[best] and order[name] < order[best]):
            best = name
    return default if best is None else best


def partitions_snapshot(ps: TopicPartitionSet | Mapping[str, Any]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((t, tuple(sorted(ps[t]))) for t in sorted(ps) if ps[t])


def _epochs_snapshot(epochs: Mapping[str, Mapping[int, int]]) -> tuple[tuple[str, tuple[tuple[int, int], ...]], ...]:
    return tuple((t, tuple(sorted(epochs[t].items()))) for t in sorted(epochs) if epochs[t])


def member_snapshot(m: ConsumerGroupMember) -> tuple[Any, ...]:
    return (
        m.instance_id,
        m.rack_id,
        m.client_id,
        m.client_host,
        m.rebalance_timeout_ms,
        m.subscribed_topic_names,
        m.subscribed_topic_regex,
        m.server_assignor,
        m.member_epoch,
        m.previous_member_epoch,
        int(m.state),
        _epochs_snapshot(m.assigned),
        _epochs_snapshot(m.pending_revocation),
        m.has_metadata,
        m.has_assignment,
        _classic_snapshot(m),
    )


def _classic_snapshot(m: ConsumerGroupMember) -> tuple[Any, ...] | None:
    c = m.classic_member_metadata
    if c is None:
        return None
    return (c.session_timeout_ms, tuple((p.name, p.metadata) for p in c.supported_protocols))


def topic_ids_for(names: Iterable[str], image: TopicsImage) -> frozenset[str]:
    ids = []
    for name in names:
        tid = image.topic_id(name)
        if tid is not None:
            ids.append(tid)
    return frozenset(ids)


__all__ = [
    "ConsumerGroup",
    "ConsumerGroupState",
    "MemberState",
    "ResolvedRegularExpression",
    "choose_assignor",
    "member_snapshot",
    "partitions_snapshot",
    "topic_ids_for",
]


def _indexes(topic: OffsetCommitRequestTopic) -> list[int]:
    """A commit topic's partition indexes, from its columns where it holds them (not made into
    partition objects only to be read here)."""
    columns = request_columns(topic)
    return columns.indexes if columns is not None else [p.partition_index for p in topic.partitions]
