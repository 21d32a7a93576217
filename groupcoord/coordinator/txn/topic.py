"""The transaction topic: one partition per shard, holding the records that make a group's
offsets part of a client's transaction, and the cluster's markers that decide them."""

from __future__ import annotations

from groupcoord.coordinator.runtime.log import LogTopicSpec

# Read only from the lowest staged record on, and only while a transaction is undecided (at most
# the cluster's transaction.max.timeout.ms, 15 minutes by default): a week leaves room for an
# outage of every coordinator process. Not compacted: the records have no keys worth keeping.
TRANSACTION_TOPIC_CONFIGS = {"cleanup.policy": "delete", "retention.ms": str(7 * 24 * 3_600_000)}


def transaction_topic(log_topic: str) -> str:
    return f"{log_topic}-txn"


def transaction_topic_spec(name: str, partitions: int, replication_factor: int) -> LogTopicSpec:
    """As many partitions as the log (partition p serves shard p)."""
    return LogTopicSpec(name, partitions, replication_factor, dict(TRANSACTION_TOPIC_CONFIGS))
