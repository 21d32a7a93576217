"""The CLI's offset reads while the group's coordinator moves: an error in one line, or the
offsets once it has settled; never a crash. librdkafka's admin ListConsumerGroupOffsets, which
the CLI used, crashes the process (SIGSEGV, librdkafka issue 5040) on a group-level
NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, which a sidecar answers while a shard moves between
its processes and a Kafka cluster while a broker restarts: ``offsets show`` exited 139 there.

A gateway in front of the test broker stands for that coordinator, as in
``tests/integration/test_group_offsets_coordinator_error.py``: its group handler describes the
group as an empty consumer group (ConsumerGroupDescribe, DescribeGroups) and answers OffsetFetch with a coordinator error, every time or
for the first few asks only. FindCoordinator is the gateway's own answer (itself)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from groupcoord.cli import offsets_wire
from groupcoord.cli.common import CliError, Conn
from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway import ConnectionContext, GatewayConfig, TlsSettings
from groupcoord.coordinator.messages import consumer_group_describe as cgd
from groupcoord.coordinator.messages import describe_groups as dg
from groupcoord.coordinator.messages import list_groups as lg
from groupcoord.coordinator.messages import offset_commit as oc
from groupcoord.coordinator.messages import offset_fetch as of
from groupcoord.coordinator.messages.schema import Message
from tests.gateway.clients import produce
from tests.gateway.conftest import GatewayThread
from tests.gateway.fakes import FakeGroupHandler
from tests.gateway.test_integration import _make_cert
from tests.inprocess_cli import cli
from tests.topics import ensure_topic

pytestmark = pytest.mark.integration

GROUP, TOPIC = "g-moving", "t-moving"


class MovingCoordinator(FakeGroupHandler):
    """The first ``moving`` OffsetFetch answers carry ``code`` at the group level (every one when
    ``moving`` is None); the others the offsets committed here. DescribeGroups finds the group."""

    # As a Java client commits it; confluent-kafka commits "m\0" (a C string), and reads back
    # only what ends in a NUL.
    metadata = "m"

    def __init__(self, code: int, moving: int | None = None) -> None:
        super().__init__()
        self.code, self.moving = code, moving
        self.fetches = 0
        self.versions: set[int] = set()  # of the OffsetFetch requests

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        if isinstance(request, cgd.ConsumerGroupDescribeRequest):  # librdkafka describes with it first
            return cgd.ConsumerGroupDescribeResponse(
                groups=[
                    cgd.ConsumerGroupDescribeResponseDescribedGroup(
                        group_id=g, group_state="Empty", group_epoch=1, assignment_epoch=1, assignor_name="uniform"
                    )
                    for g in request.group_ids
                ]
            )
        if isinstance(request, dg.DescribeGroupsRequest):
            return dg.DescribeGroupsResponse(
                groups=[
                    dg.DescribeGroupsResponseDescribedGroup(group_id=g, group_state="Empty", protocol_type="consumer")
                    for g in request.groups
                ]
            )
        if isinstance(request, of.OffsetFetchRequest):
            self.fetches += 1
            self.versions.add(context.api_version)
            if self.moving is None or self.fetches <= self.moving:
                if context.api_version >= 8:
                    return of.OffsetFetchResponse(
                        groups=[
                            of.OffsetFetchResponseGroup(group_id=g.group_id, error_code=self.code)
                            for g in request.groups
                        ]
                    )
                return of.OffsetFetchResponse(error_code=self.code)
            return self._all_offsets(request, context.api_version)
        return await super().handle(context, request)

    def _all_offsets(self, request: of.OffsetFetchRequest, version: int) -> of.OffsetFetchResponse:
        """Every offset committed here (the request names no topics: all of them)."""
        if version < 8:
            assert request.topics is None
            return of.OffsetFetchResponse(
                topics=[
                    of.OffsetFetchResponseTopic(
                        name=t,
                        partitions=[
                            of.OffsetFetchResponsePartition(
                                partition_index=p, committed_offset=o, metadata=self.metadata
                            )
                            for p, o in parts
                        ],
                    )
                    for t, parts in self._committed(request.group_id).items()
                ]
            )
        groups = []
        for g in request.groups:
            assert g.topics is None
            topics = [
                of.OffsetFetchResponseTopics(
                    name=t,
                    partitions=[
                        of.OffsetFetchResponsePartitions(partition_index=p, committed_offset=o, metadata=self.metadata)
                        for p, o in parts
                    ],
                )
                for t, parts in self._committed(g.group_id).items()
            ]
            groups.append(of.OffsetFetchResponseGroup(group_id=g.group_id, topics=topics))
        return of.OffsetFetchResponse(groups=groups)

    def _committed(self, group: str) -> dict[str, list[tuple[int, int]]]:
        topics: dict[str, list[tuple[int, int]]] = {}
        for (g, t, p), o in sorted(self.offsets.items()):
            if g == group:
                topics.setdefault(t, []).append((p, o))
        return topics


def _gateway(bootstrap: str, handler: MovingCoordinator, tls: TlsSettings | None = None) -> GatewayThread:
    ensure_topic(bootstrap, TOPIC)
    handler.offsets[(GROUP, TOPIC, 0)] = 42
    config = GatewayConfig(bootstrap_servers=bootstrap, listen_port=0, listener_tls=tls)
    return GatewayThread(config, handler)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (ErrorCode.NOT_COORDINATOR, "the coordinator moved; try again"),
        (ErrorCode.COORDINATOR_NOT_AVAILABLE, "the coordinator is not available (is its shard loaded?)"),
        (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "the coordinator is still loading; try again"),
    ],
)
def test_a_coordinator_that_keeps_moving_is_one_error_line_within_the_timeout(
    bootstrap: str, code: int, words: str
) -> None:
    handler = MovingCoordinator(code)
    with _gateway(bootstrap, handler) as gateway:
        shown = cli("offsets", "show", GROUP, "-b", gateway.bootstrap, "--timeout", "2")
    assert shown.returncode == 1, (shown.stdout, shown.stderr)
    (line,) = shown.stderr.strip().splitlines()
    assert line == f"error: cannot read the offsets of group {GROUP!r}: {words} (still so after 2s)"
    assert handler.fetches > 2  # asked again, with a backoff, until the timeout


@pytest.mark.parametrize(
    ("offset_fetch", "find_coordinator"),
    [
        ((2, 9), (1, 6)),  # what the gateway offers: OffsetFetch v9, FindCoordinator v6 (batched)
        ((2, 7), (1, 3)),  # a cluster before Kafka 3.0: one group per OffsetFetch and FindCoordinator
    ],
)
def test_offsets_are_read_once_the_coordinator_has_settled(
    bootstrap: str, monkeypatch: pytest.MonkeyPatch, offset_fetch: tuple[int, int], find_coordinator: tuple[int, int]
) -> None:
    monkeypatch.setattr(offsets_wire, "OFFSET_FETCH_VERSIONS", offset_fetch)
    monkeypatch.setattr(offsets_wire, "FIND_COORDINATOR_VERSIONS", find_coordinator)
    handler = MovingCoordinator(ErrorCode.NOT_COORDINATOR, moving=3)
    with _gateway(bootstrap, handler) as gateway:
        shown = cli("offsets", "show", GROUP, "-b", gateway.bootstrap, "--timeout", "10", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["items"] == [
        {"group": GROUP, "topic": TOPIC, "partition": 0, "offset": 42, "metadata": "m"}
    ]
    assert handler.fetches == 4
    assert handler.versions == {offset_fetch[1]}


def test_the_cli_process_is_not_killed(bootstrap: str, tmp_path: Path) -> None:
    """The same in a process of its own: the old CLI died of SIGSEGV here (exit code -11)."""
    root = str(Path(__file__).resolve().parents[2])
    with _gateway(bootstrap, MovingCoordinator(ErrorCode.COORDINATOR_NOT_AVAILABLE)) as gateway:
        done = subprocess.run(
            [sys.executable, "-m", "groupcoord.cli.main", "offsets", "show", GROUP, "-b", gateway.bootstrap]
            + ["--timeout", "2"],
            capture_output=True,
            text=True,
            timeout=90,
            cwd=tmp_path,
            env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin"},
        )
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert f"cannot read the offsets of group {GROUP!r}" in done.stderr


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_offsets_are_read_over_tls_as_the_command_config_says(bootstrap: str, tmp_path: Path) -> None:
    cert, key = _make_cert(tmp_path)
    handler = MovingCoordinator(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, moving=1)
    props = tmp_path / "client.properties"
    props.write_text(f"security.protocol=SSL\nssl.ca.location={cert}\n")
    with _gateway(bootstrap, handler, TlsSettings(certfile=cert, keyfile=key)) as gateway:
        shown = cli("offsets", "show", GROUP, "-b", gateway.bootstrap, "--command-config", str(props), "--json")
    assert shown.returncode == 0, shown.stderr
    assert [(r["topic"], r["offset"]) for r in json.loads(shown.stdout)["items"]] == [(TOPIC, 42)]
    assert handler.fetches == 2


def test_a_coordinator_that_cannot_be_reached_is_asked_until_the_timeout_only(dead_address: str) -> None:
    """Refused connections are tried again (a broker restarting), within --timeout all told."""
    started = time.monotonic()
    with pytest.raises(CliError) as failed:
        offsets_wire.fetch_committed(Conn(dead_address, timeout=1.0), GROUP)
    assert 0.9 < time.monotonic() - started < 3
    assert str(failed.value) == (
        f"cannot read the offsets of group {GROUP!r}: cannot reach {dead_address} within 1s: nothing listens"
        " there (Connection refused) (still so after 1s)"
    )


@pytest.mark.parametrize(
    ("props", "reason"),
    [
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, "sasl.mechanism=GSSAPI"),
        ({"security.protocol": "SASL_PLAINTEXT"}, "sasl.mechanism=GSSAPI"),  # librdkafka's default
        ({"security.protocol": "SSL", "ssl.keystore.location": "/k.p12"}, "ssl.keystore.location"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "ssl.ca.pem": "..."}, "ssl.ca.pem"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}, None),
        ({"security.protocol": "PLAINTEXT", "ssl.keystore.location": "/k.p12"}, None),  # not used
        ({}, None),
    ],
)
def test_settings_only_librdkafka_follows(props: dict[str, str], reason: str | None) -> None:
    assert offsets_wire.librdkafka_only(props) == reason


def test_settings_only_librdkafka_follows_read_through_it(bootstrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Kerberos user still reads offsets: through librdkafka's listing, as before the wire reads."""
    monkeypatch.setattr(offsets_wire, "librdkafka_only", lambda props: "sasl.mechanism=GSSAPI")
    handler = MovingCoordinator(ErrorCode.NOT_COORDINATOR, moving=0)
    handler.metadata = "m\0"
    with _gateway(bootstrap, handler) as gateway:
        shown = cli("offsets", "show", GROUP, "-b", gateway.bootstrap, "--timeout", "10", "--json")
        found = offsets_wire.fetch_committed(Conn(gateway.bootstrap, timeout=10), GROUP, require_stable=True)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["items"] == [
        {"group": GROUP, "topic": TOPIC, "partition": 0, "offset": 42, "metadata": "m"}
    ]
    assert [(o.topic, o.partition, o.offset, o.error) for o in found] == [(TOPIC, 0, 42, None)]
    # librdkafka asks with the topics named (after a DescribeGroups), never as the wire reads do.
    assert handler.fetches == 2


class MovingLister(MovingCoordinator):
    """The first ``moving`` ListGroups answers carry ``code`` (every one when ``moving`` is None)."""

    def __init__(self, code: int, moving: int | None = None) -> None:
        super().__init__(code, moving)
        self.listings = 0

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        if isinstance(request, lg.ListGroupsRequest):
            self.listings += 1
            if self.moving is None or self.listings <= self.moving:
                return lg.ListGroupsResponse(error_code=self.code)
            return lg.ListGroupsResponse(
                groups=[lg.ListGroupsResponseListedGroup(group_id=GROUP, protocol_type="consumer", group_state="Empty")]
            )
        return await super().handle(context, request)


def test_groups_list_asks_again_while_the_coordinator_is_not_available(bootstrap: str) -> None:
    """As Kafka's admin client retries a node's COORDINATOR_NOT_AVAILABLE (a shard without an owner
    for a rebalance), until the timeout; then one line says so."""
    handler = MovingLister(ErrorCode.COORDINATOR_NOT_AVAILABLE, moving=2)
    with _gateway(bootstrap, handler) as gateway:
        listed = cli("groups", "list", "-b", gateway.bootstrap, "--timeout", "10", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [g["group"] for g in json.loads(listed.stdout)["items"]] == [GROUP]
    assert handler.listings == 3
    stuck = MovingLister(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    with _gateway(bootstrap, stuck) as gateway:
        failed = cli("groups", "list", "-b", gateway.bootstrap, "--timeout", "2")
    assert failed.returncode == 1
    (line,) = failed.stderr.strip().splitlines()
    assert line.startswith("error: listing groups failed: the coordinator is not available") and line.endswith(
        "(still so after 2s)"
    ), line
    # A lasting error is no reason to wait: answered at once.
    denied = MovingLister(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    with _gateway(bootstrap, denied) as gateway:
        refused = cli("groups", "list", "-b", gateway.bootstrap, "--timeout", "10")
    assert refused.returncode == 1 and denied.listings == 1, refused.stderr


class MovingWriter(MovingCoordinator):
    """Offsets are read at once; the first ``moving`` OffsetCommit answers carry ``code`` on every
    partition (every one when ``moving`` is None), as librdkafka hands a moving coordinator's
    answer to AlterConsumerGroupOffsets back."""

    def __init__(self, code: int, moving: int | None = None) -> None:
        super().__init__(code, moving=0)
        self.write_code, self.writes_moving = code, moving
        self.commits = 0

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        if isinstance(request, oc.OffsetCommitRequest):
            self.commits += 1
            if self.writes_moving is None or self.commits <= self.writes_moving:
                return oc.OffsetCommitResponse(
                    topics=[
                        oc.OffsetCommitResponseTopic(
                            name=t.name,
                            partitions=[
                                oc.OffsetCommitResponsePartition(
                                    partition_index=p.partition_index, error_code=self.code
                                )
                                for p in t.partitions
                            ],
                        )
                        for t in request.topics
                    ]
                )
        return await super().handle(context, request)


def _reset_to(gateway: GatewayThread, offset: int, timeout: str) -> subprocess.CompletedProcess[str]:
    return cli(
        "offsets", "reset", "--group", GROUP, "--topic", TOPIC, "--to-offset", str(offset), "--execute", "-b", gateway.bootstrap,
        "--timeout", timeout, "--json",
    )  # fmt: skip


@pytest.mark.parametrize(
    "code", [ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]
)
def test_a_reset_is_written_once_the_coordinator_has_settled(bootstrap: str, code: int) -> None:
    """As Kafka's admin client asks a moving coordinator again; librdkafka's alter did not, and a
    reset run while a shard moved failed on every partition."""
    produce(bootstrap, TOPIC, 3, 1)
    handler = MovingWriter(code, moving=2)
    with _gateway(bootstrap, handler) as gateway:
        done = _reset_to(gateway, 1, "10")
    assert done.returncode == 0, done.stderr
    assert handler.commits == 3
    assert handler.offsets[(GROUP, TOPIC, 0)] == 1


def test_a_reset_to_a_coordinator_that_keeps_moving_fails_within_the_timeout(bootstrap: str) -> None:
    produce(bootstrap, TOPIC, 3, 1)
    handler = MovingWriter(ErrorCode.NOT_COORDINATOR)
    started = time.monotonic()
    with _gateway(bootstrap, handler) as gateway:
        done = _reset_to(gateway, 1, "2")
    assert done.returncode == 1, (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: cannot reset offsets of group {GROUP!r}: {TOPIC}-0: the coordinator moved; try")
    assert handler.commits > 2
    assert time.monotonic() - started < 15
    assert handler.offsets[(GROUP, TOPIC, 0)] == 42
