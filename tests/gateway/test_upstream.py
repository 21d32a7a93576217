"""The connection to a broker (``gateway.upstream``): what it frees when closed, how answers pair.

A scripted broker on loopback (``test_streaming``'s) stands for the broker, so each test decides
what comes back on the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.coordinator.gateway import GatewayServer
from groupcoord.coordinator.gateway.upstream import UpstreamConnection
from tests.gateway.test_streaming import FETCH, LOOPS, ScriptedBroker, body_for, framed, request, run
from tests.gateway.wire_client import WireClient


async def answer_each(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
    writer.write(framed(body_for(correlation_id, 100, correlation_id)))
    await writer.drain()


@contextlib.contextmanager
def no_cyclic_collection() -> Iterator[None]:
    """Only reference counting frees objects here: what a cycle holds stays."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


async def freed(refs: list[weakref.ref[Any]], within: float = 5.0) -> bool:
    """Whether every referent is gone within ``within`` seconds (the loop turning meanwhile)."""
    deadline = asyncio.get_running_loop().time() + within
    while any(ref() is not None for ref in refs):
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def _held(refs: list[weakref.ref[Any]]) -> list[str]:
    """What still holds the live referents (for the failure message)."""
    return [
        f"{type(obj).__name__} held by {[type(r).__name__ for r in gc.get_referrers(obj)]}"
        for obj in (ref() for ref in refs)
        if obj is not None
    ]


def _tracked(monkeypatch: pytest.MonkeyPatch) -> list[weakref.ref[Any]]:
    """Weak references to every upstream connection made from now on, and to its protocol."""
    refs: list[weakref.ref[Any]] = []
    init = UpstreamConnection.__init__

    def tracking(self: UpstreamConnection, protocol: Any, address: tuple[str, int]) -> None:
        init(self, protocol, address)
        refs.extend((weakref.ref(self), weakref.ref(protocol)))

    monkeypatch.setattr(UpstreamConnection, "__init__", tracking)
    return refs


# --- a closed connection is freed at once ---------------------------------------------------------
#
# Each upstream connection has a 64 KiB read-ahead buffer, and the gateway runs young collections
# only every 100,000 allocations (runtime/collector.py): a closed connection left as a reference
# cycle held its buffer until then, ~70 KB per connection a client opened and closed.


@pytest.mark.parametrize("by", ["gateway", "broker"])
def test_a_closed_upstream_connection_is_freed_by_reference_counting(by: str) -> None:
    async def main() -> None:
        async with ScriptedBroker(answer_each) as broker:
            with no_cyclic_collection():
                upstream = await UpstreamConnection.open(("127.0.0.1", broker.port), None, 5.0)
                answer = await upstream.send(request(FETCH, 7)[4:], 7, expect_response=True)
                assert await answer == body_for(7, 100, 7)
                refs: list[weakref.ref[Any]] = [weakref.ref(upstream), weakref.ref(upstream._protocol)]
                if by == "broker":
                    broker.connections[0].transport.abort()
                    while not upstream.closed:
                        await asyncio.sleep(0.01)
                await upstream.close()
                del upstream, answer
                assert await freed(refs), _held(refs)

    asyncio.run(main())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_client_connection_closed_frees_its_upstream_connection_at_once(
    loop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refs = _tracked(monkeypatch)

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        with no_cyclic_collection():
            for correlation_id in range(3):
                other = await WireClient.connect("127.0.0.1", server.port)
                other.send_raw(request(FETCH, correlation_id))
                assert await other.read_frame() == body_for(correlation_id, 100, correlation_id)
                await other.close()
            assert len(refs) == 6
            assert await freed(refs), _held(refs)

    run(answer_each, test, loop)
