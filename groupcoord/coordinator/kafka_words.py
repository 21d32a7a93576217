"""Kafka client failures in words: what the CLI and ``serve`` say when they give up on a cluster.

``describe_error`` turns a librdkafka error into the words an operator acts on; ``LastLine`` keeps
librdkafka's last log line (instead of printing it) so that ``LastLine.reason`` can say *why* no
broker answered (``Connection refused``, ``Failed to resolve 'kafka:9092': ...``).
"""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import KafkaError

# Kafka error codes in words, for the refusals an operator meets.
_WORDS: dict[int, str] = {
    KafkaError.GROUP_ID_NOT_FOUND: "the group does not exist",
    KafkaError.NON_EMPTY_GROUP: "the group still has active members (stop its consumers first)",
    KafkaError.UNKNOWN_MEMBER_ID: "the group has active members (stop its consumers first)",
    KafkaError.REBALANCE_IN_PROGRESS: "the group is rebalancing: it has active members (stop its consumers first)",
    KafkaError.GROUP_SUBSCRIBED_TO_TOPIC: "the group's members are subscribed to that topic (stop its consumers first)",
    KafkaError.INVALID_GROUP_ID: "the group id is not valid",
    KafkaError.GROUP_AUTHORIZATION_FAILED: "not authorized for this group",
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "not authorized for this topic",
    KafkaError.UNKNOWN_TOPIC_OR_PART: "the topic or partition does not exist",
    KafkaError.COORDINATOR_NOT_AVAILABLE: "the coordinator is not available (is its shard loaded?)",
    KafkaError.NOT_COORDINATOR: "the coordinator moved; try again",
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS: "the coordinator is still loading; try again",
    KafkaError.OFFSET_METADATA_TOO_LARGE: "the offset metadata is too large",
    KafkaError._TIMED_OUT: "timed out",
    KafkaError._TRANSPORT: "no connection",
    KafkaError._ALL_BROKERS_DOWN: "no broker reachable",
}


def describe_error(error: Any) -> str:
    if isinstance(error, KafkaError):
        words = _WORDS.get(error.code())
        if words is not None:
            return words
        text = error.str()
        return text.split(": ", 1)[-1] if text.startswith(("Broker: ", "Local: ")) else text
    return str(error)


class LastLine(logging.Handler):
    """Keeps librdkafka's last log line (to explain a failure) instead of printing it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.last = record.getMessage()

    def reason(self) -> str:
        """`` (why)`` from the last line (the reason alone when it says why a connection failed)."""
        # e.g. "... Connect to ipv4#127.0.0.1:1 failed: Connection refused (after 0ms in state CONNECT)"
        # or "... Failed to resolve 'host:9092': Name or service not known (after 1ms ...)".
        why = self.last.split(" (after", 1)[0]
        if "failed: " in why:
            why = why.rsplit("failed: ", 1)[1]
        elif "Failed to resolve" in why:
            why = why[why.index("Failed to resolve") :]
        return f" ({why})" if why else ""
