"""Group configs end to end: confluent-kafka's AdminClient sets and reads them through a real
``groupcoord serve``, they survive a restart (read back from the log), and KIP-848 members run
with them (heartbeat interval in every answer, session expiry)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages import consumer_group_describe as cgd
from groupcoord.coordinator.messages import consumer_group_heartbeat as cgh
from groupcoord.coordinator.messages import describe_configs as dc
from groupcoord.coordinator.messages import incremental_alter_configs as iac
from groupcoord.local_broker import free_port
from tests.clients.support import create_topic
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess

HEARTBEAT, DESCRIBE_GROUP, DESCRIBE_CONFIGS, INCREMENTAL_ALTER = 68, 69, 32, 44
GROUP, TOPIC = 32, 2
SESSION, INTERVAL = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
OFFLOAD = "consumer.assignor.offload.enable"
# Broker-level bounds wide enough for a short group session timeout (Kafka's defaults are 45 s).
GROUP_SETTINGS = {
    "group.consumer.min.session.timeout.ms": "2000",
    "group.consumer.min.heartbeat.interval.ms": "500",
}


def _serve(bootstrap: str, topic: str, log: Path, monkeypatch: pytest.MonkeyPatch) -> ServeProcess:
    monkeypatch.setenv("GROUPCOORD_GROUP", json.dumps(GROUP_SETTINGS))
    return ServeProcess(bootstrap, free_port(), topic, log=log).start()


@pytest.fixture
def serve_factory(
    bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, list[ServeProcess]]]:
    started: list[ServeProcess] = []
    yield bootstrap, started
    for serve in started:
        if serve.proc is not None and serve.proc.poll() is None:
            serve.stop()


def _set(admin: AdminClient, group: str, **values: str) -> None:
    entries = [
        ConfigEntry(name.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET)
        for name, value in values.items()
    ]
    futures = admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)])
    for future in futures.values():
        future.result(15)


def _describe(admin: AdminClient, group: str) -> dict[str, ConfigEntry]:
    (future,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
    result: dict[str, ConfigEntry] = future.result(15)
    return result


def _heartbeat_join(group: str, member: str, topic: str) -> cgh.ConsumerGroupHeartbeatRequest:
    return cgh.ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=member,
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=[topic],
        topic_partitions=[],
    )


async def _join(port: int, group: str, topic: str) -> tuple[str, int]:
    """One KIP-848 join; (member id, the heartbeat interval the coordinator answered)."""
    client = await WireClient.connect("127.0.0.1", port)
    try:
        member = str(uuid.uuid4())
        response = await client.call(HEARTBEAT, 1, _heartbeat_join(group, member, topic))
        assert isinstance(response, cgh.ConsumerGroupHeartbeatResponse)
        assert response.error_code == ErrorCode.NONE, response
        return member, response.heartbeat_interval_ms
    finally:
        await client.close()


def test_group_configs_set_read_persisted_and_applied(
    serve_factory: tuple[str, list[ServeProcess]], unique_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap, started = serve_factory
    topic, group, log_topic = unique_name, f"{unique_name}-g", f"gc-cfg-log-{uuid.uuid4().hex[:10]}"
    create_topic(bootstrap, topic, 2)
    serve = _serve(bootstrap, log_topic, tmp_path / "serve1.log", monkeypatch)
    started.append(serve)
    admin = AdminClient({"bootstrap.servers": serve.bootstrap})

    # Never set: every group config, at the broker's value, as a default.
    before = _describe(admin, group)
    assert {name for name in before if name.startswith("consumer.")} == {
        SESSION,
        INTERVAL,
        "consumer.assignment.interval.ms",
        OFFLOAD,
    }
    assert before[SESSION].value == "45000" and before[SESSION].source == ConfigSource.DEFAULT_CONFIG.value

    _set(admin, group, **{SESSION: "3000", INTERVAL: "700"})
    described = _describe(admin, group)
    assert (described[SESSION].value, described[SESSION].source) == ("3000", ConfigSource.GROUP_CONFIG.value)
    assert (described[INTERVAL].value, described[INTERVAL].source) == ("700", ConfigSource.GROUP_CONFIG.value)

    # Out of the broker's bounds: INVALID_CONFIG with Kafka's message, nothing changed.
    with pytest.raises(KafkaException) as caught:
        _set(admin, group, **{SESSION: "1000"})
    error = caught.value.args[0]
    assert error.code() == KafkaError.INVALID_CONFIG
    assert "consumer.session.timeout.ms must be in the range 2000 to 60000 inclusive." in error.str()
    with pytest.raises(KafkaException) as caught:
        _set(admin, group, **{"consumer.no.such.config": "1"})
    assert caught.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert _describe(admin, group)[SESSION].value == "3000"
    # Kafka's offload switch is accepted and kept (conformance review N5); the share groups' one
    # (a later Kafka feature) is not.
    _set(admin, group, **{OFFLOAD: "false"})
    offload = _describe(admin, group)[OFFLOAD]
    assert (offload.value, offload.source) == ("false", ConfigSource.GROUP_CONFIG.value)
    with pytest.raises(KafkaException) as caught:
        _set(admin, group, **{"share.assignor.offload.enable": "true"})
    assert caught.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "streams groups or a share-group feature" in caught.value.args[0].str()

    # Applied: the heartbeat answer carries the group's interval; another group keeps the broker's.
    member, interval = asyncio.run(_join(serve.port, group, topic))
    assert interval == 700
    assert asyncio.run(_join(serve.port, f"{group}-other", topic))[1] == 5000

    # The member sends nothing more: it is fenced after the group's 3 s session timeout, long
    # before the broker's 45 s.
    async def members_left() -> int:
        client = await WireClient.connect("127.0.0.1", serve.port)
        try:
            deadline = time.monotonic() + 30
            while True:
                response = await client.call(DESCRIBE_GROUP, 0, cgd.ConsumerGroupDescribeRequest(group_ids=[group]))
                assert isinstance(response, cgd.ConsumerGroupDescribeResponse)
                members = response.groups[0].members
                if not members or time.monotonic() > deadline:
                    return len(members)
                await asyncio.sleep(0.5)
        finally:
            await client.close()

    assert member and asyncio.run(members_left()) == 0

    # Persisted: a new process reads them back from the log.
    serve.stop()
    again = _serve(bootstrap, log_topic, tmp_path / "serve2.log", monkeypatch)
    started.append(again)
    admin = AdminClient({"bootstrap.servers": again.bootstrap})
    deadline = time.monotonic() + 30
    while True:
        try:
            reread = _describe(admin, group)
            break
        except KafkaException:
            # The restarted process may still be loading its shards.
            assert time.monotonic() < deadline
            time.sleep(0.5)
    assert (reread[SESSION].value, reread[SESSION].source) == ("3000", ConfigSource.GROUP_CONFIG.value)
    assert reread[INTERVAL].value == "700"
    assert asyncio.run(_join(again.port, group, topic))[1] == 700


def test_mixed_requests_split_between_sidecar_and_cluster_in_request_order(
    serve_factory: tuple[str, list[ServeProcess]], unique_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap, started = serve_factory
    topic, group = unique_name, f"{unique_name}-g"
    create_topic(bootstrap, topic, 1)
    serve = _serve(bootstrap, f"gc-cfg-log-{uuid.uuid4().hex[:10]}", tmp_path / "serve.log", monkeypatch)
    started.append(serve)

    async def main() -> None:
        client = await WireClient.connect("127.0.0.1", serve.port)
        try:
            # validate_only: answered, nothing stored.
            alter = iac.IncrementalAlterConfigsRequest(
                resources=[
                    iac.IncrementalAlterConfigsRequestAlterConfigsResource(
                        resource_type=GROUP,
                        resource_name=group,
                        configs=[iac.IncrementalAlterConfigsRequestAlterableConfig(name=INTERVAL, value="900")],
                    )
                ],
                validate_only=True,
            )
            answer = await client.call(INCREMENTAL_ALTER, 0, alter)
            assert isinstance(answer, iac.IncrementalAlterConfigsResponse)
            assert [(r.error_code, r.resource_name) for r in answer.responses] == [(0, group)]

            request = dc.DescribeConfigsRequest(
                resources=[
                    dc.DescribeConfigsResource(resource_type=GROUP, resource_name=group, configuration_keys=[INTERVAL]),
                    dc.DescribeConfigsResource(resource_type=TOPIC, resource_name=topic, configuration_keys=None),
                    dc.DescribeConfigsResource(
                        resource_type=GROUP, resource_name=f"{group}-2", configuration_keys=None
                    ),
                ],
                include_synonyms=True,
            )
            described = await client.call(DESCRIBE_CONFIGS, 1, request)
            assert isinstance(described, dc.DescribeConfigsResponse)
            assert [(r.resource_type, r.resource_name) for r in described.results] == [
                (GROUP, group),
                (TOPIC, topic),
                (GROUP, f"{group}-2"),
            ]
            first = described.results[0]
            assert [(c.name, c.value, c.config_source) for c in first.configs] == [(INTERVAL, "5000", 5)]
            assert [(s.name, s.value) for s in first.configs[0].synonyms] == [
                ("group.consumer.heartbeat.interval.ms", "5000")
            ]
            # The topic's answer is the cluster's: no group config in it.
            assert all(c.name not in (SESSION, INTERVAL) for c in described.results[1].configs)
            assert {c.name for c in described.results[2].configs if c.name.startswith("consumer.")} == {
                SESSION,
                INTERVAL,
                "consumer.assignment.interval.ms",
                OFFLOAD,
            }
        finally:
            await client.close()

    asyncio.run(main())
