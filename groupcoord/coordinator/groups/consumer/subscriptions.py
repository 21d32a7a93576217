"""What a set of members subscribes to, once regexes are resolved: names, topic ids, metadata hash."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from functools import partial
from itertools import filterfalse, repeat
from operator import attrgetter, is_

from groupcoord.coordinator.groups.consumer.group import ResolvedRegularExpression, topic_ids_for
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.groups.topics import TopicsImage

_NAMES = attrgetter("subscribed_topic_names")
_REGEX = attrgetter("subscribed_topic_regex")
_ASSIGNOR = attrgetter("server_assignor")


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


def member_topic_id_sets(
    members: Mapping[str, ConsumerGroupMember], regexes: Mapping[str, ResolvedRegularExpression], image: TopicsImage
) -> dict[str, frozenset[str]]:
    """``member_topic_ids`` of every member, computed once per distinct subscription object, and
    equal results shared as one object. Members of a group share their name tuple when equal
    (ConsumerGroup.put_member), so a 5,000-member group subscribed to 1,000 topics resolves 1,000
    names once instead of 5 million times, and the assignor tells the subscriptions equal by
    identity."""
    values = members.values()
    if values and not any(map(_REGEX, values)):
        # By name only, in C-level passes over the members: resolve the first member's tuple and
        # each tuple object that is not that one (a newcomer's, other subscriptions) once.
        tuples = list(map(_NAMES, values))
        first = tuples[0]
        others = {id(n): n for n in filterfalse(partial(is_, first), tuples)}
        ids = image.topic_ids_of(first)
        by_object = {oid: image.topic_ids_of(n) for oid, n in others.items()}
        if all(map(is_, by_object.values(), repeat(ids))):
            return dict.fromkeys(members, ids)
        by_object[id(first)] = ids
        return dict(zip(members, map(by_object.__getitem__, map(id, tuples)), strict=True))
    out: dict[str, frozenset[str]] = {}
    cache: dict[tuple[int, str | None], frozenset[str]] = {}
    canonical: dict[frozenset[str], frozenset[str]] = {}
    for mid, m in members.items():
        key = (id(m.subscribed_topic_names), m.subscribed_topic_regex)
        known = cache.get(key)
        if known is None:
            ids = member_topic_ids(m, regexes, image)
            known = cache[key] = canonical.setdefault(ids, ids)
        out[mid] = known
    return out


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
    # Counter counts in C: this runs over every member of the group on every assignment.
    counts: Counter[str | None] = Counter(map(_ASSIGNOR, members))
    counts.pop(None, None)
    return {name: n for name, n in counts.items() if name is not None}
