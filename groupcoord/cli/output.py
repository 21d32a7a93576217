"""How every command prints its result: ``--format text|wide|json|yaml`` (as rpk has; ``--json`` is
the same as ``--format json``).

- ``text``: on a terminal a table; anywhere else (a pipe, a file) plain whitespace-aligned columns
  under an upper-case header line, no box characters, one line per row, so ``awk``, ``cut`` and
  ``column`` read it as they read ``kafka-consumer-groups.sh``. An absent value is ``-``.
- ``wide``: the same, with every column a command has (e.g. each member's assignment), never cut.
- ``json`` / ``yaml``: one object, the same shape for every command::

      {"items": [{...}, ...], "errors": [{"group": "g", "error": "the group does not exist"}], ...}

  ``items`` holds the rows (keys in snake_case: ``current_offset``, ``num_members``; an absent
  value is null), ``errors`` what could not be done (each with the object it is about and
  ``error``), and a few command-specific fields beside them (``executed``, ``verified``,
  ``to_datetime``, ``skipped_groups``).

Errors also go to stderr as ``error: ...`` lines, in every format; when nothing but errors came
back, no (empty) table is printed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

# Far wider than any table: rich then renders each table at its natural width, never wrapped.
_PIPE_WIDTH = 100_000
out = Console(width=None if sys.stdout.isatty() else _PIPE_WIDTH, soft_wrap=not sys.stdout.isatty())


class Format(StrEnum):
    text = "text"
    wide = "wide"
    json = "json"
    yaml = "yaml"


FormatOption = Annotated[
    Format | None,
    typer.Option(
        "--format",
        case_sensitive=False,
        help="text (a table on a terminal, plain columns otherwise), wide (every column), json or yaml.",
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="The same as --format json.")]


def key(column: str) -> str:
    """A column name as a JSON/YAML key: ``current-offset`` -> ``current_offset``, ``#members`` -> ``num_members``."""
    return column.replace("#", "num_").replace("-", "_")


def cell(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # as Kafka's tools print booleans, not Python's False
    return "-" if value is None else " ".join(str(value).split()) or "-"


def plain(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> str:
    """Whitespace-aligned columns: an upper-case header, then one line per row (no trailing spaces)."""
    lines = [[c.upper() for c in columns]] + [[cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in lines)


def table(title: str | None, columns: Sequence[str], rows: Sequence[dict[str, Any]], wide: bool = False) -> Table:
    t = Table(title=title, title_justify="left")
    for column in columns:
        t.add_column(column.upper(), overflow="fold", no_wrap=wide or not sys.stdout.isatty())
    for row in rows:
        t.add_row(*(cell(row.get(c)) for c in columns))
    return t


def structured(fmt: Format, document: dict[str, Any]) -> str:
    if fmt is Format.yaml:
        import yaml

        return str(yaml.safe_dump(document, sort_keys=False, allow_unicode=True, default_flow_style=False)).rstrip()
    return json.dumps(document, indent=2, default=str, ensure_ascii=False)


def _plain_value(value: Any) -> Any:
    # YAML and JSON alike: only plain types (datetimes and the like become their text).
    if isinstance(value, dict):
        return {str(k): _plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_value(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def print_document(
    rows: Sequence[dict[str, Any]], errors: Sequence[dict[str, Any]] = (), fmt: Format = Format.json, **fields: Any
) -> None:
    """The JSON (or YAML) shape of every command for rows whose keys are already final."""
    document = {"items": list(rows), "errors": list(errors), **{key(k): v for k, v in fields.items()}}
    print(structured(fmt, _plain_value(document)), flush=True)


@dataclass(frozen=True)
class Output:
    format: Format

    @classmethod
    def of(cls, fmt: Format | None, as_json: bool) -> Output:
        if as_json and fmt not in (None, Format.json):
            raise typer.BadParameter(f"--json and --format {fmt.value if fmt else ''} disagree", param_hint="--format")
        return cls(Format.json if as_json else fmt or Format.text)

    @property
    def is_structured(self) -> bool:
        return self.format in (Format.json, Format.yaml)

    @property
    def wide(self) -> bool:
        return self.format is Format.wide

    def result(
        self,
        columns: Sequence[str],
        rows: Sequence[dict[str, Any]],
        *,
        errors: Sequence[dict[str, Any]] = (),
        title: str | None = None,
        wide_columns: Sequence[str] = (),
        **fields: Any,
    ) -> None:
        """Print ``rows`` (and, structured, ``errors`` and ``fields``) in the chosen format."""
        every = [*columns, *wide_columns]
        if self.is_structured:
            items = [{key(c): row.get(c) for c in every if c in row} for row in rows]
            print_document(items, errors, self.format, **fields)
            return
        if errors and not rows:
            return  # the error lines say it all: no empty table
        shown = every if self.wide else list(columns)
        if sys.stdout.isatty():
            out.print(table(title, shown, rows, wide=self.wide))
        else:
            print(plain(shown, rows))

    def note(self, text: str) -> None:
        """A sentence after the result (``dry run: ...``), for people: left out of JSON and YAML."""
        if not self.is_structured:
            note(text)


def note(text: str) -> None:
    """A sentence for a person: on stdout at a terminal; on stderr otherwise, so that what a script
    reads from stdout is the result alone."""
    if sys.stdout.isatty():
        out.print(text, highlight=False, markup=False)
    else:
        print(text, file=sys.stderr, flush=True)
