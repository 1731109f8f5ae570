"""The layers of xdsl_ane depend one way: leaf modules (errors, outputs,
locations, diagnostics, progress) ← the target's facts (`ane`: chips,
limits, placement rules) ← dialects ← interpreter ← passes ← backend,
frontend and the runtime interface ← models and estimator ← api ← tools ←
the universe and the package's own `__init__`. Checked on the import statements of every module
(module level, inside functions and under TYPE_CHECKING alike): no import
cycle, and no import of a higher layer."""

from __future__ import annotations

import ast
from pathlib import Path

import xdsl_ane

ROOT = Path(xdsl_ane.__file__).parent

LAYERS = {
    "errors": 0,
    "outputs": 0,
    "locations": 0,
    "diagnostics": 0,
    "progress": 0,
    "ane": 1,
    "dialects": 2,
    "interpreter": 3,
    "weights": 3,
    "passes": 4,
    "backend": 5,
    "frontend": 5,
    "interface": 5,
    "models": 6,
    "estimator": 6,
    "api": 7,
    "tools": 8,
    "universe": 9,
}
PACKAGE_LAYER = 10


def modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = ("xdsl_ane", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Each module's imports of xdsl_ane modules: `from pkg import sub` is
    an import of the submodule (and of pkg only for names that are not
    modules)."""
    known = modules()
    graph: dict[str, set[str]] = {name: set() for name in known}

    def owner(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[
                        : len(package.split(".")) - node.level + 1
                    ]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                subs = [f"{module}.{alias.name}" for alias in node.names]
                targets = [s for s in subs if s in known]
                if len(targets) < len(subs):
                    targets.append(module)
            else:
                continue
            for target in targets:
                if not target.startswith("xdsl_ane"):
                    continue
                found = owner(target)
                if found is not None and found != name:
                    graph[name].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> int:
    if module == "xdsl_ane":
        return PACKAGE_LAYER
    return LAYERS[module.split(".")[1]]


def test_every_module_has_a_layer():
    unplaced = [
        m for m in modules() if m != "xdsl_ane" and m.split(".")[1] not in LAYERS
    ]
    assert unplaced == []


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_imports_go_down_the_layers():
    upward = [
        f"{module} imports {target}"
        for module, targets in sorted(import_graph().items())
        for target in sorted(targets)
        if layer(target) > layer(module)
    ]
    assert upward == []


def test_the_checks_see_a_cycle_and_an_upward_import():
    graph = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "a.w": set()}
    assert cycles(graph) == [["a.x", "a.y", "a.z"]]
    real = import_graph()
    assert "xdsl_ane.dialects.mil" in real["xdsl_ane.passes.canonicalization"]
    assert layer("xdsl_ane.passes.canonicalization") > layer("xdsl_ane.dialects.mil")
