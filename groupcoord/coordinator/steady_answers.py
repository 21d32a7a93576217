"""A steady heartbeat's answer, given again to the same request without running its handlers.

A member of a stable KIP-848 group sends the same ConsumerGroupHeartbeat every few seconds, and
the answer is the same each time: nothing is written, only the member's session timer moves.
Going through the handler chain and the group logic for it was most of the Python a steady
heartbeat cost in ``serve`` (issue #26 item 2). So when the innermost handler (``Shard.write_now``)
answers a request at once and the group logic says the same request would get the same answer
later as long as nothing changes (``Result.again``), it *offers* a ``SteadyAnswer``: how to tell
whether the answer still stands, and what a repeat must still do (move the session timer, count
the shard's metrics). Each layer the answer passes on its way out adds its own part (``vouch``):
a check the layer makes on every request (the ACL, the handover) and what it does for every
request (the metrics). The connection takes the answer (``take``) with the bytes it wrote, and
answers an identical frame on the same connection from it while every check holds
(``ClientConnection._answer_at_once``); when one fails, the request goes through the chain as
any other.

All of it runs synchronously on one thread (``answer_now`` never awaits), so the offer in
progress is a per-thread slot, not an argument threaded through every layer. A layer whose
``answer_now`` does work of its own per request must ``vouch`` for it, or ``refuse`` the offer:
a repeat does only what was vouched for.

Every connection of a steady member keeps its answer, so what a layer adds is kept thousands of
times over: a check that is the same for every connection is one object made once (a bound
method kept by the layer), not a closure per answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

Check = Callable[[], bool]
Renewal = Callable[[], object]


class SteadyAnswer:
    """The answer ``response`` may be given again while every check holds; each repeat runs the
    renewals (in the order added: the innermost layer's first)."""

    __slots__ = ("response", "_checks", "_renewals")

    def __init__(self, response: object, check: Check, renew: Renewal) -> None:
        self.response = response
        self._checks: tuple[Check, ...] = (check,)
        self._renewals: tuple[Renewal, ...] = (renew,)

    def add(self, check: Check | None, renew: Renewal | None) -> None:
        if check is not None:
            self._checks += (check,)
        if renew is not None:
            self._renewals += (renew,)

    def again(self) -> bool:
        """If every check holds: run the renewals and say True (answer as before); else False
        and nothing was done."""
        for check in self._checks:
            if not check():
                return False
        for renew in self._renewals:
            renew()
        return True


class _Offer(threading.local):
    answer: SteadyAnswer | None = None


_offer = _Offer()


def offer(response: object, check: Check, renew: Renewal) -> None:
    """The innermost handler answered ``response`` at once and it may stand for a repeat."""
    _offer.answer = SteadyAnswer(response, check, renew)


def vouch(response: object, check: Check | None = None, renew: Renewal | None = None) -> None:
    """A layer passes ``response`` on: its check and its renewal join the offer, if ``response``
    is the one offered. An answer of the layer's own (not the one offered) withdraws the offer."""
    answer = _offer.answer
    if answer is None:
        return
    if answer.response is not response:
        _offer.answer = None
        return
    answer.add(check, renew)


def refuse() -> None:
    """Whatever was offered may not be given again (a layer that cannot vouch for its part)."""
    _offer.answer = None


def take(response: object) -> SteadyAnswer | None:
    """The offer for ``response`` (the answer the caller is writing), if there is one; the slot
    is left empty either way."""
    answer, _offer.answer = _offer.answer, None
    return answer if answer is not None and answer.response is response else None
