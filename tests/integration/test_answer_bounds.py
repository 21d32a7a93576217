"""Review scenario S3 against a real ``serve``: one small ConsumerGroupDescribe naming a large
group 100 times is answered within the answer cap, the process's memory stays bounded, and
another client is served meanwhile."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import encode_request
from groupcoord.coordinator.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.offset_commit import OffsetCommitResponse
from groupcoord.coordinator.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
)
from groupcoord.local_broker import free_port
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess
from tests.security.test_authentication import commit_request

pytestmark = pytest.mark.integration

BIG = 32_767
MEMBERS = 40  # about 4 MB described; the review's 300 made one copy about 30 MB
CAP = 8 * 1024 * 1024


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture
def serve(bootstrap: str, unique_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServeProcess]:
    monkeypatch.setenv("GROUPCOORD_GATEWAY__MAX_GROUP_RESPONSE_BYTES", str(CAP))
    monkeypatch.setenv("GROUPCOORD_LOG_LEVEL", "INFO")
    process = ServeProcess(bootstrap, free_port(), unique_name, partitions=2, log=tmp_path / "serve.log").start()
    try:
        yield process
    finally:
        process.stop()


async def _until_served(client: WireClient, group: str, topic: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        answer = await client.call_as(OffsetCommitResponse, 8, 8, commit_request(group, topic, 1))
        if answer.topics[0].partitions[0].error_code == 0:
            return
        assert time.monotonic() < deadline, "the sidecar never served"
        await asyncio.sleep(0.2)


def test_describe_naming_a_large_group_100_times_is_bounded(
    serve: ServeProcess, bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    topic = f"{unique_name}-t"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    proc = serve.proc
    assert proc is not None

    async def scenario() -> None:
        attacker = await WireClient.connect("127.0.0.1", serve.port)
        await _until_served(attacker, "bystander", topic)
        for i in range(MEMBERS):
            tag = f"{i:04d}{uuid.uuid4().hex}"
            joined = await attacker.call_as(
                ConsumerGroupHeartbeatResponse,
                68,
                1,
                ConsumerGroupHeartbeatRequest(
                    group_id="big",
                    member_id=(tag * BIG)[:BIG],
                    member_epoch=0,
                    instance_id=("i" + tag * BIG)[:BIG],
                    rack_id=("r" + tag * BIG)[:BIG],
                    rebalance_timeout_ms=30_000,
                    subscribed_topic_names=[topic],
                    topic_partitions=[],
                ),
            )
            assert joined.error_code == 0, joined.error_message
        before = rss_bytes(proc.pid)
        frame = encode_request(RequestHeader(69, 0, 777, "s3"), ConsumerGroupDescribeRequest(group_ids=["big"] * 100))
        assert len(frame) < 1300
        attacker.send_raw(frame)
        # Another client is answered while the big answer is built and sent.
        bystander = await WireClient.connect("127.0.0.1", serve.port)
        fetched = await bystander.call_as(
            OffsetFetchResponse,
            9,
            8,
            OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id="bystander", topics=None)]),
        )
        assert fetched.groups[0].error_code == 0
        answer = await attacker.read_frame(timeout=60)
        assert len(answer) <= CAP
        after = rss_bytes(proc.pid)
        # Named once, the group fits and is described in full.
        (once,) = (
            await attacker.call_as(
                ConsumerGroupDescribeResponse, 69, 0, ConsumerGroupDescribeRequest(group_ids=["big"])
            )
        ).groups
        assert once.error_code == 0 and len(once.members) == MEMBERS
        # Without the bound: 100 copies of about 4 MB each, encoded and held at once.
        assert after - before < 150 * 1024 * 1024, (before, after)
        await attacker.close()
        await bystander.close()

    asyncio.run(asyncio.wait_for(scenario(), 240))
    text = (tmp_path / "serve.log").read_text()
    assert "MAX_POLL" not in text and "fenced" not in text
