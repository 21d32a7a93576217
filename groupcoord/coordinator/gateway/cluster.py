"""What the gateway knows about the backing cluster: broker addresses and their API versions."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time

from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import decode_response, encode_request
from groupcoord.coordinator.gateway.rewrite import transaction_v2
from groupcoord.coordinator.gateway.upstream import MAX_UPSTREAM_FRAME, open_stream, read_frame
from groupcoord.coordinator.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse

log = logging.getLogger(__name__)

UNSUPPORTED_VERSION = 35
_PROBE_VERSION = 3
_CLIENT_ID = "groupcoord-gateway"


class ClusterUnavailable(ConnectionError):
    pass


async def fetch_api_versions(
    address: tuple[str, int], tls: ssl.SSLContext | None, timeout: float
) -> ApiVersionsResponse:
    reader, writer = await open_stream(address, tls, timeout)
    try:
        version = _PROBE_VERSION
        for correlation_id in (1, 2):
            body = ApiVersionsRequest(client_software_name=_CLIENT_ID, client_software_version="1")
            writer.write(encode_request(RequestHeader(ApiKey.API_VERSIONS, version, correlation_id, _CLIENT_ID), body))
            await writer.drain()
            payload = await asyncio.wait_for(read_frame(reader, MAX_UPSTREAM_FRAME), timeout)
            # A broker answers an ApiVersions version it does not know with error 35 in a v0 body.
            error_code = int.from_bytes(payload[4:6], "big", signed=True)
            body_version = 0 if error_code == UNSUPPORTED_VERSION else version
            _, response = decode_response(ApiKey.API_VERSIONS, body_version, payload)
            assert isinstance(response, ApiVersionsResponse)
            if response.error_code != UNSUPPORTED_VERSION:
                return response
            version = 0
        raise ClusterUnavailable(f"{address[0]}:{address[1]} refused every ApiVersions version")
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()


class ClusterView:
    """Bootstrap addresses, the brokers seen in Metadata answers, and cached ApiVersions."""

    def __init__(
        self, bootstrap: list[tuple[str, int]], tls: ssl.SSLContext | None, timeout: float, versions_ttl: float
    ) -> None:
        self.bootstrap = bootstrap
        self.tls = tls
        self.timeout = timeout
        self.versions_ttl = versions_ttl
        self.brokers: dict[int, tuple[str, int]] = {}
        # Keyed by broker node id; None stands for "whichever bootstrap server answers".
        self._versions: dict[int | None, tuple[float, ApiVersionsResponse]] = {}
        self._ranges: dict[int | None, dict[int, tuple[int, int]]] = {}
        self._transaction_v2: dict[int | None, bool] = {}
        self._locks: dict[int | None, asyncio.Lock] = {}

    def addresses(self, node_id: int | None) -> list[tuple[str, int]]:
        if node_id is not None and node_id in self.brokers:
            return [self.brokers[node_id]]
        return list(self.bootstrap)

    def cached_ranges(self, node_id: int | None) -> dict[int, tuple[int, int]] | None:
        """api key -> (min, max) from the last ApiVersions answer of the broker behind the listener,
        or, until that broker has given one (a client asks for it through the broker's port only
        when it asks ApiVersions there, and one that skips ApiVersions never does), of the
        bootstrap servers (read by serve before it takes clients); None if neither was read."""
        ranges = self._ranges.get(node_id)
        return ranges if ranges is not None else self._ranges.get(None)

    def cached_transaction_v2(self, node_id: int | None) -> bool:
        """Whether the last ApiVersions answer allows TxnOffsetCommit v5 (``rewrite.transaction_v2``):
        the same answer the client's ApiVersions was given."""
        return self._transaction_v2.get(node_id, False)

    async def api_versions(self, node_id: int | None) -> ApiVersionsResponse:
        """The versions of the broker behind a listener (``None``: the bootstrap listener)."""
        lock = self._locks.setdefault(node_id, asyncio.Lock())
        async with lock:
            entry = self._versions.get(node_id)
            if entry is not None and time.monotonic() - entry[0] < self.versions_ttl:
                return entry[1]
            failures = []
            for address in self.addresses(node_id):
                try:
                    response = await fetch_api_versions(address, self.tls, self.timeout)
                except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    failures.append(f"{address[0]}:{address[1]}: {exc}")
                    continue
                self._versions[node_id] = (time.monotonic(), response)
                self._ranges[node_id] = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
                self._transaction_v2[node_id] = transaction_v2(response)
                return response
            if entry is not None:
                # A stale list beats refusing clients while a broker is briefly unreachable.
                return entry[1]
            raise ClusterUnavailable("ApiVersions failed: " + "; ".join(failures))
