"""A client that pipelines group requests with large answers and never reads them holds at most
about ``UNWRITTEN_ANSWER_BYTES`` (plus an answer) of them in the sidecar: its next request waits
until the answers before it are written, as a Kafka broker mutes a connection until its answer is
sent. Before, every request read ahead (up to ``max_in_flight_per_connection``) was answered and
held: 52-66 MB per connection of ShareFetch answers (hostile-input probe). A client that reads
gets every answer, in order."""

from __future__ import annotations

import asyncio
import socket

from groupcoord.coordinator.gateway import ConnectionContext, GatewayConfig, GatewayServer
from groupcoord.coordinator.gateway.connection import UNWRITTEN_ANSWER_BYTES
from groupcoord.coordinator.messages import describe_groups as dg
from groupcoord.coordinator.messages.schema import Message
from groupcoord.local_broker import free_port
from tests.gateway.wire_client import WireClient

DESCRIBE_GROUPS, VERSION = 15, 5
ANSWER_BYTES = 2 * UNWRITTEN_ANSWER_BYTES
PIPELINED = 30


class LargeAnswers:
    """Answers every DescribeGroups with one member holding ``ANSWER_BYTES`` of assignment."""

    def __init__(self) -> None:
        self.answered = 0

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        assert isinstance(request, dg.DescribeGroupsRequest)
        self.answered += 1
        member = dg.DescribeGroupsResponseDescribedGroupMember(member_id="m", member_assignment=b"x" * ANSWER_BYTES)
        return dg.DescribeGroupsResponse(
            groups=[dg.DescribeGroupsResponseDescribedGroup(group_id=g, members=[member]) for g in request.groups]
        )


async def slow_reader(port: int) -> WireClient:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock)
    return WireClient(reader, writer)


def test_a_client_that_does_not_read_holds_few_answers_and_one_that_reads_gets_them_all() -> None:
    async def main() -> None:
        handler = LargeAnswers()
        config = GatewayConfig(bootstrap_servers=[f"127.0.0.1:{free_port()}"], listen_port=0)
        async with GatewayServer(config, handler) as server:
            client = await slow_reader(server.port)
            try:
                sent = [
                    client.send(DESCRIBE_GROUPS, VERSION, dg.DescribeGroupsRequest(groups=[f"g{i}"]))
                    for i in range(PIPELINED)
                ]
                # Every request is read (far fewer than max_in_flight_per_connection) and the
                # handler has had time for all of them; the client reads nothing meanwhile.
                for _ in range(100):
                    await asyncio.sleep(0.02)
                held = handler.answered
                # What the kernel's buffers take on loopback (some MB), the limit, one answer
                # being written and one built: far fewer than the 30 answered before.
                assert held < PIPELINED // 2, held
                for i, cid in enumerate(sent):
                    got, answer = await client.read_as(dg.DescribeGroupsResponse, DESCRIBE_GROUPS, VERSION)
                    assert got == cid and answer.groups[0].group_id == f"g{i}"
                    assert len(answer.groups[0].members[0].member_assignment) == ANSWER_BYTES
                assert handler.answered == PIPELINED
            finally:
                await client.close()

    asyncio.run(main())


def test_requests_held_for_unread_answers_are_not_run_once_the_client_leaves() -> None:
    async def main() -> None:
        handler = LargeAnswers()
        config = GatewayConfig(bootstrap_servers=[f"127.0.0.1:{free_port()}"], listen_port=0)
        async with GatewayServer(config, handler) as server:
            client = await slow_reader(server.port)
            for i in range(PIPELINED):
                client.send(DESCRIBE_GROUPS, VERSION, dg.DescribeGroupsRequest(groups=[f"g{i}"]))
            await asyncio.sleep(0.5)
            held = handler.answered
            await client.close()
            while server.connections:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.2)
            # The requests waiting for room were never begun (a broker would not have read them).
            assert handler.answered <= held + 1 < PIPELINED // 2, (held, handler.answered)

    asyncio.run(main())
