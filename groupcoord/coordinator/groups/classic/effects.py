"""Effects: what one handler invocation produces besides its own response (records, timer
operations, answers to parked requests), gathered as the protocol code runs."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from groupcoord.coordinator.groups.classic.group import ClassicGroup
from groupcoord.coordinator.groups.classic.timers import TimerAction, TimerBook
from groupcoord.coordinator.runtime.api import Park, Result, TimerOp
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import GroupMetadataKey, GroupMetadataValue

T = TypeVar("T")


@dataclass(slots=True)
class Effects:
    timer_book: TimerBook
    records: list[CoordinatorRecord] = field(default_factory=list)
    timers: list[TimerOp] = field(default_factory=list)
    completions: list[tuple[Hashable, Any]] = field(default_factory=list)

    def schedule(self, key: str, deadline_ms: int, action: TimerAction) -> None:
        self.timers.append(self.timer_book.schedule(key, deadline_ms, action))

    def cancel(self, key: str) -> None:
        self.timers.append(self.timer_book.cancel(key))

    def complete(self, token: Hashable, response: Any) -> None:
        self.completions.append((token, response))

    def write_group_metadata(self, group: ClassicGroup, value: GroupMetadataValue | None = None) -> None:
        """Persist the group (its current view unless ``value`` is given)."""
        value = group.to_record_value() if value is None else value
        group.unreplayed_writes.append(value)
        self.records.append(CoordinatorRecord(RecordType.GROUP_METADATA, GroupMetadataKey(group.group_id), value))

    def result(self, response: T | Park, token: Hashable | None = None) -> Result[T]:
        """Build the Result; a parked request answered within this same call is answered directly."""
        completions = self.completions
        if isinstance(response, Park) and token is not None:
            own = [r for t, r in completions if t == token]
            if own:
                response = own[-1]
                completions = [(t, r) for t, r in completions if t != token]
        return Result(response, self.records, self.timers, completions)
