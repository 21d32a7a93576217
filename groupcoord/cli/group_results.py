"""What ``groupcoord groups`` and ``groupcoord share-groups`` check and print alike.

The two command sets follow kafka-consumer-groups.sh and kafka-share-groups.sh, which agree on
these: the describe views' options, one ``error:`` line per group that could not be described,
and one result per group asked to be deleted. Kept in one place so the two stay word for word
the same (scripts read both).
"""

from __future__ import annotations

from collections.abc import Mapping

import typer

from groupcoord.cli.common import error_line, usage
from groupcoord.cli.output import Output


def check_describe_options(
    groups: list[str] | None, all_groups: bool, offsets: bool, members: bool, state: bool
) -> None:
    if sum([offsets, members, state]) > 1:
        usage("give at most one of --offsets, --members, --state")
    if bool(groups) == all_groups:
        usage("name one or more groups, or give --all-groups")


def group_errors(failures: Mapping[str, str]) -> list[dict[str, str]]:
    """The ``errors`` of the JSON/YAML result: each group that failed, and why (in words)."""
    return [{"group": g, "error": why} for g, why in failures.items()]


def say_group_failures(failures: Mapping[str, str]) -> None:
    for g, why in failures.items():
        error_line(f"group {g!r}: {why}")


def exit_on_group_failures(failures: Mapping[str, str]) -> None:
    """The failures' error lines, then exit 1 if there were any (after the result was printed)."""
    say_group_failures(failures)
    if failures:
        raise typer.Exit(1)


def print_deletions(o: Output, why_not: Mapping[str, str | None], kind: str) -> None:
    """One result per group asked to be deleted (``why_not``: None for a deleted group, else why
    not, in words; ``kind``: "group" or "share group"); exit 1 if any was not deleted."""
    results = [{"group": g, "deleted": why is None, "error": why} for g, why in why_not.items()]
    errors = [{"group": g, "error": why} for g, why in why_not.items() if why is not None]
    # The results are the command's output, on stdout in every format (a script piping it reads
    # which groups went); the failures are also diagnostics, on stderr.
    o.result(["group", "deleted", "error"], results, errors=errors)
    for e in errors:
        error_line(f"cannot delete {kind} {e['group']!r}: {e['error']}")
    if errors:
        raise typer.Exit(1)
