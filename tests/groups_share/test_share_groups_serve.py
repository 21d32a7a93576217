"""Share-group membership through a real ``groupcoord serve`` (share_groups_enabled) in front of
the local broker, over the wire with the project's own codec: ApiVersions offers ShareGroupHeartbeat,
ShareGroupDescribe, ShareFetch and ShareAcknowledge, members join and share the partitions,
ListGroups lists the group as a share group, its configs are set and read, a consumer-protocol
heartbeat for the same id is refused, and a restarted process rebuilds the group from the log."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages import api_versions as av
from groupcoord.coordinator.messages import consumer_group_heartbeat as cgh
from groupcoord.coordinator.messages import list_groups as lg
from groupcoord.coordinator.messages import share_group_describe as sgd
from groupcoord.coordinator.messages import share_group_heartbeat as sgh
from groupcoord.local_broker import free_port
from tests.clients.support import create_topic
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess

pytestmark = pytest.mark.integration

API_VERSIONS, LIST_GROUPS, CONSUMER_HEARTBEAT, SHARE_HEARTBEAT, SHARE_DESCRIBE = 18, 16, 68, 76, 77


@pytest.fixture
def serves(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[ServeProcess]]:
    monkeypatch.setenv("GROUPCOORD_SHARE_GROUPS_ENABLED", "true")
    started: list[ServeProcess] = []
    yield started
    for serve in started:
        if serve.proc is not None and serve.proc.poll() is None:
            serve.stop()


async def _call(port: int, key: int, version: int, body: object) -> object:
    client = await WireClient.connect("127.0.0.1", port)
    try:
        return await client.call(key, version, body)  # type: ignore[arg-type]
    finally:
        await client.close()


def _beat(
    port: int, group: str, member: str, epoch: int, topics: list[str] | None = None
) -> sgh.ShareGroupHeartbeatResponse:
    request = sgh.ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=topics
    )
    response = asyncio.run(_call(port, SHARE_HEARTBEAT, 1, request))
    assert isinstance(response, sgh.ShareGroupHeartbeatResponse)
    return response


def _describe(port: int, group: str) -> sgd.ShareGroupDescribeResponseDescribedGroup:
    response = asyncio.run(_call(port, SHARE_DESCRIBE, 1, sgd.ShareGroupDescribeRequest(group_ids=[group])))
    assert isinstance(response, sgd.ShareGroupDescribeResponse)
    (described,) = response.groups
    return described


def test_share_group_membership_through_serve(
    serves: list[ServeProcess], bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    topic, group, log_topic = unique_name, f"{unique_name}-sg", f"gc-share-log-{uuid.uuid4().hex[:10]}"
    create_topic(bootstrap, topic, 2)
    serve = ServeProcess(bootstrap, free_port(), log_topic, log=tmp_path / "serve1.log").start()
    serves.append(serve)
    port = serve.port

    versions = asyncio.run(
        _call(port, API_VERSIONS, 3, av.ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    )
    assert isinstance(versions, av.ApiVersionsResponse)
    offered = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
    assert offered[SHARE_HEARTBEAT] == (1, 1) and offered[SHARE_DESCRIBE] == (1, 1)
    assert offered[78] == (1, 2) and offered[79] == (1, 2)  # ShareFetch, ShareAcknowledge (v2: Kafka 4.2)

    # Three members on two partitions: every member gets work, every partition is assigned.
    members = [str(uuid.uuid4()) for _ in range(3)]
    epochs = {}
    for member in members:
        r = _beat(port, group, member, 0, [topic])
        assert r.error_code == ErrorCode.NONE, r
        epochs[member] = r.member_epoch
    for member in members:
        r = _beat(port, group, member, epochs[member])
        assert r.error_code == ErrorCode.NONE, r
    described = _describe(port, group)
    assert (described.error_code, described.group_state, described.assignor_name) == (0, "Stable", "simple")
    assert {m.member_id for m in described.members} == set(members)
    assigned = {
        m.member_id: {p for tp in m.assignment.topic_partitions for p in tp.partitions} for m in described.members
    }
    assert all(assigned.values()) and set().union(*assigned.values()) == {0, 1}
    assert {tp.topic_name for m in described.members for tp in m.assignment.topic_partitions} == {topic}

    # ListGroups by type; the group id is taken for the consumer protocol.
    listed = asyncio.run(_call(port, LIST_GROUPS, 5, lg.ListGroupsRequest(types_filter=["share"])))
    assert isinstance(listed, lg.ListGroupsResponse)
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed.groups] == [
        (group, "share", "Stable", "share")
    ]
    refused = asyncio.run(
        _call(
            port,
            CONSUMER_HEARTBEAT,
            1,
            cgh.ConsumerGroupHeartbeatRequest(
                group_id=group,
                member_id=str(uuid.uuid4()),
                member_epoch=0,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=[topic],
                topic_partitions=[],
            ),
        )
    )
    assert isinstance(refused, cgh.ConsumerGroupHeartbeatResponse)
    assert refused.error_code == ErrorCode.GROUP_ID_NOT_FOUND

    # share.* group configs through IncrementalAlterConfigs/DescribeConfigs.
    admin = AdminClient({"bootstrap.servers": serve.bootstrap})
    entry = ConfigEntry("share.record.lock.duration.ms", "20000", incremental_operation=AlterConfigOpType.SET)
    for future in admin.incremental_alter_configs(
        [ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])]
    ).values():
        future.result(15)
    (future,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
    configs = future.result(15)
    assert configs["share.record.lock.duration.ms"].value == "20000"
    assert configs["share.isolation.level"].value == "read_uncommitted"

    # A new process on the same log rebuilds the group from its records.
    before = _describe(port, group)
    serve.stop()
    serve = ServeProcess(bootstrap, free_port(), log_topic, log=tmp_path / "serve2.log").start()
    serves.append(serve)
    after = _describe(serve.port, group)
    assert after == before

    # Everyone leaves; the empty group is deleted like any other.
    for member in members:
        assert _beat(serve.port, group, member, -1).error_code == ErrorCode.NONE
    assert _describe(serve.port, group).group_state == "Empty"
    admin = AdminClient({"bootstrap.servers": serve.bootstrap})
    for future in admin.delete_consumer_groups([group]).values():
        future.result(15)
    assert _describe(serve.port, group).error_code == ErrorCode.GROUP_ID_NOT_FOUND
