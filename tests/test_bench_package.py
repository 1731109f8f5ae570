"""bench/ is a package without import cycles: `common` at the bottom,
`report` above it, the measurement modules above both, `run` at the top.
Every import between its modules counts, those inside functions too (a
measurement that stores its section imports `report` where it runs)."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(BENCH.rglob("*.py"))}


def bench_imports(name: str, path: Path) -> set[str]:
    """The bench modules `name` imports, wherever in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        found |= {t for t in targets if t in MODULES and t != name}
        # a bare `import x` of a sibling, as scripts run from bench/ did
        if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(
            node, "level", 0
        ):
            for t in targets:
                sibling = f"{package}.{t.split('.')[0]}"
                assert sibling not in MODULES or t.startswith("bench"), (
                    f"{path}: `{t}` imports a bench module by its bare name"
                )
    return found


def test_bench_has_no_import_cycle():
    graph = {name: bench_imports(name, path) for name, path in MODULES.items()}
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == "done":
            return
        assert state.get(name) != "open", "import cycle: " + " -> ".join(
            trail[trail.index(name) :] + [name]
        )
        state[name] = "open"
        for other in sorted(graph[name]):
            visit(other, trail + [name])
        state[name] = "done"

    for name in graph:
        visit(name, [])


def test_common_imports_no_other_bench_module():
    """common imports no bench module; report only common and its own
    tables (`report_*` modules, which import only common)."""
    assert bench_imports("bench.common", MODULES["bench.common"]) == set()
    tables = {name for name in MODULES if name.startswith("bench.report_")}
    assert bench_imports("bench.report", MODULES["bench.report"]) <= {
        "bench",
        "bench.common",
        *tables,
    }
    for name in tables:
        assert bench_imports(name, MODULES[name]) <= {"bench", "bench.common"}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_bench_module_imports(name, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    for loaded in [m for m in sys.modules if m == "bench" or m.startswith("bench.")]:
        monkeypatch.delitem(sys.modules, loaded)
    importlib.import_module(name)
