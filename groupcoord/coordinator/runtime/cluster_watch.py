"""Whether the backing cluster answers, and whether it still holds the coordinator's own topics.

A broker outage must not take a sidecar down: it waits, reports not-ready, and serves again once
the cluster is back. When the cluster comes back without the log topic or the placement directory
topic (a broker with a memory store restarted, or someone deleted them), they are created again
as at startup, the loss is logged as an ERROR naming the topic, and the process serves from the
new, empty log: this is what a restart of the process would do, and staying down would bring
nothing back (see the README, "Broker outages").

It also reads the log topic's ``cleanup.policy`` (at the first round, then every
``POLICY_EVERY_S``): the state lives in the log only as long as the cluster keeps each key's last
record, which a compacted topic does forever and a topic with ``delete`` in its policy only for its
retention. Someone changing it on the cluster (an operator probe set ``cleanup.policy=delete`` and
``retention.ms=1000`` and nothing said a word) is logged as an ERROR, once per policy seen.

One thread asks; one admin client serves it for the whole life of the process (a client torn
down and made anew in a loop while requests are in flight is what librdkafka handles worst).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from groupcoord.coordinator.logs import drain
from groupcoord.coordinator.runtime.log import LogTopicSpec, ensure_log_topic_on
from groupcoord.coordinator.runtime.placement import ensure_directory_topic_on

log = logging.getLogger(__name__)

# How often the log topic's cleanup policy is read again.
POLICY_EVERY_S = 60.0

# Called on the watch thread with the topics that were created again (by any process) since last seen.
RecreatedCallback = Callable[[list[str]], None]
# Called on the watch thread when the cluster answers again after it did not.
BackCallback = Callable[[], None]


class ClusterWatch:
    def __init__(
        self,
        client_config: dict[str, Any],
        log_topic: LogTopicSpec,
        directory_topic: str,
        on_recreated: RecreatedCallback,
        on_back: BackCallback,
        interval_s: float = 1.0,
        timeout_s: float = 5.0,
    ) -> None:
        self.log_topic = log_topic
        self.directory_topic = directory_topic
        self._on_recreated = on_recreated
        self._on_back = on_back
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self._admin = AdminClient(dict(client_config))
        # Read from any thread: replaced whole by the watch thread.
        self.reachable = True
        self.problem: str | None = None
        # topic -> id when last seen (a new id: the topic was created again)
        self._seen: dict[str, str | None] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cluster-watch", daemon=True)
        self._policy_read_at: float | None = None  # time.monotonic() of the last read
        self.policy: str | None = None  # the log topic's cleanup.policy as last read

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stop the thread; the admin client goes with this object once nothing uses it."""
        self._stop.set()
        self._thread.join(2 * self.timeout_s + 35)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.check()
            except Exception as exc:  # the watch must outlive any one failed call
                log.warning("cluster watch: %r", exc)
            finally:
                drain(self._admin)  # its queued librdkafka log lines

    def check(self) -> None:
        """One round: is the cluster there, and are both topics the ones seen before? Creates
        what is missing; reports a topic created again (by this process or another)."""
        try:
            ids = self._topic_ids()
        except KafkaException as exc:
            if self.reachable:
                log.warning("backing cluster unreachable: %s; shards stop until it is back", exc.args[0])
            self.reachable, self.problem = False, f"cluster unreachable: {exc.args[0]}"
            return
        missing = [name for name, topic_id in ids.items() if topic_id is None]
        if missing:
            self.problem = f"missing {', '.join(missing)}"
            self._recreate(missing)
            ids = self._topic_ids()
        renewed = [n for n, topic_id in ids.items() if n in self._seen and self._seen[n] != topic_id]
        self._seen.update(ids)
        was_reachable = self.reachable
        # The round that finds topics lost does not vouch for them: the process stays not ready
        # until the next round finds them still there (and its shards have reloaded meanwhile).
        lost = sorted(set(missing) | set(renewed))
        self.reachable, self.problem = True, f"lost and created again: {', '.join(lost)}" if lost else None
        if renewed:
            self._on_recreated(renewed)
        now = time.monotonic()
        if self._policy_read_at is None or now - self._policy_read_at >= POLICY_EVERY_S or renewed:
            self._policy_read_at = now
            self.check_policy()
        if not was_reachable:
            log.warning("backing cluster reachable again")
            self._on_back()

    def check_policy(self) -> None:
        """Read the log topic's cleanup.policy; an ERROR when it lets the cluster delete records,
        once per policy seen (and an INFO line when it is compact again)."""
        resource = ConfigResource(ResourceType.TOPIC, self.log_topic.name)
        try:
            described = self._admin.describe_configs([resource], request_timeout=self.timeout_s)[resource]
            entries = described.result(timeout=self.timeout_s + 1)
        except KafkaException as exc:  # a cluster without DescribeConfigs: nothing to say
            log.debug("cluster watch: cannot read the log topic's configuration: %s", exc.args[0])
            return
        entry = entries.get("cleanup.policy")
        policy = str(entry.value) if entry is not None and entry.value is not None else None
        if policy is None or policy == self.policy:
            return
        was, self.policy = self.policy, policy
        kinds = {p.strip().lower() for p in policy.split(",")}
        if "delete" in kinds or "compact" not in kinds:
            retention = entries.get("retention.ms")
            log.error(
                "log topic %s has cleanup.policy=%s: the cluster deletes its records after retention.ms=%s, and "
                "with them the state of every group and the offsets not committed again since; set "
                "cleanup.policy=compact on it (as Kafka's __consumer_offsets has)",
                self.log_topic.name,
                policy,
                retention.value if retention is not None else "?",
            )
        elif was is not None:
            log.info("log topic %s has cleanup.policy=%s again", self.log_topic.name, policy)

    def _topic_ids(self) -> dict[str, str | None]:
        """Each topic's id, None for a topic the cluster does not have."""
        names = [self.log_topic.name, self.directory_topic]
        futures = self._admin.describe_topics(TopicCollection(names), request_timeout=self.timeout_s)
        ids: dict[str, str | None] = {}
        for name in names:
            try:
                ids[name] = str(futures[name].result(timeout=self.timeout_s + 1).topic_id)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise
                ids[name] = None
        return ids

    def _recreate(self, missing: list[str]) -> None:
        for name in missing:
            log.error(
                "topic %s is gone from the backing cluster (deleted, or the cluster lost its data); "
                "creating it again%s",
                name,
                ": the group state and committed offsets it held are lost" if name == self.log_topic.name else "",
            )
        if self.log_topic.name in missing:
            ensure_log_topic_on(self._admin, self.log_topic)
        if self.directory_topic in missing:
            ensure_directory_topic_on(self._admin, self.directory_topic, self.log_topic.replication_factor)
