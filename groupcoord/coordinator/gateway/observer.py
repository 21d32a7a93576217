"""Where the gateway reports what it does, for metrics (``groupcoord.coordinator.observability.gateway``
implements it); here every hook does nothing. The gateway defines the port and the layer above
plugs into it, as ``runtime/shard.py``'s ``ShardObserver`` does, so the gateway imports nothing
of observability. Hooks run on the gateway's loop thread, on the forward path: they must be cheap.
"""

from __future__ import annotations

from groupcoord.coordinator.gateway.upstream import Answer


class GatewayObserver:
    def request(self, key: int) -> None:
        """A client sent a request with API ``key``."""

    def forwarded(self, key: int, size: int, answer: Answer) -> None:
        """A request of ``size`` bytes went to the backing cluster; ``answer`` is its response."""


NO_OBSERVER = GatewayObserver()
