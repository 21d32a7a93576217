"""``groupcoord migrate import|export`` and ``log skip``, against the local broker's own group
coordinator, a real ``groupcoord serve`` and real consumers."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.coordinator.service.partitioning import partition_for
from groupcoord.local_broker import free_port
from tests.client_records import log_headers, offset_of, partition_of
from tests.integration.serve_process import ServeProcess
from tests.integration.test_cli_ops import cli, one_error_line
from tests.topics import ensure_topic

pytestmark = pytest.mark.integration

# The local broker's own group coordinator answers a JoinGroup about half a session timeout after
# it came in: librdkafka's default 45 s kept a consumer on the cluster waiting 23 s for its assignment.
CLUSTER_JOIN = {"session.timeout.ms": 6000}


def consume(bootstrap: str, group: str, topic: str, expect: int, commit: bool) -> list[tuple[int, int]]:
    """(partition, offset) of up to ``expect`` records read by a real subscribing consumer."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **CLUSTER_JOIN,
        }
    )
    c.subscribe([topic])
    seen: list[tuple[int, int]] = []
    deadline = time.monotonic() + 60
    try:
        while len(seen) < expect and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            seen.append((partition_of(msg), offset_of(msg)))
        if commit and seen:
            last = seen[-1]
            c.commit(offsets=[TopicPartition(topic, last[0], last[1] + 1)], asynchronous=False)
        # Nothing more arrives beyond what was asked for (a reprocessed record would show here).
        extra = c.poll(2.0)
        if extra is not None and extra.error() is None:
            seen.append((partition_of(extra), offset_of(extra)))
    finally:
        c.close()
    return seen


def commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit from outside the group, as an admin tool does; retried while the sidecar has not seen
    a new topic yet (it refuses commits for topics it does not know)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
                return
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
    finally:
        c.close()


def shown(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets as ``offsets show`` reads them (none for an unknown group)."""
    done = cli("offsets", "show", group, "-b", bootstrap, "--json")
    if done.returncode != 0:
        assert "the group does not exist" in done.stderr, done.stderr
        return {}
    return {(r["topic"], r["partition"]): r["offset"] for r in json.loads(done.stdout)["items"]}


def errors(result: object) -> list[str]:
    return [line for line in getattr(result, "stderr", "").splitlines() if line.startswith("error: ")]


def test_import_then_a_consumer_through_the_sidecar_resumes_exactly_there(
    bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    topic, group = unique_name, f"{unique_name}-app"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        producer.produce(topic, str(i).encode(), partition=0)
    assert producer.flush(15) == 0

    # The application, pointed at the cluster itself, reads 8 records and commits there.
    first = consume(bootstrap, group, topic, 8, commit=True)
    assert [o for _, o in first][:8] == list(range(8))
    committed_at = 8  # the app committed its position after its 8th record

    b = ["--cluster", bootstrap, "--sidecar", sidecar.bootstrap, "--group", group]
    plan = cli("migrate", "import", *b, "--json")
    assert plan.returncode == 0, plan.stderr
    rows = json.loads(plan.stdout)
    assert rows["executed"] is False
    assert [(r["topic"], r["partition"], r["offset"], r["sidecar_now"]) for r in rows["items"]] == [
        (topic, 0, committed_at, None)
    ]
    shown = cli("offsets", "show", group, "-b", sidecar.bootstrap, "--json")
    # The plan wrote nothing: the sidecar does not know the group.
    assert shown.returncode == 1 and json.loads(shown.stdout or "null") is None, shown.stdout
    assert f"group {group!r}: the group does not exist" in shown.stderr

    done = cli("migrate", "import", *b, "--execute")
    assert done.returncode == 0, done.stderr
    assert "copied and verified 1 offset(s)" in done.stderr  # piped: what is said to a person goes to stderr

    # The same application, now pointed at the sidecar, resumes exactly there.
    second = consume(sidecar.bootstrap, group, topic, 20 - committed_at, commit=True)
    # No record reprocessed (nothing before 8), none skipped (every one of 8..19), nothing extra.
    assert [o for _, o in second] == list(range(committed_at, 20))

    # The way back: export refuses nothing here (no members), and the cluster gets offset 20.
    back = cli("migrate", "export", *b, "--execute", "--json")
    assert back.returncode == 0, back.stderr
    assert [r["offset"] for r in json.loads(back.stdout)["items"]] == [20]


def test_import_refuses_a_group_with_active_members(bootstrap: str, sidecar: ServeProcess, unique_name: str) -> None:
    topic, group = unique_name, f"{unique_name}-live"
    admin = AdminClient({"bootstrap.servers": sidecar.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    time.sleep(1.5)
    c = Consumer({"bootstrap.servers": sidecar.bootstrap, "group.id": group, "enable.auto.commit": False})
    c.subscribe([topic])
    try:
        deadline = time.monotonic() + 60
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.2)
        line = one_error_line(
            cli("migrate", "import", "--cluster", bootstrap, "--sidecar", sidecar.bootstrap, "--group", group)
        )
        assert f"group {group!r} has 1 active member(s) on the sidecar" in line
        # --force is for the source's members: with members on the destination the write was sent
        # anyway and failed as librdkafka's raw KafkaError{code=UNKNOWN_MEMBER_ID,...}.
        commit(bootstrap, group, {(topic, 0): 3})
        b = ["--cluster", bootstrap, "-b", sidecar.bootstrap, "--group", group]
        line = one_error_line(cli("migrate", "import", *b, "--execute", "--force"))
        assert line == (
            f"error: group {group!r} has 1 active member(s) on the sidecar; stop its consumers first"
            " (--force applies to the cluster side only)"
        )
    finally:
        c.close()
    assert shown(sidecar.bootstrap, group) == {}


def test_export_refuses_a_group_still_running_on_the_cluster(
    bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    topic, group = unique_name, f"{unique_name}-cluster-live"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, **CLUSTER_JOIN})
    c.subscribe([topic])
    try:
        deadline = time.monotonic() + 60
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.2)
        assert c.assignment()
        line = one_error_line(
            cli("migrate", "export", "--cluster", bootstrap, "--sidecar", sidecar.bootstrap, "--group", group)
        )
        # The local broker's own coordinator describes a running group as stable with no members.
        assert f"group {group!r} " in line and "on the cluster; stop its consumers first" in line
    finally:
        c.close()


def test_an_offset_is_never_moved_back_unless_allowed(bootstrap: str, sidecar: ServeProcess, unique_name: str) -> None:
    """A second import, after the application moved on through the sidecar, wrote the cluster's
    older offset back ("copied and verified", exit code 0): the application read those records
    again. Now the plan marks it, --execute refuses the group (nothing of it written) unless
    --allow-rewind; export alike."""
    topic, group = unique_name, f"{unique_name}-rerun"
    ensure_topic(bootstrap, topic, 2)
    commit(bootstrap, group, {(topic, 0): 10, (topic, 1): 7})
    b = ["--cluster", bootstrap, "-b", sidecar.bootstrap, "--group", group]
    first = cli("migrate", "import", *b, "--execute")
    assert first.returncode == 0, first.stderr
    commit(sidecar.bootstrap, group, {(topic, 0): 15, (topic, 1): 7})  # the application moved on

    plan = cli("migrate", "import", *b, "--json")
    assert plan.returncode == 1, plan.stderr
    rows = {
        r["partition"]: (r["offset"], r["sidecar_now"], r["action"], r["status"])
        for r in json.loads(plan.stdout)["items"]
    }
    assert rows == {0: (10, 15, "rewind", "refused"), 1: (7, 7, "copy", "refused")}

    refused = cli("migrate", "import", *b, "--execute")
    assert refused.returncode == 1
    (line,) = errors(refused)
    assert line == (
        f"error: group {group!r}: copying would move the sidecar's committed offsets back ({topic}-0 from 15 to 10),"
        " and its consumers would read those records again; nothing of the group is written (--allow-rewind to"
        " copy anyway)"
    )
    assert shown(sidecar.bootstrap, group) == {(topic, 0): 15, (topic, 1): 7}

    allowed = cli("migrate", "import", *b, "--execute", "--allow-rewind")
    assert allowed.returncode == 0, allowed.stderr
    assert shown(sidecar.bootstrap, group) == {(topic, 0): 10, (topic, 1): 7}

    # The way back: the cluster's group moved on meanwhile (its own consumers, started early).
    commit(bootstrap, group, {(topic, 1): 12})
    back = cli("migrate", "export", *b, "--execute")
    assert back.returncode == 1
    (line,) = errors(back)
    assert f"the cluster's committed offsets back ({topic}-1 from 12 to 7)" in line
    assert shown(bootstrap, group) == {(topic, 0): 10, (topic, 1): 12}


def test_swapped_or_equal_addresses_are_refused_before_anything(
    bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    """--cluster SIDECAR -b BROKER copied the broker's group onto the cluster ("copied and
    verified ... to the sidecar"), and --cluster S -b S "succeeded" doing nothing: the sidecar is
    told apart (its group coordinator is a node of its own) and the command line refused."""
    topic, group = unique_name, f"{unique_name}-swap"
    ensure_topic(bootstrap, topic)
    commit(sidecar.bootstrap, group, {(topic, 0): 5})
    commit(bootstrap, group, {(topic, 0): 18})
    s, k = sidecar.bootstrap, bootstrap
    for command in ("import", "export"):
        swapped = cli("migrate", command, "--cluster", s, "-b", k, "--group", group, "--execute")
        assert swapped.returncode == 2, swapped.stderr
        assert errors(swapped) == [
            f"error: --cluster {s} is a groupcoord sidecar and -b {k} is not (swapped?): --cluster names the"
            " cluster's own brokers, -b the sidecar"
        ]
    both = cli("migrate", "import", "--cluster", s, "-b", s, "--group", group, "--execute")
    assert both.returncode == 2
    assert errors(both) == [
        f"error: --cluster {s} is a groupcoord sidecar, as -b {s} is: --cluster must name the cluster's own brokers"
    ]
    neither = cli("migrate", "import", "--cluster", k, "-b", k, "--all-groups", "--execute")
    assert neither.returncode == 2
    (line,) = errors(neither)
    assert line.startswith(f"error: -b {k} is not a groupcoord sidecar (its group coordinator is the cluster's broker")
    assert line.endswith(f"nor is --cluster {k}: -b must name the sidecar")
    assert shown(bootstrap, group) == {(topic, 0): 18} and shown(sidecar.bootstrap, group) == {(topic, 0): 5}


def test_what_the_source_lacks_is_listed_and_kept_or_with_replace_deleted(
    bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    """The sidecar's offsets for partitions the cluster's group has none for were kept without a
    word (the application then skipped what it would have reset for): the plan lists them (ACTION
    keep) and says so; --replace deletes them (OffsetDelete) and verifies they are gone."""
    topic, group = unique_name, f"{unique_name}-dup"
    ensure_topic(bootstrap, topic, 2)
    commit(sidecar.bootstrap, group, {(topic, 0): 10, (topic, 1): 4})
    commit(bootstrap, group, {(topic, 1): 15})
    b = ["--cluster", bootstrap, "-b", sidecar.bootstrap, "--group", group]
    plan = cli("migrate", "import", *b, "--json")
    assert plan.returncode == 0, plan.stderr
    rows = {r["partition"]: (r["offset"], r["sidecar_now"], r["action"]) for r in json.loads(plan.stdout)["items"]}
    assert rows == {0: (None, 10, "keep"), 1: (15, 4, "copy")}

    kept = cli("migrate", "import", *b, "--execute")
    assert kept.returncode == 0, kept.stderr
    assert "kept 1 offset(s) the sidecar has for partitions the cluster has none for" in kept.stderr
    assert "--replace deletes them" in kept.stderr
    assert shown(sidecar.bootstrap, group) == {(topic, 0): 10, (topic, 1): 15}

    replaced = cli("migrate", "import", *b, "--execute", "--replace", "--json")
    assert replaced.returncode == 0, replaced.stderr
    document = json.loads(replaced.stdout)
    assert {r["partition"]: (r["action"], r["status"]) for r in document["items"]} == {
        0: ("delete", "verified"),
        1: ("copy", "verified"),
    }
    assert document["verified"] is True and document["errors"] == []
    assert shown(sidecar.bootstrap, group) == {(topic, 1): 15}


def test_each_group_is_reported_and_one_failing_leaves_the_next_going(
    bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    """A group failing part way stopped the command: the groups after it were not moved and
    --json printed nothing. Now each offset's STATUS says what was written and verified, the
    failure is in ``errors`` (and on stderr), the next group is moved, and the exit code is 1.
    The failure: an offset for the sidecar's own log topic, which the cluster keeps and the
    sidecar refuses (not authorized)."""
    topic = unique_name
    log_topic = sidecar.args[sidecar.args.index("--log-topic") + 1]
    ensure_topic(bootstrap, topic)
    bad, good = f"{unique_name}-a-bad", f"{unique_name}-b-good"
    commit(bootstrap, bad, {(log_topic, 0): 3, (topic, 0): 1})
    commit(bootstrap, good, {(topic, 0): 4})
    b = ["--cluster", bootstrap, "-b", sidecar.bootstrap, "--group", bad, "--group", good, "--execute"]
    done = cli("migrate", "import", *b, "--json")
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert {(r["group"], r["topic"]): r["status"] for r in document["items"]} == {
        (bad, log_topic): "failed",
        (bad, topic): "verified",
        (good, topic): "verified",
    }
    (error,) = document["errors"]
    assert (error["group"], error["topic"], error["partition"]) == (bad, log_topic, 0)
    assert error["error"] == (
        f"cannot write the offset of group {bad!r} for {log_topic}-0 to the sidecar: not authorized for this topic"
    )
    assert document["executed"] is True and document["verified"] is False
    assert errors(done) == [f"error: {error['error']}"]
    assert shown(sidecar.bootstrap, good) == {(topic, 0): 4}
    assert shown(sidecar.bootstrap, bad) == {(topic, 0): 1}

    text = cli("migrate", "import", *b)
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "OFFSET", "METADATA", "SIDECAR-NOW", "ACTION", "STATUS"]
    assert [line.split()[-1] for line in lines[1:]] == ["failed", "verified", "verified"]
    assert "copied and verified 1 offset(s) of 1 group(s) to the sidecar" in text.stderr
    assert errors(text) == [f"error: {error['error']}"]  # a failure is its error line alone


def test_log_skip_lets_a_shard_with_an_unreadable_record_load(bootstrap: str, unique_name: str) -> None:
    topic = f"gc-cli-skip-{uuid.uuid4().hex[:10]}"
    serve = ServeProcess(bootstrap, free_port(), topic, partitions=2)
    serve.start()
    broken, other = (
        "g-broken",
        next(f"g-other-{i}" for i in range(100) if partition_for(f"g-other-{i}", 2) == partition_for("g-broken", 2)),
    )
    shard = partition_for(broken, 2)
    ensure_topic(bootstrap, "t")
    try:
        c = Consumer({"bootstrap.servers": serve.bootstrap, "group.id": broken, "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("t", 0, 5)], asynchronous=False)
        c.close()
        c = Consumer({"bootstrap.servers": serve.bootstrap, "group.id": other, "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("t", 0, 11)], asynchronous=False)
        c.close()
    finally:
        serve.stop()

    # An undecodable record (an OffsetCommit key header over garbage) lands in that shard.
    producer = Producer({"bootstrap.servers": bootstrap})
    delivered: list[int] = []
    producer.produce(
        topic,
        b"\x00\x01\x00\x01junk",
        b"\x00\x01junk",
        partition=shard,
        headers=log_headers(99, 0, 1),
        on_delivery=lambda e, m: delivered.append(offset_of(m)),
    )
    assert producer.flush(15) == 0
    (bad_offset,) = delivered

    serve = ServeProcess(bootstrap, free_port(), topic, partitions=2).start()
    try:
        # ListGroups' error is reported, never an empty or partial list.
        listed = one_error_line(cli("groups", "list", "-b", serve.bootstrap, "--timeout", "5"))
        assert "listing groups failed: the coordinator is not available" in listed
        line = one_error_line(cli("offsets", "show", other, "-b", serve.bootstrap, "--timeout", "5"))
        assert f"group {other!r}: the coordinator is not available" in line
        failed = cli("groups", "describe", other, "--state", "-b", serve.bootstrap, "--timeout", "5")
        assert failed.returncode == 1
        assert f"group {other!r}: the coordinator is not available" in failed.stderr
    finally:
        serve.stop()

    dump = cli("log", "dump", "--group", broken, "-b", bootstrap, "--topic", topic, "--json")
    assert dump.returncode == 0, dump.stderr
    assert [r["offset"] for r in json.loads(dump.stdout)["items"] if r["type"] == "UNREADABLE"] == [bad_offset]

    b = [
        "--partition",
        str(shard),
        "--offset",
        str(bad_offset),
        "--reason",
        "test: corrupt write",
        "-b",
        bootstrap,
        "--topic",
        topic,
    ]
    dry = cli("log", "skip", *b)
    assert dry.returncode == 0 and "dry run" in dry.stderr and dry.stdout == ""  # a note, piped
    readable = one_error_line(cli("log", "skip", *b[:2], "--offset", "0", *b[4:]))
    assert "is readable (SHARD_EPOCH)" in readable
    written = cli("log", "skip", *b, "--execute", "--json")
    assert written.returncode == 0, written.stderr
    assert json.loads(written.stdout)["items"][0]["decision"]["offset"] == bad_offset
    dump = cli("log", "dump", "--partition", str(shard), "-b", bootstrap, "--topic", topic, "--json")
    decisions = [r for r in json.loads(dump.stdout)["items"] if r["type"] == "LOG_SKIP"]
    assert [(d["value"]["offset"], d["value"]["reason"]) for d in decisions] == [(bad_offset, "test: corrupt write")]
    assert "@" in decisions[0]["value"]["operator"]

    serve = ServeProcess(bootstrap, free_port(), topic, partitions=2).start()
    try:
        for group, offset in ((broken, 5), (other, 11)):
            shown = cli("offsets", "show", group, "-b", serve.bootstrap, "--json")
            assert shown.returncode == 0, shown.stderr
            assert [(r["partition"], r["offset"]) for r in json.loads(shown.stdout)["items"]] == [(0, offset)]
    finally:
        serve.stop()


def test_all_groups_leaves_out_the_sidecars_own_groups(tmp_path: object) -> None:
    """On a cluster of its own (no other test's groups): ``migrate import --all-groups`` plans the
    application's group and leaves out the sidecar's placement groups, which are live on the
    cluster while it runs; ``-b`` names the sidecar, as for every other command."""
    from groupcoord.local_broker import LocalBroker

    with LocalBroker(port=free_port()) as broker:
        topic, group = f"mig-all-{uuid.uuid4().hex[:8]}", "app"
        ensure_topic(broker.bootstrap, topic, 1)
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
        c.close()
        serve = ServeProcess(broker.bootstrap, free_port(), f"gc-cli-all-{uuid.uuid4().hex[:8]}", partitions=1).start()
        try:
            # serve listens before its placement consumer has joined: the placement group is on the
            # cluster (to be left out) only once it has.
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            deadline = time.monotonic() + 60
            while not any(
                g.group_id.startswith("groupcoord-placement-")
                for g in admin.list_consumer_groups(request_timeout=10).result().valid
            ):
                assert time.monotonic() < deadline, "serve's placement group never reached the cluster"
                time.sleep(0.2)
            plan = cli(
                "migrate", "import", "--cluster", broker.bootstrap, "-b", serve.bootstrap, "--all-groups", "--json"
            )
        finally:
            serve.stop()
            broker.stop(graceful=False)  # not the 5 s Tansu lingers on SIGTERM with a client connected
    assert plan.returncode == 0, plan.stderr
    document = json.loads(plan.stdout)
    assert {r["group"] for r in document["items"]} == {group}
    assert document["skipped_groups"] and all(g.startswith("groupcoord-placement-") for g in document["skipped_groups"])
    assert document["errors"] == [] and document["executed"] is False
