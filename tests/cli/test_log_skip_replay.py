"""A ``LogSkip`` decision written after an unreadable record lets the deferred load pass over it."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.group_shard import GroupCoordinatorState
from groupcoord.coordinator.runtime.headers import make_headers
from groupcoord.coordinator.runtime.replayer import LogReadError, LogReplayer
from groupcoord.records import CoordinatorRecord, RecordType, decode, encode
from groupcoord.records.definitions import (
    LogSkipKey,
    LogSkipValue,
    OffsetCommitKey,
    OffsetCommitValue,
    ShardEpochKey,
    ShardEpochValue,
)

Entry = tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]


def entry(record: CoordinatorRecord, epoch: int = 1) -> Entry:
    key, value = encode(record)
    return key, value, make_headers(epoch, 0, 1)


def commit(group: str, offset: int) -> Entry:
    value = OffsetCommitValue(offset, -1, "", 1, -1, None)
    return entry(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey(group, "t", 0), value))


def skip(offset: int) -> Entry:
    value = LogSkipValue(offset, "ops@host", 1_700_000_000_000, "corrupt by a bad producer")
    # Written by the CLI, not by an owner: no epoch header, i.e. epoch 0, older than the shard's.
    key, raw = encode(CoordinatorRecord(RecordType.LOG_SKIP, LogSkipKey(offset), value))
    return key, raw, []


BAD_BODY = (b"\x00\x01garbage", b"\x00\x01\x00\x01garbage", make_headers(1, 0, 1))  # an OffsetCommit key header
NO_HEADER = (b"x", b"y", make_headers(1, 0, 1))  # not even a record type


def load(entries: list[Entry]) -> tuple[GroupCoordinatorState, LogReplayer]:
    state = GroupCoordinatorState()
    replayer = LogReplayer("log", 3, [state], deferred=True)
    for offset, (key, value, headers) in enumerate(entries):
        replayer.feed(offset, key, value, headers)
    replayer.finish()
    return state, replayer


def epoch(n: int) -> Entry:
    return entry(CoordinatorRecord(RecordType.SHARD_EPOCH, ShardEpochKey(n), ShardEpochValue(n, "o", 0)), n)


@pytest.mark.parametrize("bad", [BAD_BODY, NO_HEADER], ids=["bad-body", "bad-key-header"])
def test_load_fails_without_a_decision_and_names_the_offset_and_the_fix(bad: Entry) -> None:
    with pytest.raises(
        LogReadError, match=r"partition 3 offset 2: .*groupcoord log skip --topic \S+ --partition 3 --offset 2"
    ):
        load([epoch(1), commit("a", 5), bad, commit("b", 7)])


@pytest.mark.parametrize("bad", [BAD_BODY, NO_HEADER], ids=["bad-body", "bad-key-header"])
def test_a_later_decision_lets_the_load_pass_over_the_record_and_keeps_the_rest(bad: Entry) -> None:
    with_skip, replayer = load([epoch(1), commit("a", 5), bad, commit("b", 7), epoch(2), skip(2), commit("b", 8)])
    reference, _ = load([epoch(1), commit("a", 5), commit("b", 7), epoch(2), commit("b", 8)])
    assert with_skip.snapshot() == reference.snapshot()
    assert replayer.skip_decisions == {2: "corrupt by a bad producer"}
    assert replayer.unreadable_skipped == 1


def test_a_decision_for_another_offset_does_not_hide_an_unreadable_record() -> None:
    with pytest.raises(LogReadError, match="offset 2"):
        load([epoch(1), commit("a", 5), BAD_BODY, skip(1)])


def test_the_skip_record_round_trips() -> None:
    key, value, _ = skip(9)
    record = decode(key, value)
    assert record.type is RecordType.LOG_SKIP
    assert record.value == LogSkipValue(9, "ops@host", 1_700_000_000_000, "corrupt by a bad producer")


@pytest.mark.integration
def test_the_dry_run_says_what_it_would_skip_in_words(bootstrap: str, unique_name: str) -> None:
    """It printed Python's reprs: ``skip offset 1 (None)`` for a tombstone and ``({'topic': ...})``
    for a readable record (with --force). Now the JSON ``log dump`` prints, and "tombstone"."""
    from confluent_kafka import Producer

    from tests.client_records import log_headers
    from tests.inprocess_cli import cli
    from tests.topics import ensure_topic

    ensure_topic(bootstrap, unique_name)
    key, value = encode(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 0), None))
    _, committed = commit("g", 5)[:2]
    producer = Producer({"bootstrap.servers": bootstrap})
    for v in (committed, value):  # a commit, then its tombstone
        producer.produce(unique_name, v, key, partition=0, headers=log_headers(1, 0, 1))
    producer.produce(unique_name, BAD_BODY[1], BAD_BODY[0], partition=0, headers=log_headers(1, 0, 1))
    assert producer.flush(15) == 0

    said = []
    for offset in range(3):
        args = ["--partition", "0", "--offset", str(offset), "--reason", "test [x]", "-b", bootstrap]
        done = cli("log", "skip", *args, "--topic", unique_name, "--force")
        assert done.returncode == 0, done.stderr
        # Sentences for a person, so on stderr when piped (docs/cli.md); nothing on stdout.
        assert done.stdout == "", done.stdout
        said.append(done.stderr.splitlines()[0])
    key_text = '{"group": "g", "topic": "t", "partition": 0}'
    assert said[0].startswith(
        f"would write to {unique_name}-0: skip offset 0 (a readable OFFSET_COMMIT record, key {key_text}, value {{"
    )
    assert f"skip offset 1 (a readable OFFSET_COMMIT record, key {key_text}, tombstone), by " in said[1]
    assert "skip offset 2 (unreadable: " in said[2]
    assert all("None" not in line and "{'" not in line and "reason 'test [x]'" in line for line in said), said
