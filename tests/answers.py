"""The immediate answer of a handler: a ``Result.response`` is ``T | Park``, and a test of a request
that is never parked reads it through ``answered`` so that a parked request fails there, by name."""

from __future__ import annotations

from typing import TypeVar

from groupcoord.coordinator.runtime.api import Park

T = TypeVar("T")


def answered(response: T | Park) -> T:
    assert not isinstance(response, Park), f"the request was parked, not answered: {response!r}"
    return response
