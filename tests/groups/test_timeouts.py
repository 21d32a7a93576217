"""Session and rebalance timeouts, the assignment interval, and timers after a load."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import (
    AssignmentDue,
    MemberState,
    RebalanceTimeout,
    SessionTimeout,
    on_loaded,
    on_timer,
)
from groupcoord.coordinator.runtime.api import ScheduleTimer
from groupcoord.records import RecordType
from tests.groups.harness import Coordinator, assigned, image, topic, tps
from tests.messages import tid

FOO = tid("foo")


def test_every_heartbeat_rearms_the_session_timer() -> None:
    c = Coordinator(image(topic("foo", 2)))
    c.join("A", ["foo"])
    key = "consumer-session\x00grp\x00A"
    assert c.timers[key].deadline_ms == c.now + 45000
    assert c.timers[key].event == SessionTimeout("grp", "A")
    c.now += 3000
    c.beat("A", 1, tps(FOO, 0, 1))
    assert c.timers[key].deadline_ms == c.now + 45000


def test_session_timeout_tombstones_member_and_bumps_epoch() -> None:
    c = Coordinator(image(topic("foo", 2)))
    c.join("A", ["foo"])
    c.join("B", ["foo"])
    n = len(c.log)
    c.fire("consumer-session\x00grp\x00B")
    written = c.log[n:]
    assert [(r.type, r.value is None) for r in written[:3]] == [
        (RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, True),
        (RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, True),
        (RecordType.CONSUMER_GROUP_MEMBER_METADATA, True),
    ]
    metadata = written[3]
    assert metadata.type == RecordType.CONSUMER_GROUP_METADATA and metadata.value is not None
    assert metadata.value.epoch == 3
    assert "B" not in c.group().members
    assert c.beat("B", 2, tps(FOO)).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_stale_session_timer_is_a_no_op() -> None:
    c = Coordinator(image(topic("foo", 2)))
    c.join("A", ["foo"])
    c.beat("A", -1)
    result = on_timer(c.state, SessionTimeout("grp", "A"), c.now, c.metadata, c.config)
    assert result.records == []


def test_rebalance_timeout_fences_member_stuck_revoking() -> None:
    c = Coordinator(image(topic("foo", 2)))
    c.join("A", ["foo"], rebalance_timeout_ms=7000)
    c.beat("A", 1, tps(FOO, 0, 1))
    c.join("B", ["foo"])
    c.beat("A", 1, tps(FOO, 0, 1))
    assert c.group().members["A"].state == MemberState.UNREVOKED_PARTITIONS
    timer = c.timers["consumer-rebalance\x00grp\x00A"]
    assert timer.deadline_ms == c.now + 7000 and timer.event == RebalanceTimeout("grp", "A", 1)
    # A timer from an older epoch does nothing.
    assert on_timer(c.state, RebalanceTimeout("grp", "A", 0), c.now, c.metadata, c.config).records == []
    c.fire("consumer-rebalance\x00grp\x00A")
    assert "A" not in c.group().members
    r = c.beat("B", 2, tps(FOO))
    assert assigned(r) == [0, 1]


def test_rebalance_timer_cancelled_once_revoked() -> None:
    c = Coordinator(image(topic("foo", 2)))
    c.join("A", ["foo"])
    c.beat("A", 1, tps(FOO, 0, 1))
    c.join("B", ["foo"])
    c.beat("A", 1, tps(FOO, 0, 1))
    assert "consumer-rebalance\x00grp\x00A" in c.timers
    c.beat("A", 1, tps(FOO, 0))
    assert "consumer-rebalance\x00grp\x00A" not in c.timers


def test_assignment_interval_throttles_and_timer_catches_up() -> None:
    c = Coordinator(image(topic("foo", 4)), ConsumerGroupConfig(assignment_interval_ms=1000))
    c.join("A", ["foo"])  # first assignment is never throttled (timestamp 0)
    assert c.epochs() == (1, 1)
    c.now += 100
    r = c.join("B", ["foo"])
    assert c.epochs() == (2, 1)  # ASSIGNING: the target waits for the interval
    assert c.group().state().value == "Assigning"
    assert r.member_epoch == 1 and assigned(r) == []
    due = c.timers["consumer-assignment\x00grp"]
    assert due.deadline_ms == 1000 + 1000 and due.event == AssignmentDue("grp")
    # Too early: the timer re-arms itself.
    early = on_timer(c.state, AssignmentDue("grp"), c.now, c.metadata, c.config)
    assert early.records == [] and isinstance(early.timers[0], ScheduleTimer)
    c.now = due.deadline_ms
    c.fire("consumer-assignment")
    assert c.epochs() == (2, 2)
    assert c.target("A") and c.target("B")


def test_on_loaded_rearms_timers() -> None:
    c = Coordinator(image(topic("foo", 2)), ConsumerGroupConfig(assignment_interval_ms=1000))
    c.join("A", ["foo"])
    c.beat("A", 1, tps(FOO, 0, 1))
    c.now += 10
    c.join("B", ["foo"])
    timers = on_loaded(c.state, c.now, c.config)
    keys = {t.key for t in timers if isinstance(t, ScheduleTimer)}
    assert keys == {
        "consumer-session\x00grp\x00A",
        "consumer-session\x00grp\x00B",
        "consumer-assignment\x00grp",
    }
