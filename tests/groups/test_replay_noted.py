"""The read-back of the shard's own writes takes the members their replay into the live state
built (``replay_noting`` / ``replay_noted``) instead of building them again: whatever came
between (records of another writer the committed state took, records of ours it never got),
the committed state must be what replaying every record gives."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.group_shard import GroupCoordinatorShard
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.groups.coordinator_state import GroupCoordinatorState
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.runtime.api import replay_all, replay_noted, replay_noting
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberValue,
    TopicPartitions,
    TopicPartitionsWithEpochs,
)
from tests.messages import tid

GROUPS = ("g", "h")
MEMBERS = ("m0", "m1", "m2")
TOPICS = ("a", "b")


def _partitions() -> st.SearchStrategy[list[TopicPartitionsWithEpochs]]:
    one = st.builds(
        lambda topic, partitions, epoch, with_epochs: TopicPartitionsWithEpochs(
            tid(topic), sorted(partitions), [epoch] * len(partitions) if with_epochs else []
        ),
        st.sampled_from(TOPICS),
        st.sets(st.integers(0, 3), max_size=3),
        st.integers(1, 4),
        st.booleans(),
    )
    return st.lists(one, max_size=2, unique_by=lambda tp: tp.topic_id)


_metadata = st.builds(
    ConsumerGroupMemberMetadataValue,
    client_id=st.sampled_from(("c", "d")),
    client_host=st.just("/127.0.0.1"),
    rebalance_timeout_ms=st.sampled_from((1000, 2000)),
    instance_id=st.sampled_from((None, "i0", "i1")),
    subscribed_topic_names=st.sampled_from(([], ["a"], ["a", "b"], ["b"])),
    subscribed_topic_regex=st.sampled_from((None, "a.*")),
    server_assignor=st.sampled_from((None, "uniform", "range")),
)
_assignment = st.builds(
    ConsumerGroupCurrentMemberAssignmentValue,
    member_epoch=st.integers(0, 4),
    previous_member_epoch=st.integers(0, 4),
    state=st.sampled_from((0, 1, 2, 5)),
    assigned_partitions=_partitions(),
    partitions_pending_revocation=_partitions(),
)


def _record() -> st.SearchStrategy[CoordinatorRecord]:
    member_key = st.builds(ConsumerGroupMemberKey, st.sampled_from(GROUPS), st.sampled_from(MEMBERS))
    return st.one_of(
        st.builds(
            CoordinatorRecord,
            st.just(RecordType.CONSUMER_GROUP_MEMBER_METADATA),
            member_key,
            st.one_of(st.none(), _metadata),
        ),
        st.builds(
            CoordinatorRecord,
            st.just(RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT),
            member_key,
            st.one_of(st.none(), _assignment),
        ),
        st.builds(
            CoordinatorRecord,
            st.just(RecordType.CONSUMER_GROUP_METADATA),
            st.builds(ConsumerGroupMetadataKey, st.sampled_from(GROUPS)),
            st.one_of(st.none(), st.builds(ConsumerGroupMetadataValue, st.integers(0, 5))),
        ),
        st.builds(
            CoordinatorRecord,
            st.just(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER),
            member_key,
            st.builds(
                ConsumerGroupTargetAssignmentMemberValue,
                st.lists(st.builds(lambda t: TopicPartitions(tid(t), [0, 1]), st.sampled_from(TOPICS)), max_size=1),
            ),
        ),
    )


# ours: written by the shard (replayed into the live state at once, read back later with its
# notes); foreign: another writer's, read back by the committed state only (a zombie's, or a
# fenced owner's before the fence); lost: ours, never read back (an append that failed, a batch
# cut short); read: the reader catches up with everything written so far.
_step: st.SearchStrategy[tuple[str, list[CoordinatorRecord]]] = st.one_of(
    st.tuples(st.sampled_from(("ours", "foreign", "lost")), st.lists(_record(), min_size=1, max_size=4)),
    st.tuples(st.just("read"), st.just([])),
)


def _indexes(group: ConsumerGroup) -> Any:
    """What ``ConsumerGroup.snapshot`` leaves out: the indexes ``put_member`` keeps."""
    return (
        dict(group.static_members),
        dict(group.partition_owner),
        dict(group.topic_name_counts),
        dict(group.regex_counts),
        dict(group.assignor_counts),
        {names: count for names, (_, count) in group._names.items()},
    )


def _same(noted: GroupCoordinatorState, replayed: GroupCoordinatorState) -> bool:
    groups = noted.consumer.groups
    return noted.snapshot() == replayed.snapshot() and all(
        _indexes(groups[g]) == _indexes(replayed.consumer.groups[g]) for g in groups
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(_step, max_size=30))
def test_the_read_back_with_notes_equals_a_full_replay_whatever_came_between(steps: list[Any]) -> None:
    live, noted, replayed = GroupCoordinatorState(), GroupCoordinatorState(), GroupCoordinatorState()
    unread: list[tuple[list[CoordinatorRecord], Any]] = []  # written, in log order, not read back yet
    for kind, records in steps:
        if kind in ("ours", "lost"):
            notes = replay_noting(live, records)
            if kind == "ours":
                unread.append((records, notes))
        elif kind == "foreign":
            unread.append((records, None))
        else:
            for batch, notes in unread:
                replay_noted(noted, batch, notes)
                replay_all(replayed, batch)
            unread.clear()
            assert _same(noted, replayed)
    for batch, notes in unread:
        replay_noted(noted, batch, notes)
        replay_all(replayed, batch)
    assert _same(noted, replayed)
    if all(kind in ("ours", "read") for kind, _ in steps):
        assert _same(noted, live)


def test_a_mass_join_read_back_keeps_the_members_the_live_state_built() -> None:
    """Joins through the real handler: the committed state holds the live state's member
    objects, not copies (it did not build them again), and equals a full replay."""
    image = TopicsImage.of([TopicImage("a", tid("a"), 8)])
    handlers = GroupCoordinatorShard(consumer_config=ConsumerGroupConfig(), metadata=lambda: image)
    context = RequestContext(api_version=1, client_id="c", client_host="/127.0.0.1")
    live, noted, replayed = GroupCoordinatorState(), GroupCoordinatorState(), GroupCoordinatorState()
    for i in range(20):
        join = ConsumerGroupHeartbeatRequest(
            group_id="g",
            member_id=f"m{i:02d}",
            member_epoch=0,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=["a"],
            topic_partitions=[],
        )
        result = handlers.consumer_group_heartbeat(live, join, 1000 + i, context)
        assert result.records
        notes = replay_noting(live, result.records)
        replay_noted(noted, result.records, notes)
        replay_all(replayed, result.records)
    assert _same(noted, replayed) and noted.snapshot() == live.snapshot()
    members, built = noted.consumer.groups["g"].members, live.consumer.groups["g"].members
    assert len(members) == 20 and all(members[m] is built[m] for m in built)
