"""``groupcoord groups|offsets|migrate`` against a real ``groupcoord serve`` and real clients.

Every command's exit code, stdout and stderr are checked: one readable line and a non-zero exit
for every refusal. The commands run in this process (``tests.inprocess_cli``: the same ``app``,
its refusals made into lines as in the process), a python start each saved; what only the process
shows (librdkafka's own lines kept off its stderr, the time it takes to give up on a cluster that is
not there, ``--watch``) is checked on child processes, started together.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.local_broker import free_port
from tests.inprocess_cli import cli
from tests.integration.serve_process import ServeProcess
from tests.processes import popen

pytestmark = pytest.mark.integration


def start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``groupcoord *args`` as a child process, as an operator runs it; see ``finish``."""
    return popen(
        [sys.executable, "-m", "groupcoord.cli.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def finish(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    stdout, stderr = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def make_topic(bootstrap: str, name: str, partitions: int, records_per_partition: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)
    producer = Producer({"bootstrap.servers": bootstrap})
    for p in range(partitions):
        for i in range(records_per_partition):
            producer.produce(name, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(15) == 0


def commit(bootstrap: str, group: str, offsets: list[tuple[str, int, int]]) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(t, p, o) for t, p, o in offsets], asynchronous=False)
    c.close()


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # no traceback, no librdkafka log lines
    assert lines[0].startswith("error: ")
    return lines[0]


def test_version_and_errors_are_one_line() -> None:
    """Giving up on a cluster that is not there: each a process of its own, all started at once
    (they wait on the dead address side by side), nothing but the one line on its stderr
    (librdkafka's own lines included), after --timeout. Refusals of the command line itself."""
    port = free_port()  # nothing listens there
    unreachable = (["groups", "list"], ["groups", "describe", "g"], ["offsets", "show", "g"], ["groups", "delete", "g"])
    started = time.monotonic()
    dead = [start(*args, "-b", f"127.0.0.1:{port}", "--timeout", "2") for args in unreachable]
    dump = start("log", "dump", "--group", "g", "-b", f"127.0.0.1:{port}", "--timeout", "2")
    for proc in dead:
        line = one_error_line(finish(proc))
        assert f"cannot reach 127.0.0.1:{port} within 2s" in line and "Connection refused" in line
        assert time.monotonic() - started < 30  # bounded by --timeout, not librdkafka's defaults
    line = one_error_line(finish(dump))
    assert f"cannot reach 127.0.0.1:{port} within 2s" in line and time.monotonic() - started < 30

    version = cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("groupcoord ")
    assert "expected one of" in one_error_line(cli("groups", "list", "--state", "sleepy", "-b", "127.0.0.1:1"))
    usage = cli("offsets", "reset", "--group", "g", "--partitions", "0")
    assert usage.returncode == 2 and "No such option: --partitions" in one_error_line(usage)
    bad_value = cli("log", "dump", "--partition", "-1")
    assert bad_value.returncode == 2 and "'--partition'" in one_error_line(bad_value)
    bad_env = cli("serve", "--listen", "127.0.0.1:1", env={"GROUPCOORD_GROUP": "notjson"})
    assert 'field "group"' in one_error_line(bad_env)
    assert "greater than or equal to 1" in one_error_line(cli("serve", "--partitions", "-1"))
    line = one_error_line(cli("groups", "list", "--command-config", "/nonexistent/client.properties"))
    assert "cannot read --command-config" in line


def test_log_dump_names_a_missing_topic_or_partition(bootstrap: str, sidecar: ServeProcess) -> None:
    log_topic = sidecar.args[sidecar.args.index("--log-topic") + 1]
    assert "topic 'nope-topic' does not exist" in one_error_line(
        cli("log", "dump", "--partition", "0", "-b", bootstrap, "--topic", "nope-topic")
    )
    assert "has no partition 7 (it has 2)" in one_error_line(
        cli("log", "dump", "--partition", "7", "-b", bootstrap, "--topic", log_topic)
    )
    dumped = cli("log", "dump", "--partition", "0", "-b", bootstrap, "--topic", log_topic, "--json")
    assert json.loads(dumped.stdout)["items"][0]["type"] == "SHARD_EPOCH"
    # Through the sidecar the log topic is hidden: the line says that -b is the cluster's address.
    through_sidecar = one_error_line(
        cli("log", "dump", "--partition", "0", "-b", sidecar.bootstrap, "--topic", log_topic)
    )
    assert f"topic '{log_topic}' does not exist on {sidecar.bootstrap}" in through_sidecar
    assert "-b is the cluster's address" in through_sidecar


def test_command_config_properties_reach_the_client(sidecar: ServeProcess, tmp_path: object) -> None:
    from pathlib import Path

    props = Path(str(tmp_path)) / "client.properties"
    props.write_text("# a comment\nclient.id = ops-tool\nsecurity.protocol=PLAINTEXT\n")
    ok = cli("groups", "list", "-b", sidecar.bootstrap, "--command-config", str(props), "--json")
    assert ok.returncode == 0, ok.stderr
    props.write_text("security.protocol=SASL_SSL\nsasl.mechanism=NOPE\n")
    assert "bad client settings" in one_error_line(
        cli("groups", "list", "-b", sidecar.bootstrap, "--command-config", str(props))
    )


def test_describe_list_and_refusals_with_a_live_member(sidecar: ServeProcess, unique_name: str) -> None:
    topic, group = unique_name, f"{unique_name}-app"
    make_topic(sidecar.bootstrap, topic, 2, 10)
    time.sleep(1.5)  # the sidecar's metadata cache refreshes every second here
    consumer = Consumer(
        {
            "bootstrap.servers": sidecar.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "client.id": "reader-" + "x" * 90,  # long: must not be cut when piped
        }
    )
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < 2 and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert len(consumer.assignment()) == 2
        consumer.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)

        described = cli("groups", "describe", group, "--offsets", "-b", sidecar.bootstrap, "--json")
        assert described.returncode == 0, described.stderr
        rows = {r["partition"]: r for r in json.loads(described.stdout)["items"]}
        assert (rows[0]["current_offset"], rows[0]["log_end_offset"], rows[0]["lag"]) == (4, 10, 6)
        # Assigned but never committed: shown, with no current offset and no lag.
        assert (rows[1]["current_offset"], rows[1]["log_end_offset"], rows[1]["lag"]) == (None, 10, None)
        assert rows[0]["consumer_id"] and rows[0]["client_id"] == "reader-" + "x" * 90

        table = cli("groups", "describe", group, "-b", sidecar.bootstrap)
        assert "reader-" + "x" * 90 in table.stdout  # piped: not truncated
        # Piped: plain whitespace-aligned columns, a header and one line per row, as awk reads them.
        lines = table.stdout.splitlines()
        assert not set(table.stdout) & set("┃│┏━┡┼─╇"), table.stdout
        assert lines[0].split() == [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ]
        fields = sorted(line.split() for line in lines[1:])
        assert [f[:6] for f in fields] == [[group, topic, "0", "4", "10", "6"], [group, topic, "1", "-", "10", "-"]]
        assert all(len(f) == 9 and f[8] == "reader-" + "x" * 90 for f in fields)
        listed = cli("groups", "list", "--state", "Stable", "-b", sidecar.bootstrap, "--format", "text")
        assert [group, "classic", "stable", "false"] in [line.split() for line in listed.stdout.splitlines()[1:]]
        as_yaml = yaml.safe_load(
            cli("groups", "describe", group, "--state", "-b", sidecar.bootstrap, "--format", "yaml").stdout
        )
        assert as_yaml["errors"] == [] and as_yaml["items"][0]["state"] == "stable"
        wide = cli("groups", "describe", group, "--members", "-b", sidecar.bootstrap, "--format", "wide")
        assert wide.stdout.splitlines()[0].split()[-2:] == ["ASSIGNMENT", "TARGET-ASSIGNMENT"]

        members = json.loads(
            cli("groups", "describe", group, "--members", "--verbose", "-b", sidecar.bootstrap, "--json").stdout
        )
        (member,) = members["items"]
        assert member["num_partitions"] == 2 and member["assignment"] == f"{topic}-0,{topic}-1"

        state = json.loads(cli("groups", "describe", group, "--state", "-b", sidecar.bootstrap, "--json").stdout)
        assert state["items"][0]["state"] == "stable" and state["items"][0]["num_members"] == 1

        listed = json.loads(
            cli("groups", "list", "--state", "stable", "--type", "classic", "-b", sidecar.bootstrap, "--json").stdout
        )
        assert group in [g["group"] for g in listed["items"]]
        empty_only = json.loads(cli("groups", "list", "--state", "empty", "-b", sidecar.bootstrap, "--json").stdout)
        assert group not in [g["group"] for g in empty_only["items"]]

        refused = one_error_line(cli("groups", "delete", group, "-b", sidecar.bootstrap))
        assert f"cannot delete group {group!r}: the group still has active members" in refused
        refused = one_error_line(
            cli(
                "offsets",
                "reset",
                "--group",
                group,
                "--topic",
                topic,
                "--to-earliest",
                "--execute",
                "-b",
                sidecar.bootstrap,
            )
        )
        assert f"group {group!r}: it has 1 active member" in refused
        missing = one_error_line(cli("groups", "describe", "no-such-group", "-b", sidecar.bootstrap))
        assert "group 'no-such-group': the group does not exist" in missing
    finally:
        consumer.close()


def test_reset_plans_clamps_and_executes(sidecar: ServeProcess, unique_name: str) -> None:
    topic, group = unique_name, f"{unique_name}-g"
    make_topic(sidecar.bootstrap, topic, 3, 100)
    commit(sidecar.bootstrap, group, [(topic, 0, 50), (topic, 1, 60)])
    b = ["-b", sidecar.bootstrap]

    def shown() -> dict[int, int]:
        return {
            r["partition"]: r["offset"] for r in json.loads(cli("offsets", "show", group, *b, "--json").stdout)["items"]
        }

    dry = cli("offsets", "reset", "--group", group, "--topic", topic, "--to-offset", "999999", *b, "--json")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["executed"] is False
    # Every partition of the topic (not only partition 0), clamped to the log end (100).
    assert [(r["partition"], r["current_offset"], r["new_offset"]) for r in plan["items"]] == [
        (0, 50, 100),
        (1, 60, 100),
        (2, None, 100),
    ]
    assert shown() == {0: 50, 1: 60}  # a dry run changes nothing

    done = cli("offsets", "reset", "--group", group, "--topic", f"{topic}:0,1", "--shift-by", "-70", *b, "--execute")
    assert done.returncode == 0, done.stderr
    assert shown() == {0: 0, 1: 0}  # clamped to the earliest offset
    # Said, as kafka-consumer-groups.sh says it.
    assert f"{group} {topic}-0: -20 is below the earliest offset, 0 is used" in done.stderr, done.stderr

    exported = cli("offsets", "reset", "--group", group, "--topic", f"{topic}:1", "--to-latest", *b, "--export")
    assert exported.stdout == f"{topic},1,100\n"
    plan_file = f"/tmp/{unique_name}.csv"
    with open(plan_file, "w") as f:
        f.write(f"{topic},0,7\n{topic},2,9\n")
    from_file = cli("offsets", "reset", "--group", group, "--from-file", plan_file, *b, "--execute")
    assert from_file.returncode == 0, from_file.stderr
    os.unlink(plan_file)
    assert shown() == {0: 7, 1: 0, 2: 9}

    assert cli("offsets", "reset", "--group", group, "--all-topics", "--to-current", *b, "--execute").returncode == 0
    assert shown() == {0: 7, 1: 0, 2: 9}
    before = cli("offsets", "reset", "--group", group, "--all-topics", "--by-duration", "PT1H", *b, "--json")
    assert [r["new_offset"] for r in json.loads(before.stdout)["items"]] == [0, 0, 0]
    future = cli(
        "offsets", "reset", "--group", group, "--all-topics", "--to-datetime", "2999-01-01T00:00:00", *b, "--json"
    )
    assert [r["new_offset"] for r in json.loads(future.stdout)["items"]] == [100, 100, 100]
    assert "expected YYYY-MM-DD" in one_error_line(
        cli("offsets", "reset", "--group", group, "--all-topics", "--to-datetime", "yesterday", *b)
    )

    assert "does not exist" in one_error_line(
        cli("offsets", "reset", "--group", group, "--topic", "nope", "--to-earliest", *b)
    )
    assert "has no partition 3" in one_error_line(
        cli("offsets", "reset", "--group", group, "--topic", f"{topic}:3", "--to-earliest", *b)
    )
    assert "exactly one strategy" in one_error_line(cli("offsets", "reset", "--group", group, "--topic", topic, *b))


def test_reset_to_datetime_finds_the_first_record_at_or_after_that_time(
    sidecar: ServeProcess, unique_name: str
) -> None:
    topic, group = unique_name, f"{unique_name}-t"
    admin = AdminClient({"bootstrap.servers": sidecar.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    producer = Producer({"bootstrap.servers": sidecar.bootstrap})
    base = 1_700_000_000_000  # 2023-11-14T22:13:20Z; one record a minute
    for i in range(30):
        producer.produce(topic, b"x", partition=0, timestamp=base + i * 60_000)
    assert producer.flush(15) == 0
    b = ["--group", group, "--topic", topic, "-b", sidecar.bootstrap, "--json"]
    for when, expected in (
        ("2023-11-14T22:13:20", 0),  # exactly the first record
        ("2023-11-14T22:30:50", 18),  # between records 17 and 18
        ("2023-11-14T23:30:50+01:00", 18),  # the same instant, another zone
        ("2023-11-14T22:42:20Z", 29),  # exactly the last record
        ("2023-11-14T22:42:21Z", 30),  # after every record: the log end
        ("2020-01-01T00:00:00", 0),
    ):
        plan = cli("offsets", "reset", "--to-datetime", when, *b)
        assert plan.returncode == 0, plan.stderr
        assert [r["new_offset"] for r in json.loads(plan.stdout)["items"]] == [expected], when


def test_offsets_delete_and_delete_several_groups(sidecar: ServeProcess, unique_name: str) -> None:
    topic = unique_name
    make_topic(sidecar.bootstrap, topic, 2, 5)
    b = ["-b", sidecar.bootstrap]
    commit(sidecar.bootstrap, f"{topic}-a", [(topic, 0, 1), (topic, 1, 2)])
    # (A commit for a topic the cluster lacks is refused, as in Kafka, and the offsets of a
    # deleted topic are dropped by the sidecar, so no group keeps offsets of a missing topic.)
    commit(sidecar.bootstrap, f"{topic}-b", [(topic, 0, 3)])
    described = cli("groups", "describe", f"{topic}-b", *b, "--json")
    assert described.returncode == 0, described.stderr
    rows = {r["topic"]: r for r in json.loads(described.stdout)["items"]}
    assert (rows[topic]["current_offset"], rows[topic]["log_end_offset"], rows[topic]["lag"]) == (3, 5, 2)
    deleted = cli("offsets", "delete", "--group", f"{topic}-a", "--topic", f"{topic}:1", *b)
    assert deleted.returncode == 0, deleted.stderr
    left = json.loads(cli("offsets", "show", f"{topic}-a", *b, "--json").stdout)
    assert [(r["partition"], r["offset"]) for r in left["items"]] == [(0, 1)]

    result = cli("groups", "delete", f"{topic}-a", f"{topic}-b", f"{topic}-none", *b, "--json")
    assert result.returncode == 1
    document = json.loads(result.stdout)
    by_group = {r["group"]: r for r in document["items"]}
    assert document["errors"] == [{"group": f"{topic}-none", "error": "the group does not exist"}]
    assert by_group[f"{topic}-a"]["deleted"] and by_group[f"{topic}-b"]["deleted"]
    assert by_group[f"{topic}-none"]["error"] == "the group does not exist"
    assert f"cannot delete group '{topic}-none': the group does not exist" in result.stderr


def json_documents(text: str) -> list[Any]:
    decoder, docs, pos = json.JSONDecoder(), [], 0
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        doc, pos = decoder.raw_decode(text, pos)
        docs.append(doc)
    return docs


def test_describe_shows_each_members_protocol_while_a_group_migrates(sidecar: ServeProcess, unique_name: str) -> None:
    topic, group = unique_name, f"{unique_name}-mixed"
    make_topic(sidecar.bootstrap, topic, 3, 1)
    time.sleep(1.5)
    classic = Consumer({"bootstrap.servers": sidecar.bootstrap, "group.id": group, "enable.auto.commit": False})
    classic.subscribe([topic])
    modern: Consumer | None = None
    try:
        deadline = time.monotonic() + 60
        while not classic.assignment() and time.monotonic() < deadline:
            classic.poll(0.2)
        state = json.loads(cli("groups", "describe", group, "--state", "-b", sidecar.bootstrap, "--json").stdout)
        assert (state["items"][0]["type"], state["items"][0]["member_protocols"]) == ("classic", "classic")
        assert state["items"][0]["migration_policy"] == "bidirectional"  # the default, as serve has it
        policy = {"GROUPCOORD_GROUP": json.dumps({"group.consumer.migration.policy": "upgrade"})}
        state = json.loads(
            cli("groups", "describe", group, "--state", "-b", sidecar.bootstrap, "--json", env=policy).stdout
        )
        assert state["items"][0]["migration_policy"] == "upgrade"

        # A consumer-protocol member joins: the group becomes a consumer group with a classic member in it.
        modern = Consumer(
            {
                "bootstrap.servers": sidecar.bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "enable.auto.commit": False,
            }
        )
        modern.subscribe([topic])
        members: dict[str, Any] = {}
        while time.monotonic() < deadline:
            classic.poll(0.1)
            modern.poll(0.1)
            shown = cli("groups", "describe", group, "--members", "-b", sidecar.bootstrap, "--json")
            members = {m["protocol"]: m for m in json.loads(shown.stdout)["items"]}
            if set(members) == {"classic", "consumer"}:
                break
        assert set(members) == {"classic", "consumer"}
        assert all(isinstance(m["epoch"], int) and m["epoch"] > 0 for m in members.values())

        # --watch keeps printing until the group is stable, then exits 0.
        watch = popen(
            [sys.executable, "-m", "groupcoord.cli.main", "groups", "describe", group, "--state", "--watch", "--json"]
            + ["-b", sidecar.bootstrap],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        while watch.poll() is None and time.monotonic() < deadline + 60:
            classic.poll(0.1)
            modern.poll(0.1)
        stdout, stderr = watch.communicate(timeout=30)
        assert watch.returncode == 0, stderr
        final = json_documents(stdout)[-1]["items"][0]
        assert (final["type"], final["state"], final["member_protocols"]) == ("consumer", "stable", "classic,consumer")
    finally:
        classic.close()
        if modern is not None:
            modern.close()


def test_an_unknown_group_is_an_error_with_no_table(sidecar: ServeProcess, unique_name: str) -> None:
    """Like kafka-consumer-groups.sh: describe and offsets show of a group that does not exist say so
    in one line and exit 1; nothing (no empty table) on stdout."""
    for command in (["groups", "describe", unique_name], ["offsets", "show", unique_name]):
        result = cli(*command, "-b", sidecar.bootstrap)
        assert one_error_line(result) == f"error: group {unique_name!r}: the group does not exist"
        assert result.stdout == ""
