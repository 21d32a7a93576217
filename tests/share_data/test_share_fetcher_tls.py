"""The share data path's own reads on a cluster reached over TLS. The local broker speaks no TLS,
so a gateway with a TLS listener in front of it stands in for a TLS-only cluster (as in
``tests/gateway/test_integration.py``): Metadata there names its TLS broker ports, and the fetcher
reads the leader through them with the gateway's ``upstream_tls`` context."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from groupcoord.coordinator.gateway import GatewayConfig, TlsSettings
from groupcoord.coordinator.service.share_fetcher import ShareRecordFetcher
from tests.gateway.clients import create_topic, produce
from tests.gateway.conftest import GatewayThread
from tests.gateway.fakes import FakeGroupHandler
from tests.gateway.test_integration import _make_cert

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate"),
]


def test_the_share_fetcher_reads_a_tls_cluster(bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    cert, key = _make_cert(tmp_path)
    create_topic(bootstrap, unique_name, 1)
    produce(bootstrap, unique_name, 5, 1)
    front = GatewayConfig(
        bootstrap_servers=bootstrap, listen_port=0, listener_tls=TlsSettings(certfile=cert, keyfile=key)
    )
    with GatewayThread(front, FakeGroupHandler()) as tls_cluster:
        host, port = tls_cluster.bootstrap.rsplit(":", 1)

        async def read() -> tuple[tuple[int, int] | None, list[tuple[int, int]], tuple[str, int]]:
            fetcher = ShareRecordFetcher([(host, int(port))], TlsSettings(cafile=cert).client_context(), 10)
            try:
                ends = await fetcher.offsets(unique_name, 0)
                leader = await fetcher.leader(unique_name, 0)
                assert leader is not None
                got = await fetcher.fetch(leader, [(unique_name, 0, 0)], 1 << 20, 100, False)
                return ends, [(b.first, b.last) for b in got[(unique_name, 0)].batches], leader.address
            finally:
                await fetcher.close()

        ends, batches, leader = asyncio.run(read())
    assert ends == (0, 5)
    assert batches and batches[0][0] == 0 and batches[-1][1] == 4
    assert leader[1] != int(bootstrap.rsplit(":", 1)[1])  # the TLS front's broker port, not the broker's
