"""The metrics of one ``groupcoord serve`` process: what ``groupcoord.coordinator.server`` wires in."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sized
from typing import Any

from groupcoord.coordinator.groups.coordinator_state import GroupCoordinatorState
from groupcoord.coordinator.observability import gateway
from groupcoord.coordinator.observability.lag import Committed, LagMonitor, committed_offsets
from groupcoord.coordinator.observability.metrics import ShardCollector, ShardMetrics, on_loop
from groupcoord.coordinator.observability.registry import REGISTRY
from groupcoord.coordinator.runtime.shard import Shard

_LOOP_TIMEOUT_S = 10.0


class ServeMetrics:
    """Registers the gauges over this process's shards (and, with ``lag_interval_ms``, the
    consumer lag) in ``REGISTRY`` on ``start``, and removes them on ``close``."""

    def __init__(
        self,
        shards: Callable[[], Iterable[Shard[GroupCoordinatorState]]],
        client_config: dict[str, Any],
        lag_interval_ms: int,
        lag_max_partitions: int,
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.shards = shards
        self.observer = ShardMetrics()
        self.collector = ShardCollector(self.loop, shards)
        self.lag: LagMonitor | None = None
        if lag_interval_ms > 0:
            self.lag = LagMonitor(client_config, self._committed, lag_interval_ms / 1000, lag_max_partitions)

    def _committed(self, limit: int) -> tuple[list[Committed], int]:
        return on_loop(self.loop, lambda: committed_offsets(list(self.shards()), limit), _LOOP_TIMEOUT_S)

    @staticmethod
    def watch_connections(connections: Sized) -> None:
        gateway.connections(lambda: len(connections))

    def start(self) -> None:
        REGISTRY.register(self.collector)
        if self.lag is not None:
            REGISTRY.register(self.lag)
            self.lag.start()

    async def close(self) -> None:
        REGISTRY.unregister(self.collector)
        if self.lag is not None:
            REGISTRY.unregister(self.lag)
            # Its refresh may be waiting for this loop: close it from another thread.
            await asyncio.to_thread(self.lag.close)
