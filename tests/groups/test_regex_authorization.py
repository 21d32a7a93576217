"""Regex subscriptions resolve only to topics the requesting principal may DESCRIBE (KIP-848).

The service hands the logic a predicate in the request context; the logic stays pure. As in
Kafka (refreshRegularExpressions runs with the triggering request's context), a resolution is
the group's and carries the rights of the member whose heartbeat made it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import consumer_group_heartbeat
from groupcoord.coordinator.groups.consumer.regex import resolve_regex
from groupcoord.coordinator.groups.context import GroupContext, RequestContext
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from tests.answers import answered
from tests.groups.harness import GROUP, Coordinator, image, topic
from tests.messages import cg_request, join_protocol, join_request, tid

TOPICS = image(topic("orders-eu", 2), topic("orders-us", 1), topic("payments", 3), topic("__consumer_offsets", 1))


def orders_only(name: str) -> bool:
    return name.startswith("orders-")


def beat(
    c: Coordinator,
    member: str,
    epoch: int,
    may_describe: Callable[[str], bool] | None,
    regex: str | None = None,
) -> ConsumerGroupHeartbeatResponse:
    request = cg_request(
        GROUP,
        member,
        epoch,
        rebalance_timeout_ms=30000 if epoch == 0 else -1,
        subscribed_topic_regex=regex,
        topic_partitions=[] if epoch == 0 else None,
    )
    ctx = GroupContext(
        c.now, c.metadata, c.config, request=RequestContext(1, "client", "/127.0.0.1", b"", may_describe)
    )
    result = consumer_group_heartbeat(c.state, request, ctx)
    c.apply(result)
    return answered(result.response)


def test_resolve_regex_keeps_only_describable_topics() -> None:
    assert resolve_regex(".*", TOPICS) == {"orders-eu", "orders-us", "payments"}
    assert resolve_regex(".*", TOPICS, orders_only) == {"orders-eu", "orders-us"}
    assert resolve_regex("pay.*", TOPICS, orders_only) == frozenset()
    assert resolve_regex(".*", TOPICS, lambda name: True) == {"orders-eu", "orders-us", "payments"}


def test_a_member_is_assigned_only_what_it_may_describe() -> None:
    c = Coordinator(TOPICS)
    r = beat(c, "A", 0, orders_only, ".*")
    assert r.error_code == ErrorCode.NONE
    c.resolve_regexes()  # with the rights of A's heartbeat, which asked for it
    beat(c, "A", r.member_epoch, orders_only)
    assert c.group().regexes[".*"].topics == {"orders-eu", "orders-us"}
    assert c.target("A") == {tid("orders-eu"): [0, 1], tid("orders-us"): [0]}
    # The recorded resolution is what a restarted coordinator replays.
    assert c.replayed() == c.state.snapshot()


def test_without_an_authorizer_every_topic_matches() -> None:
    c = Coordinator(TOPICS)
    r = beat(c, "A", 0, None, ".*")
    c.resolve_regexes()
    beat(c, "A", r.member_epoch, None)
    assert c.group().regexes[".*"].topics == {"orders-eu", "orders-us", "payments"}
    assert c.target("A") == {tid("orders-eu"): [0, 1], tid("orders-us"): [0], tid("payments"): [0, 1, 2]}


def test_the_resolution_is_the_groups_and_carries_the_rights_of_who_triggered_it() -> None:
    c = Coordinator(TOPICS, ConsumerGroupConfig(assignment_interval_ms=0, regex_refresh_interval_ms=10_000))
    beat(c, "A", 0, orders_only, ".*")
    c.resolve_regexes()
    # B joins with the same regex while A's resolution is fresh: B shares it, whatever B's rights.
    beat(c, "B", 0, None, ".*")
    c.resolve_regexes()
    assert c.group().regexes[".*"].topics == {"orders-eu", "orders-us"}
    # Once the refresh interval has passed, the next heartbeat asks for a resolution with its
    # sender's rights: B's (all topics) ...
    c.now += 11_000
    r = beat(c, "B", c.group().members["B"].member_epoch, None)
    assert r.error_code == ErrorCode.NONE
    c.resolve_regexes()
    assert c.group().regexes[".*"].topics == {"orders-eu", "orders-us", "payments"}
    # ... and a later refresh asked for by A narrows it again.
    c.now += 11_000
    epoch = c.group().group_epoch
    beat(c, "A", c.group().members["A"].member_epoch, orders_only)
    c.resolve_regexes()
    assert c.group().regexes[".*"].topics == {"orders-eu", "orders-us"}
    assert c.group().group_epoch == epoch + 1
    assert c.replayed() == c.state.snapshot()


def test_a_classic_member_joining_resolves_the_groups_regexes_with_its_own_rights() -> None:
    """A classic JoinGroup into a consumer group carries its sender's rights to the resolution
    it triggers (Kafka's classicGroupJoinToConsumerGroup refreshes regexes with its context)."""
    from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
    from groupcoord.coordinator.messages.join_group import JoinGroupResponse
    from tests.groups_migration.harness import FOO, FOO_ID, Shard, subscription

    shard = Shard(metadata=TopicsImage.of([TopicImage(FOO, FOO_ID, 2), TopicImage("secret", tid("secret"), 1)], 1))
    shard.cg_heartbeat(
        cg_request(GROUP, "A", 0, rebalance_timeout_ms=30_000, subscribed_topic_regex=".*", topic_partitions=[])
    )
    shard.fire("consumer-regex")
    group = shard.state.consumer.group(GROUP)
    assert group is not None and group.regexes[".*"].topics == {FOO, "secret"}
    shard.now += shard.handlers.consumer_config.regex_refresh_interval_ms + 1
    request = join_request(
        GROUP,
        10_000,
        member_id="",
        protocol_type="consumer",
        protocols=(join_protocol("range", subscription()),),
        rebalance_timeout_ms=20_000,
    )
    context = RequestContext(
        api_version=9, client_id="classic", client_host="/10.0.0.1", may_describe_topic=lambda name: name == FOO
    )
    answer = shard.apply(shard.handlers.join_group(shard.state, request, "join", shard.now, context), "join")
    # v9: the first join only hands out a member id; the second is the member update.
    assert isinstance(answer, JoinGroupResponse) and answer.member_id
    request = dataclasses.replace(request, member_id=answer.member_id)
    shard.apply(shard.handlers.join_group(shard.state, request, "join2", shard.now, context), "join2")
    shard.fire("consumer-regex")
    group = shard.state.consumer.group(GROUP)
    assert group is not None and group.regexes[".*"].topics == {FOO}
    shard.check_replay()
