"""The layer rules of DESIGN.md, checked on the imports themselves (parsed with ``ast``).

* ``groupcoord/coordinator/groups``, ``groupcoord/coordinator/offsets`` and ``groupcoord/coordinator/share`` are pure logic: the
  standard library (plus re2, hashlib, pydantic), ``groupcoord/records``, ``groupcoord/coordinator/errors``,
  ``groupcoord/coordinator/messages`` (the generated message classes), each other and
  ``groupcoord/coordinator/runtime/api`` (the Result values),
  nothing that does I/O: nothing of the gateway, the runtime or the service.
* ``groupcoord/coordinator/messages`` is shared by the gateway and the logic: it imports nothing of either.
* ``groupcoord/coordinator/runtime`` knows nothing of the gateway, the group logic or the service.
* ``groupcoord/coordinator/gateway`` knows nothing of the group logic, the service, the runtime or
  observability: it defines its ports (``GroupApiHandler``, ``GatewayObserver``) and the layers
  above plug into them.
* ``groupcoord/pipeline`` knows nothing of ``groupcoord/cli`` (the command line runs the jobs, not the other way round).
* No circle between the modules of ``groupcoord/coordinator/``: each import goes one way (imports under
  ``TYPE_CHECKING`` count too: they tie the files together just the same).
* ``groupcoord/coordinator/runtime/load.py`` (a shard's load) knows nothing of the shard that starts it, the
  Kafka clients that feed it, or the runtime: the production reader and the simulations run it alike.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE_ALLOWED_THIRD_PARTY = {"re2", "pydantic"}
PURE_ALLOWED_FIRST_PARTY = (
    "groupcoord.records",
    "groupcoord.coordinator.errors",
    "groupcoord.coordinator.messages",
    "groupcoord.coordinator.groups",
    "groupcoord.coordinator.offsets",
    "groupcoord.coordinator.share",
)
PURE_ALLOWED_MODULES = {"groupcoord.coordinator.runtime.api"}


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
            # ``from groupcoord.coordinator.groups import consumer`` imports the sub-module.
            out += [f"{module}.{alias.name}" for alias in node.names] if module else []
            out.append(module)
    return out


def _files(layer: str) -> list[Path]:
    path = ROOT / layer
    return [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))


def _within(module: str, prefixes: tuple[str, ...] | set[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _top(module: str) -> str:
    return module.split(".")[0]


@pytest.mark.parametrize(
    "layer",
    [
        "groupcoord/coordinator/groups",
        "groupcoord/coordinator/offsets",
        "groupcoord/coordinator/share",
        "groupcoord/coordinator/messages",
    ],
)
def test_group_logic_imports_no_io(layer: str) -> None:
    bad = []
    for path in _files(layer):
        for module in _imports(path):
            if _top(module) in sys.stdlib_module_names or _top(module) in PURE_ALLOWED_THIRD_PARTY:
                continue
            if _within(module, PURE_ALLOWED_FIRST_PARTY) or _within(module, PURE_ALLOWED_MODULES):
                continue
            if module == "groupcoord.coordinator" or module.startswith("groupcoord.coordinator.runtime.api"):
                continue
            bad.append(f"{path.relative_to(ROOT)} imports {module}")
    # ``from groupcoord.coordinator.runtime import api`` names the module ``groupcoord.coordinator.runtime`` too.
    bad = [b for b in bad if not b.endswith(" imports groupcoord.coordinator.runtime")]
    assert bad == []


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        (
            "groupcoord/coordinator/runtime",
            (
                "groupcoord.coordinator.gateway",
                "groupcoord.coordinator.groups",
                "groupcoord.coordinator.offsets",
                "groupcoord.coordinator.share",
                "groupcoord.coordinator.service",
            ),
        ),
        (
            "groupcoord/coordinator/gateway",
            (
                "groupcoord.coordinator.groups",
                "groupcoord.coordinator.offsets",
                "groupcoord.coordinator.service",
                "groupcoord.coordinator.runtime",
                "groupcoord.coordinator.observability",
            ),
        ),
        ("groupcoord/pipeline", ("groupcoord.cli",)),
        # The groups' shared floor (context, configs, routing's helpers) is below each protocol.
        (
            "groupcoord/coordinator/groups/context.py",
            ("groupcoord.coordinator.groups.classic", "groupcoord.coordinator.groups.consumer"),
        ),
        (
            "groupcoord/coordinator/groups/config.py",
            ("groupcoord.coordinator.groups.classic", "groupcoord.coordinator.groups.consumer"),
        ),
        (
            "groupcoord/coordinator/runtime/load.py",
            (
                "groupcoord.coordinator.runtime.shard",
                "groupcoord.coordinator.runtime.log",
                "groupcoord.coordinator.runtime.runtime",
                "confluent_kafka",
            ),
        ),
        (
            "groupcoord/coordinator/messages",
            (
                "groupcoord.coordinator.gateway",
                "groupcoord.coordinator.groups",
                "groupcoord.coordinator.offsets",
                "groupcoord.coordinator.service",
                "groupcoord.coordinator.runtime",
                "groupcoord.records",
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
    sample = ROOT / "groupcoord" / "coordinator" / "groups" / "group.py"
    modules = _imports(sample)
    assert "groupcoord.coordinator.errors" in modules and "groupcoord.coordinator.messages.offset_commit" in modules
    gateway = _imports(ROOT / "groupcoord" / "coordinator" / "service" / "service.py")
    assert any(_within(m, ("groupcoord.coordinator.runtime",)) for m in gateway)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph(folder: str) -> dict[str, set[str]]:
    """Each module of ``folder`` -> the modules of ``folder`` it imports (``from p import m``
    names the module ``p.m`` when there is one, else ``p``)."""
    modules = {_module_name(p) for p in _files(folder)}
    graph: dict[str, set[str]] = {}
    for path in _files(folder):
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join([*base, node.module] if node.module else base) if node.level else node.module or ""
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    targets |= {sub} if sub in modules else ({module} if module in modules else set())
        graph[name] = targets - {name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_circle_between_modules() -> None:
    assert _circles(_module_graph("groupcoord/coordinator")) == []


def test_the_circle_check_sees_a_circle() -> None:
    """The graph must hold real edges and the search must find a circle, or the rule above would
    pass vacuously."""
    graph = _module_graph("groupcoord/coordinator")
    assert "groupcoord.coordinator.gateway.connection" in graph["groupcoord.coordinator.gateway.server"]
    assert "groupcoord.coordinator.groups.consumer.group" in graph["groupcoord.coordinator.groups.consumer.state"]
    # The circle the gateway had: the connection imported the server that creates it.
    tied = {**graph, "groupcoord.coordinator.gateway.connection": {"groupcoord.coordinator.gateway.server"}}
    assert _circles(tied) == [["groupcoord.coordinator.gateway.connection", "groupcoord.coordinator.gateway.server"]]
