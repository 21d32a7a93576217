"""The layer rules of DESIGN.md, checked on the imports themselves (parsed with ``ast``).

* ``coordinator/groups`` and ``coordinator/offsets`` are pure logic: the standard library (plus
  re2, hashlib, pydantic), ``records``, ``coordinator/errors``, ``coordinator/messages`` (the
  generated message classes), each other and ``coordinator/runtime/api`` (the Result values),
  nothing that does I/O: nothing of the gateway, the runtime or the service.
* ``coordinator/messages`` is shared by the gateway and the logic: it imports nothing of either.
* ``coordinator/runtime`` knows nothing of the gateway, the group logic or the service.
* ``coordinator/gateway`` knows nothing of the group logic, the service or the runtime.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE_ALLOWED_THIRD_PARTY = {"re2", "pydantic"}
PURE_ALLOWED_FIRST_PARTY = (
    "records",
    "coordinator.errors",
    "coordinator.messages",
    "coordinator.groups",
    "coordinator.offsets",
)
PURE_ALLOWED_MODULES = {"coordinator.runtime.api"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            # ``from coordinator.groups import consumer`` imports the sub-module.
            out += [f"{module}.{alias.name}" for alias in node.names] if module else []
            out.append(module)
    return out


def _files(layer: str) -> list[Path]:
    return sorted((ROOT / layer).rglob("*.py"))


def _within(module: str, prefixes: tuple[str, ...] | set[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _top(module: str) -> str:
    return module.split(".")[0]


@pytest.mark.parametrize("layer", ["coordinator/groups", "coordinator/offsets", "coordinator/messages"])
def test_group_logic_imports_no_io(layer: str) -> None:
    bad = []
    for path in _files(layer):
        for module in _imports(path):
            if _top(module) in sys.stdlib_module_names or _top(module) in PURE_ALLOWED_THIRD_PARTY:
                continue
            if _within(module, PURE_ALLOWED_FIRST_PARTY) or _within(module, PURE_ALLOWED_MODULES):
                continue
            if module == "coordinator" or module.startswith("coordinator.runtime.api"):
                continue
            bad.append(f"{path.relative_to(ROOT)} imports {module}")
    # ``from coordinator.runtime import api`` names the module ``coordinator.runtime`` too.
    bad = [b for b in bad if not b.endswith(" imports coordinator.runtime")]
    assert bad == []


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        (
            "coordinator/runtime",
            ("coordinator.gateway", "coordinator.groups", "coordinator.offsets", "coordinator.service"),
        ),
        (
            "coordinator/gateway",
            ("coordinator.groups", "coordinator.offsets", "coordinator.service", "coordinator.runtime"),
        ),
        (
            "coordinator/messages",
            (
                "coordinator.gateway",
                "coordinator.groups",
                "coordinator.offsets",
                "coordinator.service",
                "coordinator.runtime",
                "records",
            ),
        ),
    ],
)
def test_lower_layers_import_nothing_above_them(layer: str, forbidden: tuple[str, ...]) -> None:
    bad = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in _files(layer)
        for module in _imports(path)
        if _within(module, forbidden)
    ]
    assert bad == []


def test_the_layer_check_sees_a_forbidden_import() -> None:
    """The parser must see both import forms, or the rules above would pass vacuously."""
    sample = ROOT / "coordinator" / "groups" / "group.py"
    modules = _imports(sample)
    assert "coordinator.errors" in modules and "coordinator.messages.offset_commit" in modules
    gateway = _imports(ROOT / "coordinator" / "service" / "service.py")
    assert any(_within(m, ("coordinator.runtime",)) for m in gateway)
