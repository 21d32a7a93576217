"""Regular-expression subscriptions (KIP-848): RE2 syntax, full-name match, resolved by the coordinator."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import re2

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.groups.topics import TopicsImage

_OPTIONS = re2.Options()
# Invalid patterns are a client error answered with INVALID_REGULAR_EXPRESSION, not a server log line.
_OPTIONS.log_errors = False


class _Compiled:
    """Compiled patterns, the least recently used dropped first, bounded by their number and by
    their patterns' total length: a compiled RE2 program grows with its pattern (a 32 KB pattern
    ~1.3 MB, measured), so 4,096 of the longest a client may send would hold gigabytes, where a
    count alone bounds ordinary patterns well. A pattern RE2 refuses is not kept (it raises)."""

    def __init__(self, entries: int, chars: int) -> None:
        self.entries, self.chars = entries, chars
        self._kept: OrderedDict[str, Any] = OrderedDict()
        self._chars = 0

    def __call__(self, regex: str) -> Any:
        kept = self._kept
        compiled = kept.get(regex)
        if compiled is not None:
            kept.move_to_end(regex)
            return compiled
        compiled = re2.compile(regex, _OPTIONS)
        kept[regex] = compiled
        self._chars += len(regex)
        while len(kept) > 1 and (len(kept) > self.entries or self._chars > self.chars):
            dropped, _ = kept.popitem(last=False)
            self._chars -= len(dropped)
        return compiled


_compile = _Compiled(entries=4096, chars=1 << 20)


# The error message names the regex, but only its start: a client's (up to 32 KB) pattern is not
# echoed back whole, nor is RE2's own message, which quotes the pattern too.
_SHOWN_CHARS = 100


def _reason(exc: Exception) -> str:
    # google-re2 raises its error with RE2's message as bytes: str() of it is a bytes repr (b'...').
    arg = exc.args[0] if exc.args else exc
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


def throw_if_regex_invalid(regex: str) -> None:
    try:
        _compile(regex)
    except re2.error as exc:
        shown = regex if len(regex) <= _SHOWN_CHARS else f"{regex[:_SHOWN_CHARS]}... ({len(regex)} chars)"
        reason = _reason(exc)
        if len(reason) > _SHOWN_CHARS:
            reason = f"{reason[:_SHOWN_CHARS]}..."
        raise GroupError(
            ErrorCode.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex {shown!r} is not a valid RE2 regex: {reason}"
        ) from None


# Kafka's internal topics (Topic.isInternal): a regex subscription never matches them. The
# coordinator's own topics are not in the metadata image at all (see MetadataCache's hidden topics).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def resolve_regex(regex: str, image: TopicsImage, may_describe: Callable[[str], bool] | None = None) -> frozenset[str]:
    """Topic names of ``image`` the whole of which ``regex`` matches (Kafka uses ``matches()``),
    internal topics excepted, and of those only the ones ``may_describe`` allows (Kafka's
    filterTopicDescribeAuthorizedTopics; None: no authorizer)."""
    pattern = _compile(regex)
    return frozenset(
        name
        for name in image.topics
        if name not in INTERNAL_TOPICS
        and pattern.fullmatch(name) is not None
        and (may_describe is None or may_describe(name))
    )
