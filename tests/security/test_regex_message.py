"""An invalid regex subscription is refused without echoing the client's whole pattern back."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.groups.consumer.regex import throw_if_regex_invalid


def test_an_invalid_huge_regex_is_not_echoed_back_whole() -> None:
    huge = "(" + "a" * 30_000  # unbalanced, so invalid; far longer than an error message should be
    with pytest.raises(GroupError) as raised:
        throw_if_regex_invalid(huge)
    assert raised.value.error is ErrorCode.INVALID_REGULAR_EXPRESSION
    message = raised.value.message or ""
    assert len(message) < 400 and "30001 chars" in message and message.count("a") < 200


def test_a_short_invalid_regex_is_named_whole() -> None:
    with pytest.raises(GroupError) as raised:
        throw_if_regex_invalid("(orders")
    assert "'(orders'" in (raised.value.message or "")


def test_the_reason_is_text_not_a_bytes_repr() -> None:
    with pytest.raises(GroupError) as raised:
        throw_if_regex_invalid("(abc")
    message = raised.value.message or ""
    assert raised.value.error is ErrorCode.INVALID_REGULAR_EXPRESSION
    assert "b'" not in message and 'b"' not in message
    assert message == "SubscribedTopicRegex '(abc' is not a valid RE2 regex: missing ): (abc"
