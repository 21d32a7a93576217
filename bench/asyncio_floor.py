"""The floor under a steady heartbeat's serve CPU: a bare asyncio server on this machine, now.

    python bench/asyncio_floor.py [--members 5000] [--seconds 20] [--interval-ms 5000]
                                  [--event-loop auto|uvloop|asyncio]

A server process that does nothing but answer each length-prefixed frame with a fixed frame the
size of a steady ConsumerGroupHeartbeat answer (an asyncio Protocol: one recv, one send and the
loop's epoll per request, no Kafka, no group), driven like the large-group bench's steady phase:
``members`` connections, each sending one heartbeat-sized frame every interval (spread, each
with its own phase). Its CPU seconds per request are what any CPython asyncio server pays for
the sockets alone on this machine at this moment (loopback TCP sends do the receiver's work
too, and the machine is shared): the large-group bench reports its serve CPU per heartbeat
beside this figure from the same run. ``--event-loop`` picks the server's loop as ``serve``'s
``event_loop`` setting does (``auto``: uvloop when installed); the driving client always runs on
asyncio's own loop, so only the server's loop differs between two runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

from groupcoord.coordinator.gateway.event_loop import EVENT_LOOPS, loop_factory

# Sizes of a steady ConsumerGroupHeartbeat v1 request and answer of the large-group bench.
_REQUEST = (76).to_bytes(4, "big") + b"r" * 76
_ANSWER = (56).to_bytes(4, "big") + b"a" * 56


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Answer(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without deriving from it.
        self.transport, self.buf = cast(asyncio.Transport, transport), b""

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 4:
            end = 4 + int.from_bytes(self.buf[:4], "big")
            if len(self.buf) < end:
                return
            self.buf = self.buf[end:]
            self.transport.write(_ANSWER)


async def _serve() -> None:
    server = await asyncio.get_running_loop().create_server(_Answer, "127.0.0.1", 0, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()


async def _drive(port: int, pid: int, members: int, seconds: float, interval_s: float) -> tuple[int, float]:
    gate = asyncio.Semaphore(200)

    async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        async with gate:
            return await asyncio.open_connection("127.0.0.1", port)

    conns = await asyncio.gather(*(connect() for _ in range(members)))
    answered = 0
    rng = random.Random(7)
    cpu0, stop = cpu_seconds(pid), time.perf_counter() + seconds

    async def member(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, phase: float) -> None:
        nonlocal answered
        await asyncio.sleep(phase)
        while time.perf_counter() < stop:
            writer.write(_REQUEST)
            await reader.readexactly(len(_ANSWER))
            answered += 1
            await asyncio.sleep(interval_s)

    await asyncio.gather(*(member(r, w, rng.random() * interval_s) for r, w in conns))
    used = cpu_seconds(pid) - cpu0
    for _, writer in conns:
        writer.close()
    return answered, used


def floor(
    members: int = 5000, seconds: float = 20.0, interval_ms: int = 5000, event_loop: str = "asyncio"
) -> dict[str, Any]:
    """Serve CPU per request of the bare server (its own process, on ``event_loop``), ``members``
    connections."""
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--event-loop", event_loop], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        answered, used = asyncio.run(_drive(port, server.pid, members, seconds, interval_ms / 1000))
    finally:
        server.kill()
        server.wait(30)
    return {
        "event_loop": "uvloop" if loop_factory(event_loop) else "asyncio",
        "members": members,
        "requests": answered,
        "server_cpu_s": used,
        "server_cpu_ms_per_request": used * 1000 / answered if answered else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval-ms", type=int, default=5000)
    parser.add_argument("--event-loop", choices=EVENT_LOOPS, default="asyncio", help="the server's loop")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        with asyncio.Runner(loop_factory=loop_factory(args.event_loop)) as runner:
            runner.run(_serve())
        return
    print(json.dumps(floor(args.members, args.seconds, args.interval_ms, args.event_loop), indent=2))


if __name__ == "__main__":
    main()
