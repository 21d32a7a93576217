"""Regex subscriptions resolve only to topics the requesting principal may DESCRIBE (KIP-848).

The service hands the logic a predicate in the request context; the logic stays pure. As in
Kafka (refreshRegularExpressions runs with the triggering request's context), a resolution is
the group's and carries the rights of the member whose heartbeat made it.
"""

from __future__ import annotations

from collections.abc import Callable

from coordinator.errors import ErrorCode
from coordinator.groups.config import ConsumerGroupConfig
from coordinator.groups.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    RequestContext,
    consumer_group_heartbeat,
)
from coordinator.groups.consumer.regex import resolve_regex
from coordinator.groups.context import GroupContext
from tests.groups.harness import GROUP, Coordinator, image, topic

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
    request = ConsumerGroupHeartbeatRequest(
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
    return result.response


def test_resolve_regex_keeps_only_describable_topics() -> None:
    assert resolve_regex(".*", TOPICS) == {"orders-eu", "orders-us", "payments"}
    assert resolve_regex(".*", TOPICS, orders_only) == {"orders-eu", "orders-us"}
    assert resolve_regex("pay.*", TOPICS, orders_only) == frozenset()
    assert resolve_regex(".*", TOPICS, lambda name: True) == {"orders-eu", "orders-us", "payments"}


def test_a_member_is_assigned_only_what_it_may_describe() -> None:
    c = Coordinator(TOPICS)
    r = beat(c, "A", 0, orders_only, ".*")
    assert r.error_code == ErrorCode.NONE
    assert c.group().regexes[".*"].topics == {"orders-eu", "orders-us"}
    assert c.target("A") == {"id-orders-eu": [0, 1], "id-orders-us": [0]}
    # The recorded resolution is what a restarted coordinator replays.
    assert c.replayed() == c.state.snapshot()


def test_without_an_authorizer_every_topic_matches() -> None:
    c = Coordinator(TOPICS)
    beat(c, "A", 0, None, ".*")
    assert c.group().regexes[".*"].topics == {"orders-eu", "orders-us", "payments"}
    assert c.target("A") == {"id-orders-eu": [0, 1], "id-orders-us": [0], "id-payments": [0, 1, 2]}


def test_the_resolution_is_the_groups_and_carries_the_rights_of_who_triggered_it() -> None:
    c = Coordinator(TOPICS, ConsumerGroupConfig(assignment_interval_ms=0, regex_refresh_interval_ms=10_000))
    beat(c, "A", 0, orders_only, ".*")
    # B joins with the same regex while A's resolution is fresh: B shares it, whatever B's rights.
    beat(c, "B", 0, None, ".*")
    assert c.group().regexes[".*"].topics == {"orders-eu", "orders-us"}
    # Once the refresh interval has passed, the next heartbeat re-resolves with its sender's
    # rights: B's (all topics) ...
    c.now += 11_000
    r = beat(c, "B", c.group().members["B"].member_epoch, None)
    assert r.error_code == ErrorCode.NONE
    assert c.group().regexes[".*"].topics == {"orders-eu", "orders-us", "payments"}
    # ... and a later refresh triggered by A narrows it again.
    c.now += 11_000
    epoch = c.group().group_epoch
    beat(c, "A", c.group().members["A"].member_epoch, orders_only)
    assert c.group().regexes[".*"].topics == {"orders-eu", "orders-us"}
    assert c.group().group_epoch == epoch + 1
    assert c.replayed() == c.state.snapshot()
