"""``groupcoord share-groups list|describe|delete`` against a real ``groupcoord serve`` with share
groups enabled, in front of the local broker; share-group offsets (describe --offsets,
reset-offsets, delete-offsets) on the empty group, refused while it has members; a sidecar without
share groups is named as such."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages import share_group_heartbeat as sgh
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.local_broker import free_port
from tests.clients.support import create_topic
from tests.gateway.wire_client import WireClient
from tests.ha.sidecars import Sidecar, wait_for
from tests.inprocess_cli import as_json, cli
from tests.integration.serve_process import ServeProcess

pytestmark = pytest.mark.integration

SHARE_HEARTBEAT = 76


def beat(port: int, group: str, member: str, epoch: int, topics: list[str] | None = None) -> int:
    """One ShareGroupHeartbeat; the member's new epoch."""

    async def call() -> sgh.ShareGroupHeartbeatResponse:
        client = await WireClient.connect("127.0.0.1", port)
        try:
            request = sgh.ShareGroupHeartbeatRequest(
                group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=topics
            )
            answer = await client.call(SHARE_HEARTBEAT, 1, request)
        finally:
            await client.close()
        assert isinstance(answer, sgh.ShareGroupHeartbeatResponse)
        return answer

    answer = asyncio.run(call())
    assert answer.error_code == ErrorCode.NONE, answer
    return answer.member_epoch


@pytest.fixture
def serve(bootstrap: str, unique_name: str, tmp_path: Path) -> Iterator[ServeProcess]:
    process = ServeProcess(bootstrap, free_port(), unique_name, partitions=1, log=tmp_path / "serve.log")
    process.start(env={"GROUPCOORD_SHARE_GROUPS_ENABLED": "true"})
    try:
        yield process
    finally:
        process.stop()


def test_list_describe_and_delete_share_groups(serve: ServeProcess, bootstrap: str, unique_name: str) -> None:
    b = serve.bootstrap
    topic, group = f"{unique_name}-t", f"{unique_name}-sg"
    create_topic(bootstrap, topic, 2)
    members = sorted(str(uuid.uuid4()) for _ in range(2))
    epochs = {m: beat(serve.port, group, m, 0, [topic]) for m in members}
    epochs = {m: beat(serve.port, group, m, e) for m, e in epochs.items()}
    # A classic group beside it: never listed, described or deleted by share-groups.
    consumer = Consumer({"bootstrap.servers": b, "group.id": "classic", "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    consumer.close()

    assert as_json("share-groups", "list", "-b", b)["items"] == [{"group": group, "state": "stable"}]
    assert as_json("share-groups", "list", "--state", "Empty", "-b", b)["items"] == []
    bad_state = cli("share-groups", "list", "--state", "rebalancing", "-b", b)
    assert bad_state.returncode == 2 and "expected one of Empty, Stable, Dead" in bad_state.stderr  # a bad command line

    (state,) = as_json("share-groups", "describe", group, "-b", b)["items"]
    assert state == {
        "group": group,
        "coordinator": state["coordinator"],
        "state": "stable",
        "assignor": "simple",
        "group_epoch": state["group_epoch"],
        "assignment_epoch": state["assignment_epoch"],
        "num_members": 2,
    }
    assert state["coordinator"].startswith(f"{b} (") and state["group_epoch"] >= 2
    assert as_json("share-groups", "describe", "--all-groups", "--state", "-b", b)["items"] == [state]

    rows = as_json("share-groups", "describe", group, "--members", "-b", b)["items"]
    assert [(r["consumer_id"], r["member_epoch"], r["subscriptions"]) for r in rows] == [
        (m, epochs[m], topic) for m in members
    ]
    # Both partitions assigned: every member may be given every partition (Kafka's simple assignor).
    assigned = {p for r in rows for p in r["assignment"].split(",") if p}
    assert assigned == {f"{topic}:0", f"{topic}:1"}
    assert sum(r["num_partitions"] for r in rows) >= 2
    # Piped, the text format is plain columns under an upper-case header; --verbose adds the assignment.
    plain = cli("share-groups", "describe", group, "--members", "--verbose", "-b", b)
    header, *lines = plain.stdout.splitlines()
    assert header.split() == [
        "GROUP",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
        "RACK",
        "MEMBER-EPOCH",
        "#PARTITIONS",
        "ASSIGNMENT",
        "SUBSCRIPTIONS",
    ]
    assert [line.split()[1] for line in lines] == members

    # Ids that are no share group: one line each, exit code 1, the others still shown.
    mixed = cli("share-groups", "describe", group, "classic", "nope", "-b", b)
    assert mixed.returncode == 1 and group in mixed.stdout
    assert "group 'classic': it is not a share group" in mixed.stderr
    assert "group 'nope': the group does not exist" in mixed.stderr

    # Offsets of a group with members: described, never reset or deleted; other ids said in words.
    assert as_json("share-groups", "describe", group, "--offsets", "-b", b)["items"] == []
    others = cli("share-groups", "describe", "classic", "nope", "--offsets", "-b", b)
    assert others.returncode == 1
    assert "group 'classic': it is not a share group" in others.stderr
    assert "group 'nope': the group does not exist" in others.stderr
    not_share = cli("share-groups", "delete-offsets", "--group", "classic", "--topic", topic, "-b", b)
    assert not_share.returncode == 1 and "'classic': it is not a share group" in not_share.stderr
    for args in (
        ["reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"],
        ["delete-offsets", "--group", group, "--topic", topic],
    ):
        # The members heartbeat again first: on a loaded machine the CLI calls above can outlast
        # their session, and a group whose members expired is rightly reset.
        for m, e in epochs.items():
            beat(serve.port, group, m, e)
        refused = cli("share-groups", *args, "-b", b)
        assert refused.returncode == 1 and "the group still has active members" in refused.stderr, args
        assert "Traceback" not in refused.stderr

    # delete: a group with members and a classic group are refused, and stay.
    busy = cli("share-groups", "delete", group, "classic", "-b", b, "--json")
    assert busy.returncode == 1
    assert {(r["group"], r["deleted"]) for r in json.loads(busy.stdout)["items"]} == {
        (group, False),
        ("classic", False),
    }
    assert f"cannot delete share group '{group}': the group still has active members" in busy.stderr
    assert "cannot delete share group 'classic': it is not a share group" in busy.stderr
    listed = as_json("groups", "list", "-b", b)["items"]
    assert "classic" in {g["group"] for g in listed}
    for m in epochs:
        beat(serve.port, group, m, -1)
    assert as_json("share-groups", "list", "-b", b)["items"] == [{"group": group, "state": "empty"}]
    empty = cli("share-groups", "describe", group, "--members", "-b", b)
    assert empty.returncode == 0 and f"share group '{group}' has no active members" in empty.stderr
    _reset_describe_and_delete_offsets(b, bootstrap, group, topic)
    deleted = cli("share-groups", "delete", group, "-b", b)
    assert deleted.returncode == 0, deleted.stderr
    # The result on stdout (plain columns, piped), not a note on stderr.
    assert [line.split() for line in deleted.stdout.splitlines()] == [
        ["GROUP", "DELETED", "ERROR"],
        [group, "true", "-"],
    ]
    assert as_json("share-groups", "list", "-b", b)["items"] == []
    gone = cli("share-groups", "delete", group, "-b", b)
    assert gone.returncode == 1 and "the group does not exist" in gone.stderr


def _reset_describe_and_delete_offsets(b: str, bootstrap: str, group: str, topic: str) -> None:
    """On the empty group: a dry run changes nothing; --execute sets the start offsets (kept within
    the log), which describe --offsets shows with their lag; delete-offsets removes them."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(3):
        producer.produce(topic, f"v{i}".encode(), partition=0)
    assert producer.flush(15) == 0
    reset = ["share-groups", "reset-offsets", "--group", group, "-b", b]
    dry = as_json(*reset, "--topic", topic, "--to-latest")
    assert [(r["topic"], r["partition"], r["new_offset"]) for r in dry["items"]] == [(topic, 0, 3), (topic, 1, 0)]
    assert as_json("share-groups", "describe", group, "--offsets", "-b", b)["items"] == []
    done = as_json(*reset, "--topic", f"{topic}:0", "--to-offset", "1", "--execute")
    assert [(r["partition"], r["new_offset"]) for r in done["items"]] == [(0, 1)]
    assert as_json(*reset, "--topic", f"{topic}:1", "--to-offset", "99", "--execute")["items"][0]["new_offset"] == 0
    rows = as_json("share-groups", "describe", group, "--offsets", "-b", b)["items"]
    assert [(r["topic"], r["partition"], r["start_offset"], r["lag"]) for r in rows] == [
        (topic, 0, 1, 2),
        (topic, 1, 0, 0),
    ]
    plain = cli("share-groups", "describe", group, "--offsets", "-b", b)
    assert plain.stdout.splitlines()[0].split() == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
    earliest = as_json(*reset, "--all-topics", "--to-earliest", "--execute")
    assert [(r["partition"], r["new_offset"]) for r in earliest["items"]] == [(0, 0), (1, 0)]
    # --to-datetime: the first record at or after it. The local broker answers ListOffsets by
    # timestamp with the log start whatever the time; the records themselves decide.
    tomorrow = int(time.time() * 1000) + 86_400_000
    for i in range(2):
        producer.produce(topic, f"later-{i}".encode(), partition=0, timestamp=tomorrow + i)
    assert producer.flush(15) == 0
    at = datetime.fromtimestamp(tomorrow / 1000 - 3600, UTC).isoformat(timespec="milliseconds")
    later = as_json(*reset, "--topic", topic, "--to-datetime", at, "--execute")
    assert [(r["partition"], r["new_offset"]) for r in later["items"]] == [(0, 3), (1, 0)]
    assert later["to_datetime"] == at.replace("+00:00", "Z")
    rows = as_json("share-groups", "describe", group, "--offsets", "-b", b)["items"]
    assert [(r["partition"], r["start_offset"]) for r in rows] == [(0, 3), (1, 0)]
    unknown = cli("share-groups", "reset-offsets", "--group", "nope", "--topic", topic, "--to-earliest", "-b", b)
    assert unknown.returncode == 1 and "group 'nope': the group does not exist" in unknown.stderr
    deleted = as_json("share-groups", "delete-offsets", "--group", group, "--topic", topic, "-b", b)
    assert deleted["items"] == [{"group": group, "topic": topic, "deleted": True, "error": None}]
    assert as_json("share-groups", "describe", group, "--offsets", "-b", b)["items"] == []


def test_a_sidecar_without_share_groups_says_so(bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    process = ServeProcess(bootstrap, free_port(), unique_name, partitions=1, log=tmp_path / "serve.log").start()
    try:
        for args in (["list"], ["describe", "g"], ["delete", "g"]):
            done = cli("share-groups", *args, "-b", process.bootstrap)
            assert done.returncode == 1
            assert done.stderr.strip() == (
                f"error: {process.bootstrap} does not serve share groups (the sidecar's share_groups_enabled is off)"
            )
    finally:
        process.stop()
    # Nothing listening: one line, no traceback.
    down = cli("share-groups", "list", "-b", process.bootstrap, "--timeout", "2")
    assert down.returncode == 1 and down.stderr.startswith(f"error: cannot reach {process.bootstrap} within 2s")


def test_groups_of_every_process_are_listed_and_described_at_their_coordinator(
    bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """Two processes share one log (four shards): list asks every node, describe each coordinator."""
    topic = f"{unique_name}-t"
    create_topic(bootstrap, topic, 1)
    env = {"GROUPCOORD_SHARE_GROUPS_ENABLED": "true"}
    pair = [Sidecar(bootstrap, unique_name, tmp_path / f"serve{i}.log", partitions=4, env=env) for i in range(2)]
    try:
        for s in pair:
            s.spawn()
        for s in pair:
            s.wait_listening()
        wait_for(lambda: all(s.owned() for s in pair), 90, "both processes to own shards")
        ports = {s.port for s in pair}
        groups = [f"{unique_name}-q{i}" for i in range(12)]
        where: dict[str, int | None] = {}

        def routed() -> bool:
            where.update({g: coordinator_port(pair[0].port, g) for g in groups})
            # Every group routed, groups on both processes, and the second process routes them
            # alike: list asks the nodes of the Metadata of the process it is pointed at, and a
            # process learns the other's shards from placement a moment after that one does.
            return set(where.values()) == ports and all(coordinator_port(pair[1].port, g) == where[g] for g in groups)

        wait_for(routed, 60, "both processes to route groups to both")
        for group, port in where.items():
            assert port is not None
            beat(port, group, str(uuid.uuid4()), 0, [topic])
        for s in pair:
            listed = as_json("share-groups", "list", "-b", s.address)["items"]
            assert {r["group"] for r in listed} == set(where)
        described = as_json("share-groups", "describe", "--all-groups", "-b", pair[0].address)["items"]
        assert {r["group"]: int(r["coordinator"].split()[0].rsplit(":", 1)[1]) for r in described} == where
    finally:
        for s in pair:
            s.stop()


def coordinator_port(port: int, group: str) -> int | None:
    """The port of the group's coordinator, None while the shard's owner is not known yet."""

    async def call() -> int | None:
        client = await WireClient.connect("127.0.0.1", port)
        try:
            found = await client.call(10, 3, FindCoordinatorRequest(key=group, key_type=0))
        finally:
            await client.close()
        assert isinstance(found, FindCoordinatorResponse)
        return None if found.error_code else found.port

    return asyncio.run(call())
