"""One group's committed offsets on one topic, asked so that neither an outage nor a coordinator
move can abort the process.

Asked through a consumer of the group that never subscribes, not through the admin API:
librdkafka (2.16.0) crashes the whole process (SIGSEGV, librdkafka issue 5040) when an admin
ListConsumerGroupOffsets is answered NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, as a Kafka
cluster answers while the group's coordinator moves (a broker restarted, the offsets partition
offline): its OffsetFetch handler asks the client's consumer group, which an admin client lacks,
to look the coordinator up again. A consumer has that group, looks the coordinator up again and
fails the call with the error (seen against a sidecar whose shard failed to load: the admin call
exits 139, the consumer's raises COORDINATOR_NOT_AVAILABLE). Its ``committed`` names the
partitions, so the topic's are listed first.

An earlier version used the admin client and worked around another of its bugs (an admin request
whose own timeout expired while the coordinator was unreachable aborted the process in
``rd_kafka_enq_once_del_source_return`` once the coordinator came back): ``committed`` has no such
request object, so its timeout is an ordinary one here. What is kept: one request in flight at a
time (the next caller waits on the same one), and a client replaced once a request has waited
``renew_after`` (in about one restart of the broker in ten, librdkafka keeps the coordinator's
old connection "terminating" forever after the restarted broker's node id is added again, and a
coordinator request then never leaves its queue).

The client never re-bootstraps (``metadata.recovery.strategy=none``). librdkafka's default
(KIP-1102, ``rebootstrap``) starts a re-bootstrap whenever all the brokers it knows are down at
once, which a single reset of its connections does on a one-broker cluster or behind a proxy, and
2.16 decommissions the known brokers when it starts one. The coordinator cache still names the
decommissioned broker, and a coordinator request (ours) waits on it until something else changes
a broker's state (librdkafka issues 5511 and 5512): seen as every owners query after a few TCP
resets going unanswered until the client was replaced, while the cluster answered everyone else.
Without the re-bootstrap the known broker just reconnects and the request is sent again.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, wait
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition

from groupcoord.coordinator.logs import drain

# A request this old is abandoned with its client (a healthy coordinator answers in milliseconds).
RENEW_AFTER_S = 30.0
# How often a wait looks at its stop event.
STOP_POLL_S = 0.1


def _settled(pending: Future[Any], deadline: float, stop: threading.Event | None) -> bool:
    """Whether ``pending`` is done by ``deadline``; gives up early once ``stop`` is set, so a
    process stopping while the cluster is unreachable does not wait the whole timeout out."""
    while not pending.done():
        left = deadline - time.monotonic()
        if left <= 0 or (stop is not None and stop.is_set()):
            return False
        wait([pending], timeout=left if stop is None else min(left, STOP_POLL_S))
    return True


class GroupOffsetsQuery:
    """Committed offsets of ``group_id`` on ``topic``, through one consumer of that group (never
    subscribed) kept until a request waits ``renew_after``; each request runs on a thread of its
    own, so a caller never waits longer than it asks to."""

    def __init__(
        self, client_config: dict[str, Any], group_id: str, topic: str, renew_after: float = RENEW_AFTER_S
    ) -> None:
        # No re-bootstrap (librdkafka's KIP-1102 default, ``rebootstrap``): see the module docstring.
        self._config = {
            **client_config,
            "group.id": group_id,
            "enable.auto.commit": False,
            "metadata.recovery.strategy": "none",
        }
        self.group_id = group_id
        self.topic = topic
        self._renew_after = renew_after
        self._consumer = Consumer(self._config)
        self._lock = threading.Lock()
        self._pending: Future[ConsumerGroupTopicPartitions] | None = None
        self._answered: Future[ConsumerGroupTopicPartitions] | None = None  # the last one ``answer`` returned
        self._sent_at = 0.0

    def ask(self, timeout: float, stop: threading.Event | None = None) -> ConsumerGroupTopicPartitions:
        """The group's offsets as of a request sent after this call began; raises
        ``TimeoutError`` when no answer comes within ``timeout`` or once ``stop`` is set (the
        request stays in flight, and the next call waits for it before sending another),
        ``KafkaException`` when the cluster answered with an error."""
        asked = time.monotonic()
        deadline = asked + timeout
        while True:
            with self._lock:
                pending = self._in_flight(asked)
                sent_at = self._sent_at
            # (A request from before this call may be in flight: its answer may predate what the
            # caller asks about; wait for it, then send ours.)
            if not _settled(pending, deadline, stop):
                raise TimeoutError
            if sent_at >= asked:
                return pending.result()

    def answer(self, since: float) -> tuple[float, Future[ConsumerGroupTopicPartitions]] | None:
        """Never waits: keeps a request sent at or after ``since`` (``time.monotonic()``) in
        flight, and returns the newest request that was answered, with the time it was sent, once,
        the first time it is asked for after its answer came (None meanwhile). For a loop that must
        not stop for an unreachable cluster."""
        with self._lock:
            pending = self._pending
            came = pending is not None and pending.done() and pending is not self._answered
            if came:
                self._answered = pending
            sent_at = self._sent_at
            self._in_flight(since)
        if not came or pending is None:
            return None
        return sent_at, pending

    def _in_flight(self, since: float) -> Future[ConsumerGroupTopicPartitions]:
        """The request in flight, sent now when there is none, or the last one is done and was
        sent before ``since``, or has waited ``renew_after``. (Holds ``_lock``.)"""
        pending = self._pending
        if pending is not None and not pending.done() and since - self._sent_at > self._renew_after:
            # The old consumer is closed by its request's thread once that returns (``_fetch``).
            self._consumer = Consumer(self._config)
            pending = None
        if pending is None or (pending.done() and self._sent_at < since):
            pending = self._pending = Future()
            self._sent_at = time.monotonic()
            thread = threading.Thread(
                target=self._fetch, args=(self._consumer, pending), name="group-offsets", daemon=True
            )
            thread.start()
        return pending

    def _fetch(self, consumer: Consumer, answer: Future[ConsumerGroupTopicPartitions]) -> None:
        """One request (on its own thread): the topic's partitions, then their committed offsets.
        Each call is bounded by ``renew_after``, so the thread ends even when nothing answers."""
        answer.set_running_or_notify_cancel()
        try:
            listed = consumer.list_topics(self.topic, timeout=self._renew_after).topics.get(self.topic)
            if listed is None or listed.error is not None:
                error = listed.error if listed is not None else None
                raise KafkaException(error or KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, self.topic))
            partitions = [TopicPartition(self.topic, p) for p in sorted(listed.partitions)]
            committed = consumer.committed(partitions, timeout=self._renew_after)
            answer.set_result(ConsumerGroupTopicPartitions(self.group_id, committed))
        except Exception as exc:  # the caller gets what went wrong, KafkaException mostly
            answer.set_exception(exc)
        finally:
            with self._lock:
                replaced = consumer is not self._consumer
            if replaced:
                consumer.close()

    def drain(self) -> None:
        """Hand over the consumer's queued log lines (it is polled nowhere else)."""
        drain(self._consumer)
