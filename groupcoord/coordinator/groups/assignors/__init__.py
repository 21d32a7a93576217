"""Server-side partition assignors: ``uniform`` (the default) and ``range`` for consumer groups;
``simple`` (``groupcoord.coordinator.groups.assignors.simple``) for share groups, which is not among the
consumer groups' choices."""

from __future__ import annotations

from groupcoord.coordinator.groups.assignors.range import RangeAssignor
from groupcoord.coordinator.groups.assignors.spec import (
    GroupAssignment,
    GroupSpec,
    MemberSubscriptionSpec,
    PartitionAssignor,
    PartitionAssignorError,
)
from groupcoord.coordinator.groups.assignors.uniform import UniformAssignor

ASSIGNORS: dict[str, PartitionAssignor] = {"uniform": UniformAssignor(), "range": RangeAssignor()}


def assignor(name: str) -> PartitionAssignor:
    try:
        return ASSIGNORS[name]
    except KeyError:
        raise PartitionAssignorError(f"unknown assignor {name!r}") from None


__all__ = [
    "ASSIGNORS",
    "GroupAssignment",
    "GroupSpec",
    "MemberSubscriptionSpec",
    "PartitionAssignor",
    "PartitionAssignorError",
    "RangeAssignor",
    "UniformAssignor",
    "assignor",
]
