"""What each forwarded API names: the topics (and groups) a request reaches, read from its decoded fields.

The gateway forwards to the cluster every API it does not answer itself. Whether a forwarded
request touches one of the sidecar's own topics is decided on the request as a broker reads it
(``decode_struct(exact=False)``: brokers ignore bytes after the message), never on its raw bytes:
the same name can be encoded in more than one way. Every forwarded API is in exactly one of:

- ``NAMES_NO_TOPIC``: its request has no field naming a topic or group (checked against Kafka's
  schemas), so it is forwarded as it is;
- ``DECODED``: the fields naming topics (by name or by id), read from the request by ``scan``;
- Produce, parsed by ``protect.produce_topics`` (its record data is skipped, not decoded);
- ``CONFIGS`` / ``ACLS``: resources, of which TOPIC (and GROUP) ones count.

Any other API (streams and share groups among them, broker-to-broker APIs, and APIs newer than this
table) is not offered in ApiVersions and a request for it closes the connection, as a Kafka broker
does for an API it does not expose. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.coordinator.messages import (
    add_partitions_to_txn,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_records,
    delete_topics,
    describe_log_dirs,
    describe_producers,
    describe_quorum,
    describe_topic_partitions,
    elect_leaders,
    fetch,
    list_offsets,
    list_partition_reassignments,
    offset_for_leader_epoch,
    write_txn_markers,
)
from groupcoord.coordinator.messages.schema import Message

PRODUCE = 0

# Requests of these APIs name no topic and no group of the sidecar's. DescribeAcls only reads ACL
# bindings; AddOffsetsToTxn names a group of the cluster's transaction coordinator, never one the
# sidecar serves (its TxnOffsetCommit comes to the sidecar).
NAMES_NO_TOPIC: frozenset[int] = frozenset(
    {
        17,  # SaslHandshake
        22,  # InitProducerId
        25,  # AddOffsetsToTxn
        26,  # EndTxn
        29,  # DescribeAcls
        36,  # SaslAuthenticate
        38,  # CreateDelegationToken
        39,  # RenewDelegationToken
        40,  # ExpireDelegationToken
        41,  # DescribeDelegationToken
        48,  # DescribeClientQuotas
        49,  # AlterClientQuotas
        50,  # DescribeUserScramCredentials
        51,  # AlterUserScramCredentials
        57,  # UpdateFeatures
        64,  # UnregisterBroker
        65,  # DescribeTransactions
        66,  # ListTransactions
        71,  # GetTelemetrySubscriptions
        72,  # PushTelemetry
        74,  # ListConfigResources
    }
)


@dataclass(frozen=True)
class Decoded:
    request: type[Message]
    # Paths to the fields naming topics: each step is a field (arrays are walked into); the last
    # holds a name (a string, or an array of them) or a topic id (a non-zero UUID counts).
    paths: tuple[tuple[str, ...], ...]


def _d(request: type[Message], *paths: str) -> Decoded:
    return Decoded(request, tuple(tuple(p.split(".")) for p in paths))


DECODED: dict[int, Decoded] = {
    1: _d(
        fetch.FetchRequest,
        "topics.topic",
        "topics.topic_id",
        "forgotten_topics_data.topic",
        "forgotten_topics_data.topic_id",
    ),
    2: _d(list_offsets.ListOffsetsRequest, "topics.name"),
    19: _d(create_topics.CreateTopicsRequest, "topics.name"),
    20: _d(delete_topics.DeleteTopicsRequest, "topic_names", "topics.name", "topics.topic_id"),
    21: _d(delete_records.DeleteRecordsRequest, "topics.name"),
    23: _d(offset_for_leader_epoch.OffsetForLeaderEpochRequest, "topics.topic"),
    24: _d(add_partitions_to_txn.AddPartitionsToTxnRequest, "v3_and_below_topics.name", "transactions.topics.name"),
    27: _d(write_txn_markers.WriteTxnMarkersRequest, "markers.topics.name"),
    34: _d(alter_replica_log_dirs.AlterReplicaLogDirsRequest, "dirs.topics.name"),
    35: _d(describe_log_dirs.DescribeLogDirsRequest, "topics.topic"),
    37: _d(create_partitions.CreatePartitionsRequest, "topics.name"),
    43: _d(elect_leaders.ElectLeadersRequest, "topic_partitions.topic"),
    45: _d(alter_partition_reassignments.AlterPartitionReassignmentsRequest, "topics.name"),
    46: _d(list_partition_reassignments.ListPartitionReassignmentsRequest, "topics.name"),
    55: _d(describe_quorum.DescribeQuorumRequest, "topics.topic_name"),
    61: _d(describe_producers.DescribeProducersRequest, "topics.name"),
    75: _d(describe_topic_partitions.DescribeTopicPartitionsRequest, "topics.name"),
}

# DescribeConfigs, AlterConfigs, IncrementalAlterConfigs: ``resources``; TOPIC ones name a topic.
CONFIGS: frozenset[int] = frozenset({32, 33, 44})
TOPIC_RESOURCE = 2
# CreateAcls, DeleteAcls: bindings (or filters) on resources; see ``acl_reaches``.
ACLS: dict[int, type[Message]] = {30: create_acls.CreateAclsRequest, 31: delete_acls.DeleteAclsRequest}
_ACL_ANY, _ACL_TOPIC, _ACL_GROUP = 1, 2, 3
_PATTERN_MATCH, _PATTERN_PREFIXED = 2, 4
_PATTERN_ANY = 1


def decoded_range(key: int) -> tuple[int, int] | None:
    """The versions of a forwarded API the gateway can read the topics of (None: not forwarded)."""
    if key in NAMES_NO_TOPIC:
        return 0, 0x7FFF
    cls = DECODED[key].request if key in DECODED else ACLS.get(key)
    if cls is None:
        return None
    return cls.VALID.low, cls.VALID.high


def acl_reaches(request: Message, topics: set[str], groups: set[str]) -> bool:
    """Whether an ACL creation or deletion could grant or remove rights on a protected topic or
    group: a binding or filter for that resource type (or any) whose name pattern covers it."""
    entries = getattr(request, "creations", None) or getattr(request, "filters", None) or []
    for entry in entries:
        kind = getattr(entry, "resource_type", getattr(entry, "resource_type_filter", 0))
        name = getattr(entry, "resource_name", getattr(entry, "resource_name_filter", None))
        pattern = getattr(entry, "resource_pattern_type", getattr(entry, "pattern_type_filter", 0))
        names = (topics if kind in (_ACL_TOPIC, _ACL_ANY) else set()) | (
            groups if kind in (_ACL_GROUP, _ACL_ANY) else set()
        )
        if any(_pattern_covers(name, pattern, n) for n in names):
            return True
    return False


def _pattern_covers(pattern_name: str | None, pattern: int, name: str) -> bool:
    if pattern_name is None or pattern_name in ("*", name):
        return True
    return pattern in (_PATTERN_PREFIXED, _PATTERN_MATCH, _PATTERN_ANY) and name.startswith(pattern_name)
