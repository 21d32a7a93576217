"""Bounded requests: string and element limits, byte budget, read deadline, idle and per-address limits.

Each attack is checked to close (or stall) only the attacker's connection, never reach the group
handler, and leave another client working.
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
import struct
from pathlib import Path

import pytest

from groupcoord.coordinator.gateway import GatewayServer, TlsSettings
from groupcoord.coordinator.gateway.codec import MAX_STRING_BYTES, CodecError, decode_struct, encode_struct
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import encode_request
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.messages.describe_groups import DescribeGroupsRequest
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from tests.gateway.test_integration import _make_cert
from tests.gateway.test_server import HEARTBEAT, ScriptedHandler, connect, heartbeat, run

DESCRIBE_GROUPS = 15
OFFSET_COMMIT = 8
CONSUMER_GROUP_HEARTBEAT = 68
OFFSET_DELETE = 47


def test_flexible_strings_are_capped_at_32767_bytes() -> None:
    at_limit = ConsumerGroupHeartbeatRequest(group_id="g" * MAX_STRING_BYTES, member_id="m")
    encoded = encode_struct(at_limit, 0, True)
    assert decode_struct(ConsumerGroupHeartbeatRequest, encoded, 0, True).group_id == at_limit.group_id
    with pytest.raises(CodecError, match="32767-byte limit"):
        encode_struct(ConsumerGroupHeartbeatRequest(group_id="g" * (MAX_STRING_BYTES + 1)), 0, True)
    # Hand-built: compact length 40,001 (varint of n + 1), then the bytes.
    n = 40_000
    raw = bytearray()
    value = n + 1
    while value > 0x7F:
        raw.append((value & 0x7F) | 0x80)
        value >>= 7
    raw.append(value)
    raw += b"g" * n
    with pytest.raises(CodecError, match="32767-byte limit"):
        decode_struct(ConsumerGroupHeartbeatRequest, bytes(raw) + b"\x00" * 64, 0, True)


def _oversized_group_frame() -> bytes:
    # Encode at the limit, then splice a longer group id in: the writer itself refuses to make one.
    body = ConsumerGroupHeartbeatRequest(group_id="x", member_id="m", member_epoch=0)
    frame = bytearray(encode_request(RequestHeader(CONSUMER_GROUP_HEARTBEAT, 0, 7, "attacker"), body))
    marker = b"\x02x"  # compact length 1 + 1, "x"
    at = frame.index(marker)
    big = 1_100_000
    varint = bytearray()
    value = big + 1
    while value > 0x7F:
        varint.append((value & 0x7F) | 0x80)
        value >>= 7
    varint.append(value)
    frame[at : at + 2] = varint + b"x" * big
    frame[0:4] = struct.pack(">i", len(frame) - 4)
    return bytes(frame)


def test_megabyte_group_id_closes_only_the_attacker() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        bad, good = await connect(server), await connect(server)
        bad.send_raw(_oversized_group_frame())
        assert await bad.closed_by_peer()
        assert await good.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        assert [name for _, _, name in handler.calls] == ["HeartbeatRequest"]
        await bad.close()
        await good.close()

    run(body)


def test_too_many_elements_close_the_connection_before_the_handler() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        bad, good = await connect(server), await connect(server)
        bad.send(DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[f"g{i}" for i in range(1001)]))
        assert await bad.closed_by_peer()
        commit = OffsetCommitRequest(
            group_id="g",
            topics=[
                OffsetCommitRequestTopic(
                    name=f"t{t}",
                    partitions=[OffsetCommitRequestPartition(partition_index=p) for p in range(100)],
                )
                for t in range(10)
            ],
        )
        worse = await connect(server)
        worse.send(OFFSET_COMMIT, 8, commit)  # 10 topics + 1,000 partitions
        assert await worse.closed_by_peer()
        assert await good.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        assert [name for _, _, name in handler.calls] == ["HeartbeatRequest"]
        for client in (bad, worse, good):
            await client.close()

    run(body, max_group_request_elements=1000)


def test_partial_frame_must_complete_within_the_read_deadline() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        slow, good = await connect(server), await connect(server)
        slow.send_raw(struct.pack(">i", 1000) + b"\x00\x0c")  # a frame that never completes
        loop = asyncio.get_running_loop()
        start = loop.time()
        assert await slow.closed_by_peer(timeout=5)
        assert loop.time() - start >= 0.2
        # Slowloris on the length prefix itself.
        loris = await connect(server)
        loris.send_raw(b"\x00")
        assert await loris.closed_by_peer(timeout=5)
        assert await good.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        assert server.buffer_budget.used == 0
        for client in (slow, loris, good):
            await client.close()

    run(body, request_read_timeout_ms=300)


def test_idle_connections_close_but_ones_owed_an_answer_do_not() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        idle, waiting = await connect(server), await connect(server)
        waiting.send(HEARTBEAT, 4, heartbeat("slow"))
        assert await idle.closed_by_peer(timeout=5)
        _, answer = await waiting.read(HEARTBEAT, 4)
        assert answer == HeartbeatResponse()
        # Answered: now it is idle too.
        assert await waiting.closed_by_peer(timeout=5)
        fresh = await connect(server)
        assert await fresh.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        for client in (idle, waiting, fresh):
            await client.close()

    run(body, ScriptedHandler({"slow": 1.0}), connections_max_idle_ms=300)


def test_connections_per_address_are_limited() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        first, second = await connect(server), await connect(server)
        third = await connect(server)
        assert await third.closed_by_peer()
        assert await first.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        await first.close()
        await asyncio.sleep(0.1)
        fourth = await connect(server)
        assert await fourth.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        for client in (second, third, fourth):
            await client.close()

    run(body, max_connections_per_ip=2, max_connections=100)


def _padded_heartbeat(correlation_id: int, size: int) -> bytes:
    base = len(encode_request(RequestHeader(HEARTBEAT, 3, correlation_id, "wire-test"), heartbeat()))
    padded = HeartbeatRequest(group_id="g", generation_id=0, member_id="m" * (1 + size - base))
    frame = encode_request(RequestHeader(HEARTBEAT, 3, correlation_id, "wire-test"), padded)
    assert len(frame) == size
    return frame


def test_buffered_bytes_are_bounded_across_connections() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        holder, queued = await connect(server), await connect(server)
        big = _padded_heartbeat(1, 804)  # 800-byte frame body
        holder.send_raw(big[:100])  # holds 800 bytes of budget with a partial frame
        await asyncio.sleep(0.2)
        assert server.buffer_budget.used == 800
        queued.send_raw(_padded_heartbeat(1, 804))
        with pytest.raises(TimeoutError):
            await queued.read(HEARTBEAT, 3, timeout=0.5)  # waits for budget, unread
        assert server.buffer_budget.used <= server.buffer_budget.capacity
        holder.send_raw(big[100:])
        _, first = await holder.read(HEARTBEAT, 3)
        _, second = await queued.read(HEARTBEAT, 3)
        assert first == second == HeartbeatResponse()
        await asyncio.sleep(0.05)
        assert server.buffer_budget.used == 0
        for client in (holder, queued):
            await client.close()

    run(body, max_buffered_bytes=1000)


def test_error_messages_are_truncated() -> None:
    from groupcoord.coordinator.gateway.limits import MAX_ERROR_MESSAGE_CHARS, truncate_error_messages
    from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse

    response = ConsumerGroupHeartbeatResponse(error_code=42, error_message="r" * 30_000)
    truncate_error_messages(response)
    assert response.error_message is not None
    assert len(response.error_message) == MAX_ERROR_MESSAGE_CHARS + 3


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_tls_handshakes_in_progress_count_and_time_out(tmp_path: Path) -> None:
    cert, key = _make_cert(tmp_path)

    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        # Two raw TCP connections that never say hello hold both slots...
        stalled = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(2)]
        await asyncio.sleep(0.05)
        assert len(server.connections) == 2
        ctx = ssl.create_default_context(cafile=str(cert))
        # ...so a third is refused at once, before any handshake...
        with pytest.raises((ConnectionError, ssl.SSLError)):
            await asyncio.wait_for(asyncio.open_connection("127.0.0.1", server.port, ssl=ctx), 2)
        # ...until their handshake deadline passes.
        for r, _ in stalled:
            assert await asyncio.wait_for(r.read(1), 5) == b""
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=ctx)
        writer.write(encode_request(RequestHeader(HEARTBEAT, 4, 1, "tls"), heartbeat()))
        await writer.drain()
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        assert len(await reader.readexactly(size)) == size
        writer.close()
        for _, w in stalled:
            w.close()

    run(body, max_connections=2, tls_handshake_timeout_ms=300, listener_tls=TlsSettings(certfile=cert, keyfile=key))


def test_large_group_frames_are_refused_before_decoding() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        bad, good = await connect(server), await connect(server)
        bad.send(DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[f"group-{i:06d}" for i in range(500)]))
        assert await bad.closed_by_peer()
        assert await good.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        assert [name for _, _, name in handler.calls] == ["HeartbeatRequest"]
        for client in (bad, good):
            await client.close()

    run(body, max_group_request_bytes=4096)


def test_small_requests_are_not_starved_by_large_partial_frames() -> None:
    from groupcoord.coordinator.gateway.limits import ByteBudget

    async def main() -> None:
        budget = ByteBudget(1000, reserve=200, small=100)
        assert await budget.acquire(5000) == 800  # a large frame takes at most capacity - reserve
        blocked_large = asyncio.ensure_future(budget.acquire(300))
        await asyncio.sleep(0)
        assert not blocked_large.done()
        assert await asyncio.wait_for(budget.acquire(100), 1) == 100  # the reserve serves small ones
        assert await asyncio.wait_for(budget.acquire(100), 1) == 100
        blocked_small = asyncio.ensure_future(budget.acquire(50))
        await asyncio.sleep(0)
        assert not blocked_small.done() and budget.used == 1000
        budget.release(800)
        await asyncio.sleep(0)
        assert blocked_small.done() and blocked_large.done()
        assert budget.used == 200 + 50 + 300
        blocked_large.cancel()

    asyncio.run(main())


def test_error_messages_below_the_top_are_truncated_and_lists_without_any_are_not_walked() -> None:
    from groupcoord.coordinator.gateway.limits import MAX_ERROR_MESSAGE_CHARS, _message_paths, truncate_error_messages
    from groupcoord.coordinator.messages.describe_groups import (
        DescribeGroupsResponse,
        DescribeGroupsResponseDescribedGroup,
    )
    from groupcoord.coordinator.messages.list_groups import ListGroupsResponse
    from groupcoord.coordinator.messages.offset_fetch import OffsetFetchResponse, OffsetFetchResponseGroup

    described = DescribeGroupsResponse(
        groups=[DescribeGroupsResponseDescribedGroup(group_id=str(i), error_message="d" * 9_000) for i in range(3)]
    )
    fetched = OffsetFetchResponse(groups=[OffsetFetchResponseGroup(group_id="g", error_code=15)])
    truncate_error_messages(described)
    truncate_error_messages(fetched)
    assert {len(g.error_message or "") for g in described.groups} == {MAX_ERROR_MESSAGE_CHARS + 3}
    # ListGroups carries no error message anywhere: its 100,000 entries are never visited.
    assert _message_paths(ListGroupsResponse) == ()
    assert _message_paths(DescribeGroupsResponse) == (("groups", "nested"),)
