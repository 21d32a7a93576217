"""``groupcoord groups|offsets|migrate`` against a real ``groupcoord serve`` (share groups on) in
front of the local broker: what the QA operators' round found (an empty ``--all-groups``, a share
group deleted by ``groups delete``, results only on stderr, a reset to before 1970 timing out,
``--to-offset -5`` refused, the metadata of a migration's check left unsaid, a sidecar that cannot
reach its cluster blamed for not listening)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from groupcoord.local_broker import LocalBroker, free_port
from tests.cli.test_share_groups_cli import beat
from tests.inprocess_cli import as_json, cli
from tests.integration.serve_process import ServeProcess
from tests.integration.test_cli_ops import make_topic

pytestmark = pytest.mark.integration

# No health endpoint: these sidecars need none, and the default address is the host's to give.
SERVE_ENV = {"GROUPCOORD_SHARE_GROUPS_ENABLED": "true", "GROUPCOORD_METRICS_LISTEN": "off"}


def started(bootstrap: str, topic: str, log: Path) -> ServeProcess:
    return ServeProcess(bootstrap, free_port(), topic, partitions=1, log=log).start(env=SERVE_ENV)


@pytest.fixture(scope="module")
def sidecar(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One serve for the tests below that bring their own topics and groups."""
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    serve = started(bootstrap, f"gc-cli-groups-{uuid.uuid4().hex[:10]}", log)
    try:
        yield serve
    finally:
        serve.stop()


def commit(sidecar: str, group: str, offsets: list[TopicPartition]) -> None:
    c = Consumer({"bootstrap.servers": sidecar, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=offsets, asynchronous=False)
    c.close()


def empty_share_group(serve: ServeProcess, group: str, topic: str) -> None:
    member = str(uuid.uuid4())
    beat(serve.port, group, member, 0, [topic])
    beat(serve.port, group, member, -1)


def test_a_sidecar_without_consumer_groups(bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    """describe --all-groups is empty as groups list is: confluent-kafka refused the empty request
    with a traceback. A share group is not one of theirs."""
    topic, share = f"{unique_name}-t", f"{unique_name}-sq"
    serve = started(bootstrap, unique_name, tmp_path / "serve.log")
    try:
        b = serve.bootstrap
        make_topic(bootstrap, topic, 1, 1)
        empty_share_group(serve, share, topic)
        assert as_json("groups", "list", "-b", b)["items"] == []
        for view in ([], ["--members"], ["--state"], ["--offsets"]):
            assert as_json("groups", "describe", "--all-groups", *view, "-b", b) == {"items": [], "errors": []}
            piped = cli("groups", "describe", "--all-groups", *view, "-b", b)
            assert piped.returncode == 0 and piped.stderr == "", piped.stderr
            (header,) = piped.stdout.splitlines()  # the header of an empty table, as groups list prints
            assert header.startswith("GROUP ")
    finally:
        serve.stop()


def test_groups_delete_leaves_share_groups_to_share_groups_delete(
    sidecar: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """groups delete deleted a share group, although groups describe says no such group exists;
    share-groups delete refuses the other types as theirs, and groups delete now refuses it back."""
    b, topic, share, plain = sidecar.bootstrap, f"{unique_name}-t", f"{unique_name}-sq", f"{unique_name}-g"
    make_topic(bootstrap, topic, 1, 1)
    empty_share_group(sidecar, share, topic)
    refused = cli("groups", "delete", share, "-b", b)
    assert refused.returncode == 1
    assert refused.stderr == (
        f"error: cannot delete group '{share}': it is a share group (delete it with 'groupcoord share-groups delete')\n"
    )
    assert as_json("share-groups", "describe", share, "-b", b)["items"][0]["state"] == "empty"
    # Each id its own result, in the order given: a classic group beside it is deleted.
    commit(b, plain, [TopicPartition(topic, 0, 1)])
    mixed = cli("groups", "delete", plain, share, "nope", "-b", b, "--json")
    assert mixed.returncode == 1
    assert json.loads(mixed.stdout)["items"] == [
        {"group": plain, "deleted": True, "error": None},
        {
            "group": share,
            "deleted": False,
            "error": "it is a share group (delete it with 'groupcoord share-groups delete')",
        },
        {"group": "nope", "deleted": False, "error": "the group does not exist"},
    ]
    assert as_json("share-groups", "describe", share, "-b", b)["items"][0]["state"] == "empty"
    assert cli("share-groups", "delete", share, "-b", b).returncode == 0


def test_deletions_print_their_results_on_stdout(sidecar: ServeProcess, bootstrap: str, unique_name: str) -> None:
    """Piped, stdout carries the result (plain columns) and stderr nothing; --json the same rows.
    Both printed their results only as notes, which go to stderr when stdout is not a terminal."""
    b, topic, group = sidecar.bootstrap, f"{unique_name}-t", f"{unique_name}-g"
    make_topic(bootstrap, topic, 3, 3)
    # A group whose last offset goes is gone: one is left for groups delete.
    commit(b, group, [TopicPartition(topic, p, 1) for p in range(3)])

    deleted = cli("offsets", "delete", "--group", group, "--topic", f"{topic}:0", "-b", b)
    assert deleted.returncode == 0 and deleted.stderr == "", deleted.stderr
    assert [line.split() for line in deleted.stdout.splitlines()] == [
        ["GROUP", "TOPIC", "PARTITION", "DELETED", "ERROR"],
        [group, topic, "0", "true", "-"],
    ]
    assert as_json("offsets", "delete", "--group", group, "--topic", f"{topic}:1", "-b", b)["items"] == [
        {"group": group, "topic": topic, "partition": 1, "deleted": True, "error": None}
    ]

    gone = cli("groups", "delete", group, "-b", b)
    assert gone.returncode == 0 and gone.stderr == "", gone.stderr
    assert [line.split() for line in gone.stdout.splitlines()] == [["GROUP", "DELETED", "ERROR"], [group, "true", "-"]]
    again = cli("groups", "delete", group, "-b", b)
    assert again.returncode == 1
    assert again.stdout.splitlines()[1].split() == [group, "false", "the", "group", "does", "not", "exist"]
    assert again.stderr == f"error: cannot delete group '{group}': the group does not exist\n"


def test_resets_before_the_epoch_and_below_the_log_start_go_to_the_earliest(
    sidecar: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """Kafka's tool: the first record at or after the instant (for 1960, the earliest; it timed out
    after 10 s on a negative ListOffsets timestamp) and --to-offset clamped to [earliest, latest]
    as --help says (-5 was refused); offsets reset and share-groups reset-offsets alike."""
    b, topic, group, share = sidecar.bootstrap, f"{unique_name}-t", f"{unique_name}-g", f"{unique_name}-sq"
    make_topic(bootstrap, topic, 2, 4)
    commit(b, group, [TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 2)])
    reset = ["offsets", "reset", "--group", group, "--topic", topic, "-b", b, "--timeout", "10"]
    for strategy in (["--to-datetime", "1960-01-01T00:00:00Z"], ["--to-offset", "-5"]):
        started_at = time.monotonic()
        plan = as_json(*reset, *strategy)
        assert [(r["partition"], r["new_offset"]) for r in plan["items"]] == [(0, 0), (1, 0)], strategy
        assert time.monotonic() - started_at < 10, strategy
    assert plan["executed"] is False
    assert as_json(*reset, "--to-datetime", "1960-01-01T00:00:00Z")["to_datetime"] == "1970-01-01T00:00:00.000Z"
    done = as_json(*reset, "--to-offset", "-5", "--execute")
    assert [r["new_offset"] for r in done["items"]] == [0, 0]
    naive = cli(*reset, "--to-datetime", "0001-01-01T00:00:00")  # year 0 in UTC east of Greenwich
    assert naive.returncode == 0 and "Traceback" not in naive.stderr, naive.stderr

    empty_share_group(sidecar, share, topic)
    shared = as_json(
        "share-groups", "reset-offsets", "--group", share, "--topic", topic, "--to-datetime", "1960-01-01T00:00:00Z",
        "-b", b,
    )  # fmt: skip
    assert [(r["partition"], r["new_offset"]) for r in shared["items"]] == [(0, 0), (1, 0)]
    assert shared["to_datetime"] == "1970-01-01T00:00:00.000Z"


def test_a_migration_check_names_the_metadata_that_differs(
    sidecar: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """The local broker keeps no commit metadata: export's read-back check fails there, and said
    "returns 7 after writing 7", as if nothing differed."""
    b, topic, group = sidecar.bootstrap, f"{unique_name}-t", f"{unique_name}-metag"
    make_topic(bootstrap, topic, 1, 8)
    commit(b, group, [TopicPartition(topic, 0, 7, "meta-a")])
    export = cli("migrate", "export", "--cluster", bootstrap, "-b", b, "--group", group, "--execute")
    if export.returncode == 0:
        return  # a cluster that keeps metadata (GROUPCOORD_TEST_BOOTSTRAP): nothing differs
    assert export.stderr == (
        f"error: group '{group}' {topic}-0: the cluster returns offset 7 with metadata '' after writing 7 with"
        " metadata 'meta-a'\n"
    )


def test_a_sidecar_that_cannot_reach_its_cluster_is_not_called_unreachable(unique_name: str, tmp_path: Path) -> None:
    """The sidecar listens, but closes every connection whose requests it cannot forward (its log:
    ``cannot reach the cluster``): the CLI said "cannot reach 127.0.0.1:PORT ...: no connection",
    as if nothing listened there. Once it is gone too, that is what is said."""
    broker = LocalBroker(port=free_port(), log_file=tmp_path / "broker.log").start()
    serve = started(broker.bootstrap, unique_name, tmp_path / "serve.log")
    try:
        b = serve.bootstrap
        assert cli("groups", "list", "-b", b).returncode == 0
        broker.stop(graceful=False)
        closed = (
            f"error: {b} accepted the connection and closed it without an answer: the sidecar there may not reach"
            " its cluster (see its log)\n"
        )
        for command in ("groups", "share-groups"):
            deadline = time.monotonic() + 30
            while True:  # until the sidecar notices (its own connections to the broker are gone)
                done = cli(command, "list", "-b", b, "--timeout", "4")
                if done.returncode != 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert done.returncode == 1 and done.stderr == closed, done.stderr
    finally:
        broker.stop(graceful=False)
        serve.kill9()
    for command in ("groups", "share-groups"):
        down = cli(command, "list", "-b", b, "--timeout", "2")
        assert down.returncode == 1
        assert down.stderr == f"error: cannot reach {b} within 2s: nothing listens there (Connection refused)\n"
