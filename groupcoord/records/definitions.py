"""Every record type the coordinator writes to its log.

Type ids 1-16 mirror the apiKeys of Apache Kafka's ``__consumer_offsets`` records (seed 004);
ids from 100 up are this runtime's own records. Each type has a key dataclass (never evolves:
a key change would break compaction) and a value dataclass whose Avro schema is versioned.

Evolution rule (also in records/README.md): a value schema version, once released, is frozen.
A new version may only *add* fields, each with a default; the dataclass always matches the
newest version. Readers resolve any older writer version against the newest schema, so records
written by any earlier release stay readable. Removing or retyping a field needs a new record type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from groupcoord.records.avro import FieldSpec, array, optional, record


class RecordType(IntEnum):
    OFFSET_COMMIT = 1
    GROUP_METADATA = 2
    CONSUMER_GROUP_METADATA = 3
    CONSUMER_GROUP_MEMBER_METADATA = 5
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
    # Share groups (KIP-932), Kafka's ids.
    SHARE_GROUP_MEMBER_METADATA = 10
    SHARE_GROUP_METADATA = 11
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
    SHARE_GROUP_STATE_PARTITION_METADATA = 15
    CONSUMER_GROUP_REGULAR_EXPRESSION = 16
    # A group's dynamic configs (KIP-848 group configs). Kafka keeps them in its cluster
    # metadata, not in __consumer_offsets; here they live with the group, outside Kafka's ids.
    GROUP_CONFIG = 50
    # Transactional offsets (TxnOffsetCommit): staged until the cluster's marker decides them
    # (groupcoord/coordinator/offsets/transactions.py). Kafka keeps them as OffsetCommit records written
    # with the producer's id; here the log has one writer, so they are records of their own.
    PENDING_TXN_OFFSETS = 60
    TXN_PRODUCER = 61
    # Share-partition state (KIP-932). Kafka's share coordinator writes ShareSnapshot (0) and
    # ShareUpdate (1) to its own __share_group_state topic; here they live in the group's shard.
    SHARE_SNAPSHOT = 62
    SHARE_UPDATE = 63
    # Runtime records.
    SHARD_EPOCH = 100
    BATCH_ABORT = 101
    LOG_SKIP = 102


# --- OffsetCommit (1) -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int = -1
    topic_id: str | None = None
    # The transactional producer whose committed transaction wrote this value; -1 for a plain commit.
    producer_id: int = -1


# --- GroupMetadata (2), classic groups -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[ClassicMemberMetadata] = field(default_factory=list)


# --- Consumer groups (KIP-848) ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ClassicMemberInConsumerGroup:
    session_timeout_ms: int
    supported_protocols: list[ClassicProtocol] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    instance_id: str | None = None
    rack_id: str | None = None
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    classic_member_metadata: ClassicMemberInConsumerGroup | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int = 0


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic_id: str
    partitions: list[int]


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: list[TopicPartitions] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TopicPartitionsWithEpochs:
    topic_id: str
    partitions: list[int]
    # Epoch at which each partition (same index) was assigned; fences zombie commits.
    assignment_epochs: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: list[TopicPartitionsWithEpochs] = field(default_factory=list)
    partitions_pending_revocation: list[TopicPartitionsWithEpochs] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    group: str
    regex: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    topics: list[str]
    version: int
    timestamp: int


# --- Share groups (KIP-932) --------------------------------------------------------------
# The keys and the group-level values have the consumer records' shapes (Kafka's share records
# are the same fields under other ids); the member values are the share group's own.

ShareGroupMetadataKey = ConsumerGroupMetadataKey
ShareGroupMetadataValue = ConsumerGroupMetadataValue
ShareGroupMemberKey = ConsumerGroupMemberKey
ShareGroupTargetAssignmentMetadataKey = ConsumerGroupTargetAssignmentMetadataKey
# assignment_timestamp stays 0: share groups have no assignment interval.
ShareGroupTargetAssignmentMetadataValue = ConsumerGroupTargetAssignmentMetadataValue
ShareGroupTargetAssignmentMemberValue = ConsumerGroupTargetAssignmentMemberValue


@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataValue:
    client_id: str
    client_host: str
    rack_id: str | None = None
    subscribed_topic_names: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    # A share-partition may be assigned to several members at once: no revocation step, no
    # per-partition epochs.
    assigned_partitions: list[TopicPartitions] = field(default_factory=list)


ShareGroupStatePartitionMetadataKey = ConsumerGroupMetadataKey


@dataclass(frozen=True, slots=True)
class ShareTopicPartitions:
    topic_id: str | None
    topic_name: str
    partitions: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ShareTopicInfo:
    topic_id: str | None
    topic_name: str


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataValue:
    """Which of the group's share-partitions have share-partition state (Kafka's record 15).
    Kafka's coordinator initializes state through its share coordinator in two steps
    (initializing, then initialized) and deletes it likewise (deleting); here the state records
    (62/63) and this record are written in one atomic batch, so ``initializing_topics`` and
    ``deleting_topics`` stay empty (they are kept for Kafka's shape)."""

    initializing_topics: list[ShareTopicPartitions] = field(default_factory=list)
    initialized_topics: list[ShareTopicPartitions] = field(default_factory=list)
    deleting_topics: list[ShareTopicInfo] = field(default_factory=list)


# --- GroupConfig (50) -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupConfigKey:
    group: str


@dataclass(frozen=True, slots=True)
class GroupConfigEntry:
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class GroupConfigValue:
    """Every dynamic config set on the group, by name; a tombstone when none is left."""

    configs: list[GroupConfigEntry] = field(default_factory=list)


# --- Transactional offsets (60, 61) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PendingTxnOffsetsKey:
    group: str
    producer_id: int
    # Where the offsets' own record of the client's transaction sits in the transaction topic's
    # partition of this shard: the first marker of ``producer_id`` after it decides them.
    txn_offset: int


@dataclass(frozen=True, slots=True)
class PendingTxnOffset:
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    topic_id: str | None = None


@dataclass(frozen=True, slots=True)
class PendingTxnOffsetsValue:
    """One TxnOffsetCommit, staged: invisible to OffsetFetch until its transaction commits."""

    transactional_id: str
    producer_epoch: int
    offsets: list[PendingTxnOffset] = field(default_factory=list)
    commit_timestamp: int = 0
    # Indexes into ``offsets`` of the partitions a later plain commit has overtaken (version 2).
    # Written here, on the record compaction keeps while the offsets stay staged: the plain
    # commit's own record may be compacted away behind a later one of the same partition.
    superseded: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TxnProducerKey:
    producer_id: int


@dataclass(frozen=True, slots=True)
class TxnProducerValue:
    """The sequence the shard's next write for this producer to the transaction topic carries
    (the cluster checks it per producer id, epoch and partition)."""

    producer_epoch: int
    next_sequence: int
    timestamp: int = 0


# --- Share-partition state (62, 63) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareStateBatch:
    """Offsets ``first_offset..last_offset`` (inclusive) share one durable state: 0 AVAILABLE (not
    done yet: never delivered, released, or delivered and unacknowledged), 2 ACKNOWLEDGED, 4 ARCHIVED
    (Kafka's ids; an acquisition is written as AVAILABLE with its new delivery count)."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareSnapshotKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    """The whole durable state of one share-partition: its start offset (SPSO) and every offset at
    or above it that has a state. Updates written after it carry its ``snapshot_epoch``."""

    snapshot_epoch: int
    state_epoch: int
    start_offset: int
    state_batches: list[ShareStateBatch] = field(default_factory=list)
    topic_id: str | None = None


@dataclass(frozen=True, slots=True)
class ShareUpdateKey:
    """``slot`` is the update's index since its snapshot (0..N-1): the slots are reused by the next
    snapshot's updates, so compaction keeps at most N + 1 records per share-partition."""

    group: str
    topic: str
    partition: int
    slot: int


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    """A change on top of the snapshot ``snapshot_epoch``: the new start offset and the offsets whose
    durable state changed."""

    snapshot_epoch: int
    start_offset: int
    state_batches: list[ShareStateBatch] = field(default_factory=list)


# --- Runtime records ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShardEpochKey:
    epoch: int


@dataclass(frozen=True, slots=True)
class ShardEpochValue:
    """Written by every new owner of a shard before it serves; later records carry the epoch."""

    epoch: int
    owner: str
    timestamp: int


@dataclass(frozen=True, slots=True)
class BatchAbortKey:
    first_offset: int


@dataclass(frozen=True, slots=True)
class BatchAbortValue:
    """Written by a loader that found an atomic batch cut short at the end of the log."""

    first_offset: int
    last_offset: int
    epoch: int


# --- LogSkip (102), runtime -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogSkipKey:
    offset: int


@dataclass(frozen=True, slots=True)
class LogSkipValue:
    """An operator's decision (``groupcoord log skip``) to load the shard without the unreadable
    record at ``offset`` of the same partition: who decided, when (ms since the epoch) and why."""

    offset: int
    operator: str
    timestamp: int
    reason: str


# --- Schemas --------------------------------------------------------------------------------

# PendingTxnOffsetsValue version 1; version 2 adds ``superseded``.
_PENDING_TXN_OFFSETS_V1: list[FieldSpec] = [
    ("transactional_id", "string"),
    ("producer_epoch", "int"),
    (
        "offsets",
        array(
            record(
                "PendingTxnOffset",
                [
                    ("topic", "string"),
                    ("partition", "int"),
                    ("offset", "long"),
                    ("leader_epoch", "int", -1),
                    ("metadata", "string", ""),
                    ("topic_id", optional("string"), None),
                ],
            )
        ),
        [],
    ),
    ("commit_timestamp", "long", 0),
]

_TOPIC_PARTITIONS = record("TopicPartitions", [("topic_id", "string"), ("partitions", array("int"))])
_TOPIC_PARTITIONS_EPOCHS = record(
    "TopicPartitionsWithEpochs",
    [
        ("topic_id", "string"),
        ("partitions", array("int")),
        ("assignment_epochs", array("int"), []),
    ],
)
_SHARE_STATE_BATCH = record(
    "ShareStateBatch",
    [
        ("first_offset", "long"),
        ("last_offset", "long"),
        ("delivery_state", "int"),
        ("delivery_count", "int"),
    ],
)


_SHARE_TOPIC_PARTITIONS = record(
    "ShareTopicPartitions",
    [("topic_id", optional("string"), None), ("topic_name", "string"), ("partitions", array("int"), [])],
)


@dataclass(frozen=True)
class RecordDef:
    type: RecordType
    key_cls: Any  # a dataclass type
    key_schema: dict[str, Any]
    value_cls: Any  # a dataclass type
    # version -> schema; frozen once released, newest last.
    value_schemas: dict[int, dict[str, Any]]

    @property
    def latest_version(self) -> int:
        return max(self.value_schemas)


DEFINITIONS: tuple[RecordDef, ...] = (
    RecordDef(
        RecordType.OFFSET_COMMIT,
        OffsetCommitKey,
        record(
            "OffsetCommitKey",
            [("group", "string"), ("topic", "string"), ("partition", "int")],
        ),
        OffsetCommitValue,
        {
            1: record(
                "OffsetCommitValue",
                [
                    ("offset", "long"),
                    ("leader_epoch", "int", -1),
                    ("metadata", "string", ""),
                    ("commit_timestamp", "long", 0),
                    ("expire_timestamp", "long", -1),
                    ("topic_id", optional("string"), None),
                ],
            ),
            2: record(
                "OffsetCommitValue",
                [
                    ("offset", "long"),
                    ("leader_epoch", "int", -1),
                    ("metadata", "string", ""),
                    ("commit_timestamp", "long", 0),
                    ("expire_timestamp", "long", -1),
                    ("topic_id", optional("string"), None),
                    ("producer_id", "long", -1),
                ],
            ),
        },
    ),
    RecordDef(
        RecordType.GROUP_METADATA,
        GroupMetadataKey,
        record("GroupMetadataKey", [("group", "string")]),
        GroupMetadataValue,
        {
            1: record(
                "GroupMetadataValue",
                [
                    ("protocol_type", "string"),
                    ("generation", "int"),
                    ("protocol", optional("string")),
                    ("leader", optional("string")),
                    ("current_state_timestamp", "long", -1),
                    (
                        "members",
                        array(
                            record(
                                "ClassicMemberMetadata",
                                [
                                    ("member_id", "string"),
                                    ("group_instance_id", optional("string")),
                                    ("client_id", "string"),
                                    ("client_host", "string"),
                                    ("rebalance_timeout_ms", "int"),
                                    ("session_timeout_ms", "int"),
                                    ("subscription", "bytes"),
                                    ("assignment", "bytes"),
                                ],
                            )
                        ),
                        [],
                    ),
                ],
            )
        },
    ),
    RecordDef(
        RecordType.CONSUMER_GROUP_METADATA,
        ConsumerGroupMetadataKey,
        record("ConsumerGroupMetadataKey", [("group", "string")]),
        ConsumerGroupMetadataValue,
        {
            1: record(
                "ConsumerGroupMetadataValue",
                [("epoch", "int"), ("metadata_hash", "long", 0)],
            )
        },
    ),
    RecordDef(
        RecordType.CONSUMER_GROUP_MEMBER_METADATA,
        ConsumerGroupMemberKey,
        record(
            "ConsumerGroupMemberMetadataKey",
            [("group", "string"), ("member_id", "string")],
        ),
        ConsumerGroupMemberMetadataValue,
        {
            1: record(
                "ConsumerGroupMemberMetadataValue",
                [
                    ("client_id", "string"),
                    ("client_host", "string"),
                    ("rebalance_timeout_ms", "int"),
                    ("instance_id", optional("string"), None),
                    ("rack_id", optional("string"), None),
                    ("subscribed_topic_names", array("string"), []),
                    ("subscribed_topic_regex", optional("string"), None),
                    ("server_assignor", optional("string"), None),
                    (
                        "classic_member_metadata",
                        optional(
                            record(
                                "ClassicMemberInConsumerGroup",
                                [
                                    ("session_timeout_ms", "int"),
                                    (
                                        "supported_protocols",
                                        array(
                                            record(
                                                "ClassicProtocol",
                                                [
                                                    ("name", "string"),
                                                    ("metadata", "bytes"),
                                                ],
                                            )
                                        ),
                                        [],
                                    ),
                                ],
                            )
                        ),
                        None,
                    ),
                ],
            )
        },
    ),
    RecordDef(
        RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
        ConsumerGroupTargetAssignmentMetadataKey,
        record("ConsumerGroupTargetAssignmentMetadataKey", [("group", "string")]),
        ConsumerGroupTargetAssignmentMetadataValue,
        {
            1: record(
                "ConsumerGroupTargetAssignmentMetadataValue",
                [("assignment_epoch", "int"), ("assignment_timestamp", "long", 0)],
            )
        },
    ),
    RecordDef(
        RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
        ConsumerGroupMemberKey,
        record(
            "ConsumerGroupTargetAssignmentMemberKey",
            [("group", "string"), ("member_id", "string")],
        ),
        ConsumerGroupTargetAssignmentMemberValue,
        {
            1: record(
                "ConsumerGroupTargetAssignmentMemberValue",
                [("topic_partitions", array(_TOPIC_PARTITIONS), [])],
            )
        },
    ),
    RecordDef(
        RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        ConsumerGroupMemberKey,
        record(
            "ConsumerGroupCurrentMemberAssignmentKey",
            [("group", "string"), ("member_id", "string")],
        ),
        ConsumerGroupCurrentMemberAssignmentValue,
        {
            1: record(
                "ConsumerGroupCurrentMemberAssignmentValue",
                [
                    ("member_epoch", "int"),
                    ("previous_member_epoch", "int"),
                    ("state", "int"),
                    ("assigned_partitions", array(_TOPIC_PARTITIONS_EPOCHS), []),
                    (
                        "partitions_pending_revocation",
                        array("TopicPartitionsWithEpochs"),
                        [],
                    ),
                ],
            )
        },
    ),
    RecordDef(
        RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION,
        ConsumerGroupRegularExpressionKey,
        record(
            "ConsumerGroupRegularExpressionKey",
            [("group", "string"), ("regex", "string")],
        ),
        ConsumerGroupRegularExpressionValue,
        {
            1: record(
                "ConsumerGroupRegularExpressionValue",
                [
                    ("topics", array("string"), []),
                    ("version", "long"),
                    ("timestamp", "long"),
                ],
            )
        },
    ),
    RecordDef(
        RecordType.SHARE_GROUP_MEMBER_METADATA,
        ShareGroupMemberKey,
        record("ShareGroupMemberMetadataKey", [("group", "string"), ("member_id", "string")]),
        ShareGroupMemberMetadataValue,
        {
            1: record(
                "ShareGroupMemberMetadataValue",
                [
                    ("client_id", "string"),
                    ("client_host", "string"),
                    ("rack_id", optional("string"), None),
                    ("subscribed_topic_names", array("string"), []),
                ],
            )
        },
    ),
    RecordDef(
        RecordType.SHARE_GROUP_METADATA,
        ShareGroupMetadataKey,
        record("ShareGroupMetadataKey", [("group", "string")]),
        ShareGroupMetadataValue,
        {1: record("ShareGroupMetadataValue", [("epoch", "int"), ("metadata_hash", "long", 0)])},
    ),
    RecordDef(
        RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
        ShareGroupTargetAssignmentMetadataKey,
        record("ShareGroupTargetAssignmentMetadataKey", [("group", "string")]),
        ShareGroupTargetAssignmentMetadataValue,
        {
            1: record(
                "ShareGroupTargetAssignmentMetadataValue",
                [("assignment_epoch", "int"), ("assignment_timestamp", "long", 0)],
            )
        },
    ),
    RecordDef(
        RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
        ShareGroupMemberKey,
        record("ShareGroupTargetAssignmentMemberKey", [("group", "string"), ("member_id", "string")]),
        ShareGroupTargetAssignmentMemberValue,
        {1: record("ShareGroupTargetAssignmentMemberValue", [("topic_partitions", array(_TOPIC_PARTITIONS), [])])},
    ),
    RecordDef(
        RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        ShareGroupMemberKey,
        record("ShareGroupCurrentMemberAssignmentKey", [("group", "string"), ("member_id", "string")]),
        ShareGroupCurrentMemberAssignmentValue,
        {
            1: record(
                "ShareGroupCurrentMemberAssignmentValue",
                [
                    ("member_epoch", "int"),
                    ("previous_member_epoch", "int"),
                    ("state", "int"),
                    ("assigned_partitions", array(_TOPIC_PARTITIONS), []),
                ],
            )
        },
    ),
    RecordDef(
        RecordType.SHARE_GROUP_STATE_PARTITION_METADATA,
        ShareGroupStatePartitionMetadataKey,
        record("ShareGroupStatePartitionMetadataKey", [("group", "string")]),
        ShareGroupStatePartitionMetadataValue,
        {
            1: record(
                "ShareGroupStatePartitionMetadataValue",
                [
                    ("initializing_topics", array(_SHARE_TOPIC_PARTITIONS), []),
                    ("initialized_topics", array("ShareTopicPartitions"), []),
                    (
                        "deleting_topics",
                        array(
                            record("ShareTopicInfo", [("topic_id", optional("string"), None), ("topic_name", "string")])
                        ),
                        [],
                    ),
                ],
            )
        },
    ),
    RecordDef(
        RecordType.GROUP_CONFIG,
        GroupConfigKey,
        record("GroupConfigKey", [("group", "string")]),
        GroupConfigValue,
        {
            1: record(
                "GroupConfigValue",
                [("configs", array(record("GroupConfigEntry", [("name", "string"), ("value", "string")])), [])],
            )
        },
    ),
    RecordDef(
        RecordType.PENDING_TXN_OFFSETS,
        PendingTxnOffsetsKey,
        record(
            "PendingTxnOffsetsKey",
            [("group", "string"), ("producer_id", "long"), ("txn_offset", "long")],
        ),
        PendingTxnOffsetsValue,
        {
            1: record("PendingTxnOffsetsValue", _PENDING_TXN_OFFSETS_V1),
            2: record("PendingTxnOffsetsValue", [*_PENDING_TXN_OFFSETS_V1, ("superseded", array("int"), [])]),
        },
    ),
    RecordDef(
        RecordType.TXN_PRODUCER,
        TxnProducerKey,
        record("TxnProducerKey", [("producer_id", "long")]),
        TxnProducerValue,
        {
            1: record(
                "TxnProducerValue",
                [("producer_epoch", "int"), ("next_sequence", "int"), ("timestamp", "long", 0)],
            )
        },
    ),
    RecordDef(
        RecordType.SHARE_SNAPSHOT,
        ShareSnapshotKey,
        record("ShareSnapshotKey", [("group", "string"), ("topic", "string"), ("partition", "int")]),
        ShareSnapshotValue,
        {
            1: record(
                "ShareSnapshotValue",
                [
                    ("snapshot_epoch", "int"),
                    ("state_epoch", "int"),
                    ("start_offset", "long"),
                    ("state_batches", array(_SHARE_STATE_BATCH), []),
                    ("topic_id", optional("string"), None),
                ],
            )
        },
    ),
    RecordDef(
        RecordType.SHARE_UPDATE,
        ShareUpdateKey,
        record(
            "ShareUpdateKey",
            [("group", "string"), ("topic", "string"), ("partition", "int"), ("slot", "int")],
        ),
        ShareUpdateValue,
        {
            1: record(
                "ShareUpdateValue",
                [
                    ("snapshot_epoch", "int"),
                    ("start_offset", "long"),
                    ("state_batches", array(_SHARE_STATE_BATCH), []),
                ],
            )
        },
    ),
    RecordDef(
        RecordType.SHARD_EPOCH,
        ShardEpochKey,
        record("ShardEpochKey", [("epoch", "int")]),
        ShardEpochValue,
        {
            1: record(
                "ShardEpochValue",
                [("epoch", "int"), ("owner", "string"), ("timestamp", "long")],
            )
        },
    ),
    RecordDef(
        RecordType.BATCH_ABORT,
        BatchAbortKey,
        record("BatchAbortKey", [("first_offset", "long")]),
        BatchAbortValue,
        {
            1: record(
                "BatchAbortValue",
                [("first_offset", "long"), ("last_offset", "long"), ("epoch", "int")],
            )
        },
    ),
    RecordDef(
        RecordType.LOG_SKIP,
        LogSkipKey,
        record("LogSkipKey", [("offset", "long")]),
        LogSkipValue,
        {
            1: record(
                "LogSkipValue",
                [("offset", "long"), ("operator", "string"), ("timestamp", "long"), ("reason", "string")],
            )
        },
    ),
)
