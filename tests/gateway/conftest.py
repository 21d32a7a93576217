"""Gateway fixtures: a GatewayServer on its own event loop thread, so blocking clients can use it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.coordinator.gateway import GatewayConfig, GatewayServer
from tests.gateway.fakes import FakeGroupHandler


class GatewayThread:
    def __init__(self, config: GatewayConfig, handler: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.server = GatewayServer(config, handler)
        self.handler = handler
        self._thread = threading.Thread(target=self.loop.run_forever, name="gateway-loop", daemon=True)

    def __enter__(self) -> GatewayThread:
        self._thread.start()
        self.call(self.server.start())
        return self

    def __exit__(self, *exc: object) -> None:
        self.call(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    def call(self, coro: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap


@pytest.fixture
def gateway(bootstrap: str) -> Iterator[GatewayThread]:
    config = GatewayConfig(bootstrap_servers=bootstrap, listen_port=0)
    with GatewayThread(config, FakeGroupHandler()) as running:
        yield running
