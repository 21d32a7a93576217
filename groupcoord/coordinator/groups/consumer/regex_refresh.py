"""When a group's subscription regexes are resolved, and what a resolution writes (Kafka's
``maybeUpdateRegularExpressions`` and ``handleRegularExpressionsResult``).

Kafka resolves regexes off the heartbeat: a heartbeat that finds a resolution due schedules one
on the coordinator's background pool and answers with the resolutions the group already has (a
new regex matches nothing yet), and the result comes back as a write of its own, which bumps the
group epoch when it changes what the group subscribes to; the next heartbeat then computes the
target. Here the heartbeat arms a timer due at once (``RegexResolutionDue``), which the runtime
fires as an event of its own after the heartbeat's records; the resolution is made there, against
the metadata image of that moment. So the member that brings a new regex first gets its topics
by name only, and the regex's topics one heartbeat later, as with Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import log_records
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup, ResolvedRegularExpression
from groupcoord.coordinator.groups.consumer.regex import resolve_regex
from groupcoord.coordinator.groups.consumer.subscriptions import group_topic_names
from groupcoord.coordinator.groups.consumer.timers import RegexResolutionDue, schedule_regex_resolution
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.runtime.api import ScheduleTimer
from groupcoord.records import CoordinatorRecord

# Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: a group's regexes are not resolved again within
# this time of their last resolution, whatever asks for it.
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000


def resolution_due(
    resolved: Mapping[str, ResolvedRegularExpression],
    in_use: Collection[str],
    image_version: int,
    now_ms: int,
    config: ConsumerGroupConfig,
) -> bool:
    """Whether a heartbeat should ask for the group's regexes to be resolved: some are in use,
    the last resolution is over 10 s old, and a regex is unresolved, the metadata image changed
    since, or the refresh interval passed. (The last resolution is the newest of the group's
    resolutions; a group left without any has none, and a new regex is resolved at once.)"""
    if not in_use:
        return False
    current = [resolved[r] for r in in_use if r in resolved]
    if not current:
        return True
    last_refresh = max(r.timestamp for r in current)
    if now_ms <= last_refresh + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
        return False
    if len(current) != len(in_use):
        return True
    return min(r.version for r in current) < image_version or now_ms - last_refresh >= config.regex_refresh_interval_ms


def maybe_schedule_resolution(
    group: ConsumerGroup,
    resolved: Mapping[str, ResolvedRegularExpression],
    in_use: Collection[str],
    image_version: int,
    now_ms: int,
    config: ConsumerGroupConfig,
    may_describe_topic: Callable[[str], bool] | None,
) -> list[ScheduleTimer]:
    if not resolution_due(resolved, in_use, image_version, now_ms, config):
        return []
    # Made with the rights of the member whose heartbeat asked, as Kafka resolves with that
    # request's context: only topics that principal may DESCRIBE.
    return [schedule_regex_resolution(group.group_id, now_ms, may_describe_topic)]


def resolution_records(
    group: ConsumerGroup, event: RegexResolutionDue, image: TopicsImage, now_ms: int
) -> list[CoordinatorRecord]:
    """Resolve every regex the group's members use against ``image``: one record per regex (its
    topics, the image version, the time), and a group epoch bump when a regex's topics changed
    or what the group subscribes to hashes differently. Regexes nobody uses any more are skipped
    (the heartbeat that dropped the last user wrote their tombstone)."""
    gid = group.group_id
    records: list[CoordinatorRecord] = []
    resolved = dict(group.regexes)
    bump = False
    for regex in sorted(group.regex_counts):
        topics = resolve_regex(regex, image, event.may_describe_topic)
        old = group.regexes.get(regex)
        bump |= (old.topics if old is not None else frozenset()) != topics
        resolved[regex] = ResolvedRegularExpression(topics, image.version, now_ms)
        records.append(log_records.regex_record(gid, regex, topics, image.version, now_ms))
    if not records:
        return []
    metadata_hash = image.metadata_hash(group_topic_names(group.members.values(), resolved))
    if bump or metadata_hash != group.metadata_hash:
        records.append(log_records.group_epoch_record(gid, group.group_epoch + 1, metadata_hash))
    return records
