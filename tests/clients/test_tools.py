"""kafka-python and the admin clients through the gateway (kcat: test_kcat.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from tests.clients.support import Member, Ownership, create_topic, drive, produce, settled, wait_for
from tests.integration.serve_process import ServeProcess

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(120),
    # kafka-python loads its schemas through a deprecated importlib API.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]

CLASSIC = {
    "group.protocol": "classic",
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 500,
    "partition.assignment.strategy": "range",
}
CONSUMER = {"group.protocol": "consumer"}
TIMEOUT = 40


class KafkaPythonMember:
    """A kafka-python KafkaConsumer polled by its own thread (its poll blocks in joins)."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
        )
        self.consumer.subscribe([topic])
        self.records: list[tuple[int, int]] = []
        self.assignment: frozenset[int] = frozenset()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                for tp, messages in self.consumer.poll(timeout_ms=100).items():
                    self.records.extend((tp.partition, m.offset) for m in messages)
                self.assignment = frozenset(tp.partition for tp in self.consumer.assignment())
        except BaseException as exc:  # surfaced by the test
            self.error = exc

    def halt(self) -> None:
        self.stop.set()
        self.thread.join(30)
        assert not self.thread.is_alive()
        assert self.error is None, self.error


def test_kafka_python_group_consumes_commits_and_reads_commits(
    bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    partitions = 4
    topic, group = unique_name, f"{unique_name}-group"
    create_topic(bootstrap, topic, partitions)
    members = [KafkaPythonMember(sidecar.bootstrap, group, topic) for _ in range(2)]
    try:

        def split() -> bool:
            a, b = (m.assignment for m in members)
            return bool(a) and bool(b) and not a & b and a | b == set(range(partitions))

        wait_for(split, TIMEOUT, "two kafka-python members to share the partitions")
        expected = produce(sidecar.bootstrap, topic, 25, partitions)
        wait_for(lambda: sum(len(m.records) for m in members) >= len(expected), TIMEOUT, "all records")
        for m in members:
            m.halt()
        consumed = [r for m in members for r in m.records]
        assert sorted(consumed) == sorted(expected)
        for m in members:
            assert {p for p, _ in m.records} <= m.assignment
        high = {p: max(o for q, o in expected if q == p) + 1 for p in range(partitions)}
        for m in members:
            m.consumer.commit()
            for p in m.assignment:
                assert m.consumer.committed(KTopicPartition(topic, p)) == high[p]
        # Another client of the same group (not a member) reads the same commits.
        reader = KafkaConsumer(bootstrap_servers=sidecar.bootstrap, group_id=group, enable_auto_commit=False)
        try:
            assert {p: reader.committed(KTopicPartition(topic, p)) for p in range(partitions)} == high
        finally:
            reader.close()
    finally:
        for m in members:
            m.stop.set()
            m.thread.join(30)
            m.consumer.close()


@contextmanager
def active_member(
    sidecar: ServeProcess, group: str, topic: str, partitions: int, conf: dict[str, Any]
) -> Iterator[Member]:
    """One consumer that owns every partition of ``topic`` for the duration of the block."""
    ownership = Ownership()
    member = Member(f"{group}-member", sidecar.bootstrap, group, topic, ownership, conf)
    try:
        drive(
            [member], lambda: settled([member], ownership, partitions, 0.5), TIMEOUT, f"{group} to be stable", ownership
        )
        yield member
    finally:
        member.close()


def commit_offsets(sidecar: ServeProcess, group: str, offsets: list[TopicPartition]) -> None:
    """Commit as a client outside any generation (what tools do); makes an Empty classic group."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": sidecar.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()


def listed(admin: AdminClient, **filters: Any) -> dict[str, Any]:
    result = admin.list_consumer_groups(request_timeout=15, **filters).result()
    assert result.errors == []
    return {g.group_id: g for g in result.valid}


def test_confluent_admin_client_groups_and_offsets(bootstrap: str, sidecar: ServeProcess, unique_name: str) -> None:
    topic = unique_name
    classic, consumer, empty = (f"{unique_name}-{kind}" for kind in ("classic", "consumer", "empty"))
    create_topic(bootstrap, topic, 3)
    produce(sidecar.bootstrap, topic, 5, 3)
    commit_offsets(sidecar, empty, [TopicPartition(topic, p, 2 + p) for p in range(3)])
    admin = AdminClient({"bootstrap.servers": sidecar.bootstrap})
    with (
        active_member(sidecar, classic, topic, 3, CLASSIC) as classic_member,
        active_member(sidecar, consumer, topic, 3, CONSUMER) as consumer_member,
    ):
        for m in (classic_member, consumer_member):
            m.consumer.commit(offsets=[TopicPartition(topic, p, 4) for p in range(3)], asynchronous=False)

        # list_consumer_groups, unfiltered and with state and type filters.
        everything = listed(admin)
        assert {classic, consumer, empty} <= set(everything)
        assert (everything[classic].type, everything[classic].state) == (
            ConsumerGroupType.CLASSIC,
            ConsumerGroupState.STABLE,
        )
        assert (everything[consumer].type, everything[consumer].state) == (
            ConsumerGroupType.CONSUMER,
            ConsumerGroupState.STABLE,
        )
        assert (everything[empty].type, everything[empty].state) == (
            ConsumerGroupType.CLASSIC,
            ConsumerGroupState.EMPTY,
        )
        assert everything[empty].is_simple_consumer_group
        assert not everything[classic].is_simple_consumer_group
        ours = {classic, consumer, empty}
        assert set(listed(admin, states={ConsumerGroupState.STABLE})) & ours == {classic, consumer}
        assert set(listed(admin, states={ConsumerGroupState.EMPTY})) & ours == {empty}
        assert set(listed(admin, types={ConsumerGroupType.CONSUMER})) & ours == {consumer}
        assert set(listed(admin, types={ConsumerGroupType.CLASSIC})) & ours == {classic, empty}

        # describe_consumer_groups: DescribeGroups for the classic groups, ConsumerGroupDescribe for KIP-848.
        described = {g: f.result() for g, f in admin.describe_consumer_groups([classic, consumer, empty]).items()}
        for group, member, kind, assignor in (
            (classic, classic_member, ConsumerGroupType.CLASSIC, "range"),
            (consumer, consumer_member, ConsumerGroupType.CONSUMER, "uniform"),
        ):
            d = described[group]
            assert (d.group_id, d.type, d.state, d.partition_assignor) == (
                group,
                kind,
                ConsumerGroupState.STABLE,
                assignor,
            )
            assert not d.is_simple_consumer_group
            assert [m.client_id for m in d.members] == [member.name]
            assert {(tp.topic, tp.partition) for tp in d.members[0].assignment.topic_partitions} == {
                (topic, p) for p in range(3)
            }
        assert described[consumer].members[0].member_id
        assert described[empty].state == ConsumerGroupState.EMPTY and described[empty].members == []

        # list_consumer_group_offsets.
        def offsets(group: str) -> dict[int, int]:
            request = [ConsumerGroupTopicPartitions(group)]
            result = admin.list_consumer_group_offsets(request)[group].result()
            assert all(tp.error is None for tp in result.topic_partitions)
            return {tp.partition: tp.offset for tp in result.topic_partitions if tp.topic == topic}

        assert offsets(classic) == offsets(consumer) == {0: 4, 1: 4, 2: 4}
        assert offsets(empty) == {0: 2, 1: 3, 2: 4}

        # alter_consumer_group_offsets on the empty group.
        change = [ConsumerGroupTopicPartitions(empty, [TopicPartition(topic, 1, 1)])]
        altered = admin.alter_consumer_group_offsets(change)[empty].result()
        assert [(tp.partition, tp.offset, tp.error) for tp in altered.topic_partitions] == [(1, 1, None)]
        assert offsets(empty) == {0: 2, 1: 1, 2: 4}

        # delete_consumer_groups: the empty group goes, the active ones are refused.
        deleted = admin.delete_consumer_groups([empty, classic, consumer], request_timeout=15)
        assert deleted[empty].result() is None
        for group in (classic, consumer):
            with pytest.raises(KafkaException) as refused:
                deleted[group].result()
            assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP, refused.value
        remaining = listed(admin)
        assert empty not in remaining and {classic, consumer} <= set(remaining)
        assert offsets(classic) == {0: 4, 1: 4, 2: 4}


def test_kafka_python_admin_client_groups_and_offsets(bootstrap: str, sidecar: ServeProcess, unique_name: str) -> None:
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import KafkaAdminClient

    topic = unique_name
    classic, consumer, empty = (f"{unique_name}-{kind}" for kind in ("classic", "consumer", "empty"))
    create_topic(bootstrap, topic, 2)
    commit_offsets(sidecar, empty, [TopicPartition(topic, 0, 7), TopicPartition(topic, 1, 9)])
    admin = KafkaAdminClient(bootstrap_servers=sidecar.bootstrap, request_timeout_ms=20000)
    try:
        with (
            active_member(sidecar, classic, topic, 2, CLASSIC) as classic_member,
            active_member(sidecar, consumer, topic, 2, CONSUMER),
        ):
            # Sets: list_groups merges every broker's answer (see the once-per-group test below).
            ours = {classic, consumer, empty}
            groups = {(g["group_id"], g["group_state"], g["group_type"]) for g in admin.list_groups()}
            assert {g for g in groups if g[0] in ours} == {
                (classic, "Stable", "classic"),
                (consumer, "Stable", "consumer"),
                (empty, "Empty", "classic"),
            }
            by_state = {g["group_id"] for g in admin.list_groups(states_filter=["Empty"])}
            assert by_state & ours == {empty}
            by_type = {g["group_id"] for g in admin.list_groups(types_filter=["consumer"])}
            assert by_type & ours == {consumer}

            # DescribeGroups (kafka-python has no ConsumerGroupDescribe): classic groups are described,
            # a consumer group is GROUP_ID_NOT_FOUND, as in Kafka.
            described = admin.describe_groups([classic, empty, consumer])
            d = described[classic]
            assert (d["error"], d["group_state"], d["protocol_type"], d["protocol_data"]) == (
                None,
                "Stable",
                "consumer",
                "range",
            )
            [m] = d["members"]
            assert m["client_id"] == classic_member.name
            assert m["member_metadata"]["topics"] == [topic]
            assigned = m["member_assignment"]["assigned_partitions"]
            assert [(a["topic"], sorted(a["partitions"])) for a in assigned] == [(topic, [0, 1])]
            assert (described[empty]["group_state"], described[empty]["members"]) == ("Empty", [])
            assert "GroupIdNotFound" in described[consumer]["error"]

            fetched = admin.list_group_offsets({empty: None})[empty]
            assert {tp: om.offset for tp, om in fetched.items()} == {
                KTopicPartition(topic, 0): 7,
                KTopicPartition(topic, 1): 9,
            }
    finally:
        admin.close()


def test_kafka_python_list_groups_names_each_group_once(
    bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    from kafka.admin import KafkaAdminClient

    create_topic(bootstrap, unique_name, 1)  # commits for topics the cluster lacks are refused, as in Kafka
    commit_offsets(sidecar, unique_name, [TopicPartition(unique_name, 0, 1)])
    admin = KafkaAdminClient(bootstrap_servers=sidecar.bootstrap, request_timeout_ms=20000)
    try:
        # In Kafka a broker lists only the groups it coordinates; FindCoordinator names one node here.
        names = [g["group_id"] for g in admin.list_groups()]
    finally:
        admin.close()
    assert names.count(unique_name) == 1, names


def test_offset_delete_refused_while_a_member_subscribes(
    bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    """OffsetDelete (API 47). confluent-kafka 2.16 has no AdminClient.delete_consumer_group_offsets,
    so kafka-python's KafkaAdminClient.delete_group_offsets sends it."""
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import GroupSubscribedToTopicError, NoError

    subscribed, other = unique_name, f"{unique_name}-other"
    create_topic(bootstrap, subscribed, 2)
    create_topic(bootstrap, other, 1)
    admin = KafkaAdminClient(bootstrap_servers=sidecar.bootstrap, request_timeout_ms=20000)
    try:
        for kind, conf in (("classic", CLASSIC), ("consumer", CONSUMER)):
            group = f"{unique_name}-{kind}"
            # Committed before the member joins: a KIP-848 member may only commit partitions it owns.
            commits = [TopicPartition(subscribed, 0, 3), TopicPartition(subscribed, 1, 3), TopicPartition(other, 0, 5)]
            commit_offsets(sidecar, group, commits)
            with active_member(sidecar, group, subscribed, 2, conf):
                result = admin.delete_group_offsets(group, [KTopicPartition(subscribed, 0), KTopicPartition(other, 0)])
                assert result == {
                    KTopicPartition(subscribed, 0): GroupSubscribedToTopicError,
                    KTopicPartition(other, 0): NoError,
                }, kind
                left = admin.list_group_offsets({group: None})[group]
                assert {(tp.topic, tp.partition) for tp in left} == {(subscribed, 0), (subscribed, 1)}, kind
            # Once the member has left, nothing subscribes to the topic any more.
            result = admin.delete_group_offsets(group, [KTopicPartition(subscribed, 0)])
            assert result == {KTopicPartition(subscribed, 0): NoError}, kind
            left = admin.list_group_offsets({group: None})[group]
            assert {(tp.topic, tp.partition): om.offset for tp, om in left.items()} == {(subscribed, 1): 3}, kind
    finally:
        admin.close()


def test_member_ids_handed_out_through_the_gateway_are_random(
    bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    """A classic member id is Kafka's ``<client.id>-<uuid>``, not a guessable counter (issue 14)."""
    import re

    create_topic(bootstrap, unique_name, 1)
    consumer = Consumer(
        {"bootstrap.servers": sidecar.bootstrap, "group.id": unique_name, "client.id": "app", "log_level": 3}
    )
    try:
        consumer.subscribe([unique_name])
        wait_for(lambda: bool(consumer.assignment()), 30, "an assignment", step=lambda: consumer.poll(0.1))
        member_id = consumer.memberid()
    finally:
        consumer.close()
    assert member_id is not None
    assert re.fullmatch(r"app-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", member_id), member_id
