"""The generated reference pages: the CLI's help from the typer app, the settings from the model.

Called by the mkdocs hook (docs/hooks.py) at build time, so the pages never drift from the code;
`python docs/gen_reference.py cli|config` prints one of them."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from typing import Any

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

HELP_WIDTH = 100


def _commands(command: Any, ctx: Any) -> list[tuple[Any, Any]]:
    """The command and every subcommand below it, depth first, in the order the app lists them.
    Typed Any: typer builds on click or on its own copy of click, depending on its version."""
    found = [(command, ctx)]
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                found += _commands(sub, sub.context_class(sub, info_name=name, parent=ctx))
    return found


def _plain_help(command: Any, ctx: Any) -> str:
    # click's own formatting (the base Command's, not typer's rich one): plain text at a fixed
    # width, whatever the terminal the build runs on.
    base: Any = next(k for k in type(command).__mro__ if k.__name__ == "Command" and k.__module__.endswith("core"))
    formatter = ctx.make_formatter()
    formatter.width = formatter.max_width = HELP_WIDTH
    base.format_help(command, ctx, formatter)
    return str(formatter.getvalue()).rstrip()


def cli_reference() -> str:
    from groupcoord.cli.main import app

    root = typer.main.get_command(app)
    lines: list[str] = []
    for command, ctx in _commands(root, root.context_class(root, info_name="groupcoord")):
        path = ctx.command_path
        level = "#" * min(2 + path.count(" "), 4)
        lines += [f"{level} `{path}`", "", "```text", _plain_help(command, ctx), "```", ""]
    return "\n".join(lines)


def _field_comments(model: type[BaseModel]) -> dict[str, str]:
    """The `#` comment lines written just above each field in the model's source (a field's
    description when it has no `description=`)."""
    try:
        source_lines, _ = inspect.getsourcelines(model)
    except (OSError, TypeError):
        return {}
    comments: dict[str, str] = {}
    pending: list[str] = []
    tree = ast.parse(textwrap.dedent("".join(source_lines)))
    field_lines = {
        node.lineno: node.target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }
    for number, line in enumerate(source_lines, start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("#").strip())
            continue
        if number in field_lines and pending:
            comments[field_lines[number]] = " ".join(pending)
        pending = []
    return comments


def _default(field: FieldInfo) -> str:
    extra = field.json_schema_extra
    if isinstance(extra, dict) and isinstance(extra.get("reference_default"), str):
        # A default decided at run time (log_format: by whether stderr is a terminal), in words.
        return str(extra["reference_default"])
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
        if isinstance(value, BaseModel):
            return "(see below)"
    else:
        value = field.default
    if value is PydanticUndefined:
        return "required"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"  # as TOML writes them, not Python's True/False
    if value in ({}, []):
        return "empty"
    return f"`{value!r}`" if isinstance(value, str) else f"`{value}`"


def _nested_model(field: FieldInfo) -> type[BaseModel] | None:
    for candidate in (field.annotation, *getattr(field.annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _own_doc(model: type[BaseModel]) -> str:
    # A model's own docstring (never the BaseModel one it would inherit), its first paragraph.
    doc = model.__dict__.get("__doc__") or ""
    return inspect.cleandoc(doc).split("\n\n")[0].replace("\n", " ")


def _table(model: type[BaseModel], prefix: str, env_prefix: str) -> list[str]:
    """One table of the model's settings, then one section per nested model below it."""
    comments = _field_comments(model)
    rows = ["| setting | env | default | description |", "|---|---|---|---|"]
    sections: list[str] = []
    for name, field in model.model_fields.items():
        nested = _nested_model(field)
        key, env = f"{prefix}{name}", f"{env_prefix}{name.upper()}"
        description = field.description or comments.get(name, "")
        if field.alias:
            description = f"Kafka's `{field.alias}`. {description}".strip()
        if nested is None:
            rows.append(f"| `{key}` | `{env}` | {_default(field)} | {_cell(description)} |")
            continue
        about = description or _own_doc(nested)
        rows.append(
            f"| `{key}` | `{env}__...` | {_default(field)} | {_cell(about)} (see [`{key}`](#{key.replace('.', '')})) |"
        )
        sections += ["", f"## `{key}` {{#{key.replace('.', '')}}}", "", _cell(about), ""]
        sections += _table(nested, f"{key}.", f"{env}__")
    return [*rows, *sections]


def config_reference() -> str:
    from groupcoord.coordinator.config import ENV_PREFIX, Settings

    return "\n".join(_table(Settings, "", ENV_PREFIX)) + "\n"


if __name__ == "__main__":
    print({"cli": cli_reference, "config": config_reference}[sys.argv[1]]())
