"""One group's committed offsets (ListConsumerGroupOffsets), asked so that an outage cannot abort the process.

librdkafka (2.16.0, the confluent-kafka wheel's; the code is unchanged on its master) aborts the
whole process with ``rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0'`` after
this sequence: an admin request to a group coordinator (ListConsumerGroupOffsets,
DescribeConsumerGroups, ...) reaches its ``request_timeout`` while the coordinator cannot be
reached (the request waits in librdkafka's coordinator-request queue), and later the coordinator
comes back up. The queued request then wakes, finds its admin request gone, frees the request's
enqueue-once object (``rd_kafka_admin_coord_request``) and hands the same, freed, object to the
response handler (``rd_kafka_admin_coord_response_parse``). A ``kill -9`` of the broker under
``groupcoord serve`` did exactly that through placement's owner refresh, every few seconds.

So a request's own timeout never expires before the coordinator answers: it is librdkafka's
longest (an hour), the caller waits a bounded time for the answer, and while a request is in
flight no other is sent (the next caller waits on the same one). A request unanswered for
``renew_after`` seconds stays with its client, which is then replaced: destroying a client fails
its queued coordinator requests without the faulty path (checked against a broker killed and
restarted).

The replacement is needed well before the hour: in about one restart of the broker in ten, the
same librdkafka keeps the handle of the coordinator's old connection "terminating" forever (its
refcount held by the queued request) after the restarted broker's node id is added again, and the
request then never leaves its queue. Without a new client, a placement owner refresh stayed blind
for the rest of the hour.

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

from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient

from groupcoord.coordinator.logs import drain

# The longest request_timeout librdkafka accepts (rd_kafka_AdminOptions_set_request_timeout).
REQUEST_TIMEOUT_S = 3600.0
# A request this old is abandoned with its client (far below REQUEST_TIMEOUT_S, so its own
# timeout never expires; a healthy coordinator answers in milliseconds).
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
    """Committed offsets of ``group_id``, through one admin client kept for the process's life."""

    def __init__(self, client_config: dict[str, Any], group_id: str, renew_after: float = RENEW_AFTER_S) -> None:
        # No re-bootstrap (librdkafka's KIP-1102 default, ``rebootstrap``): see the module docstring.
        self._config = {**client_config, "metadata.recovery.strategy": "none"}
        self.group_id = group_id
        self._renew_after = min(renew_after, REQUEST_TIMEOUT_S / 2)
        self._admin = AdminClient(self._config)
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
            # Dropping the last reference destroys the old client here, once, on this thread.
            self._admin = AdminClient(self._config)
            pending = None
        if pending is None or (pending.done() and self._sent_at < since):
            request = ConsumerGroupTopicPartitions(self.group_id)
            futures = self._admin.list_consumer_group_offsets([request], request_timeout=REQUEST_TIMEOUT_S)
            pending = self._pending = futures[self.group_id]
            self._sent_at = time.monotonic()
        return pending

    def drain(self) -> None:
        """Hand over the admin client's queued log lines (it is polled nowhere else)."""
        drain(self._admin)
