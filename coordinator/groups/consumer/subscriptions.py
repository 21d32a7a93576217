"""What a set of members subscribes to, once regexes are resolved: names, topic ids, metadata hash."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from coordinator.groups.consumer.group import ResolvedRegularExpression, topic_ids_for
from coordinator.groups.consumer.member import ConsumerGroupMember
from coordinator.groups.topics import TopicsImage


def member_topic_names(m: ConsumerGroupMember, regexes: Mapping[str, ResolvedRegularExpression]) -> frozenset[str]:
    names = frozenset(m.subscribed_topic_names)
    if m.subscribed_topic_regex is not None:
        resolved = regexes.get(m.subscribed_topic_regex)
        # An unresolved regex matches nothing yet, to be conservative (as Kafka does).
        if resolved is not None:
            names = names | resolved.topics
    return names


def member_topic_ids(
    m: ConsumerGroupMember, regexes: Mapping[str, ResolvedRegularExpression], image: TopicsImage
) -> frozenset[str]:
    return topic_ids_for(member_topic_names(m, regexes), image)


def group_topic_names(
    members: Iterable[ConsumerGroupMember], regexes: Mapping[str, ResolvedRegularExpression]
) -> frozenset[str]:
    names: set[str] = set()
    used: set[str] = set()
    for m in members:
        names.update(m.subscribed_topic_names)
        if m.subscribed_topic_regex is not None:
            used.add(m.subscribed_topic_regex)
    for r in used:
        resolved = regexes.get(r)
        if resolved is not None:
            names |= resolved.topics
    return frozenset(names)


def subscribed_names_of(
    name_counts: Mapping[str, int], regex_counts: Mapping[str, int], regexes: Mapping[str, ResolvedRegularExpression]
) -> frozenset[str]:
    """``group_topic_names`` of the members whose subscriptions these counts count."""
    names = set(name_counts)
    for r in regex_counts:
        resolved = regexes.get(r)
        if resolved is not None:
            names |= resolved.topics
    return frozenset(names)


def regexes_in_use(members: Iterable[ConsumerGroupMember]) -> set[str]:
    return {m.subscribed_topic_regex for m in members if m.subscribed_topic_regex is not None}


def assignor_preferences(members: Iterable[ConsumerGroupMember]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in members:
        if m.server_assignor is not None:
            counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
    return counts
