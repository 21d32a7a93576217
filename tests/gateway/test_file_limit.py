"""serve under an open-file limit too low for max_connections: the connections it cannot carry are
refused and closed, not left hanging in the listen backlog while asyncio logs an EMFILE traceback
per accept attempt (tens of megabytes a minute), and the clients it admitted keep working."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from groupcoord.coordinator.gateway.file_limit import connection_ceiling
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataResponse
from groupcoord.local_broker import free_port
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess, serving

# serve, with its soft and hard RLIMIT_NOFILE set to LIMIT before it starts.
LIMIT = 300
_LIMITED = (
    "import resource, runpy, sys; "
    f"resource.setrlimit(resource.RLIMIT_NOFILE, ({LIMIT}, {LIMIT})); "
    "sys.argv = ['groupcoord', *sys.argv[1:]]; "
    "runpy.run_module('groupcoord.cli.main', run_name='__main__')"
)


def test_the_ceiling_keeps_headroom_and_admits_at_least_one() -> None:
    assert connection_ceiling(None, 50) is None
    assert connection_ceiling(1024, 40) == (1024 - 40 - 128) // 2
    assert connection_ceiling(100, 90) == 1


def test_the_clients_own_descriptors_do_not_count_against_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # Counted again once serve runs everything (settle_file_limit), with clients already connected:
    # what those hold is theirs, what the process's own cluster clients hold is not.
    from groupcoord.coordinator.gateway import file_limit

    monkeypatch.setattr(file_limit, "raise_soft_limit", lambda: 1024)
    monkeypatch.setattr(file_limit, "open_descriptors", lambda: 96 + 2 * 10)
    assert file_limit.admissible_connections(1000, clients_open=10) == (1024 - 96 - 128) // 2
    assert file_limit.admissible_connections(1000) == (1024 - 116 - 128) // 2
    assert file_limit.admissible_connections(100, clients_open=10) == 100


@pytest.mark.integration
def test_connections_beyond_the_open_file_limit_are_refused_not_left_hanging(
    bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    log = tmp_path / "serve.log"
    serve = ServeProcess(bootstrap, free_port(), f"__gc_{unique_name}", partitions=1, log=log)
    serve.args = [sys.executable, "-c", _LIMITED, *serve.args[3:]]  # after "-m groupcoord.cli.main"

    async def flood() -> None:
        clients: list[WireClient] = []
        for _ in range(LIMIT // 2):  # more than the limit can carry, each with an upstream socket
            client = await WireClient.connect("127.0.0.1", serve.port)
            client.send(3, 12, MetadataRequest(topics=[]))
            clients.append(client)
        answered: list[WireClient] = []
        closed = 0
        for client in clients:
            # Every one is answered or closed at once; none waits in the backlog.
            try:
                await client.read_frame(timeout=10)
                answered.append(client)
            except (asyncio.IncompleteReadError, ConnectionResetError):
                closed += 1
        assert answered and closed, (len(answered), closed)
        # The admitted ones still work.
        for client in answered[:3]:
            assert isinstance(await client.call(3, 12, MetadataRequest(topics=[])), MetadataResponse)
        for client in clients:
            await client.close()
        # A client after the flood gets in, once the server has seen the others go.
        deadline = asyncio.get_running_loop().time() + 30
        while True:
            late = await WireClient.connect("127.0.0.1", serve.port)
            try:
                assert isinstance(await late.call(3, 12, MetadataRequest(topics=[])), MetadataResponse)
                break
            except (asyncio.IncompleteReadError, ConnectionResetError):
                assert asyncio.get_running_loop().time() < deadline, "no slot came free"
                await asyncio.sleep(0.2)
            finally:
                await late.close()

    with serving(serve, {}):
        asyncio.run(asyncio.wait_for(flood(), 120))
        assert serve.proc is not None and serve.proc.poll() is None
    text = log.read_text()
    assert "out of system resource" not in text
    assert "open-file limit" in text
