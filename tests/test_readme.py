"""The README states what is true: its op-count tables are what the
pipeline produces today, and its rlx table covers the dialect."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from xdsl_ane.dialects.rlx import RLX

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def load_bench(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_op_count_tables_are_current():
    tables = load_bench("op_counts").tables()
    assert tables in README, "README op counts are stale: run python bench/op_counts.py"


def test_rlx_table_names_every_op():
    rows = [line for line in README.splitlines() if line.startswith("| `rlx.")]
    text = "\n".join(rows)
    for op in RLX.operations:
        short = op.name.removeprefix("rlx.")
        assert f"`{op.name}`" in text or f"`{short}`" in text, op.name
