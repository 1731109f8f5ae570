"""Where each op of a compiled program runs on a given chip's Neural Engine
(or why it does not) and how long it takes, from the chip table
(`xdsl_ane/ane/chips.py`), the placement rules shared with ane-lint
(`ane/rules.py`, applied by `passes/placement.py`), and a roofline per op
(`model.py`, `cost.py`).

    from xdsl_ane.estimator import estimate
    e = estimate(compiled_model, chip="m4")   # a CompiledModel, module or package path
    print(e.total_ms, e.ane_fraction)

`report.py` renders it: a table per op or layer, a summary line, a chart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xdsl.dialects import builtin, func

from xdsl_ane.ane.chips import CHIPS, DEFAULT_CHIP, Chip, get_chip
from xdsl_ane.errors import XdslAneError
from xdsl_ane.estimator.model import (
    Estimate,
    OpEstimate,
    Segment,
    estimate_functions,
    estimate_module,
)

__all__ = [
    "CHIPS",
    "Chip",
    "Estimate",
    "OpEstimate",
    "Segment",
    "estimate",
    "estimate_functions",
    "estimate_module",
    "get_chip",
]


def _functions(module: builtin.ModuleOp, prefix: str = "") -> list:
    return [
        (prefix + op.sym_name.data, op)
        for op in module.walk()
        if isinstance(op, func.FuncOp)
    ]


def estimate(compiled: Any, chip: str | Chip = DEFAULT_CHIP) -> Estimate:
    """The estimate of `compiled` on `chip`: a `CompiledModel` (or anything
    with a mil `module`), an `LlmPackage` / `LlmPackageSet`, a
    `builtin.ModuleOp`, or the path of a compiled model (`.mlpackage`,
    `--emit proto` / `mil-text` directory, `.mil`)."""
    chip = get_chip(chip)  # an unknown chip fails before any work
    if isinstance(compiled, str | Path):
        from xdsl_ane.frontend.milproto import read_compiled

        program = read_compiled(compiled)
        return estimate_functions(_functions(program.module), chip, str(compiled))
    if isinstance(compiled, builtin.ModuleOp):
        return estimate_module(compiled, chip)
    source = str(getattr(compiled, "source", "<module>"))
    parts = getattr(compiled, "parts", None)
    if parts is not None:  # a split LLM: each package's functions, in order
        functions = []
        for part in parts:
            # (a tied model's embed_head serves two parts, each its own two)
            called = part.record.get("function_names", {}).values()
            functions += [
                (name, f)
                for name, f in _functions(part.compiled.module, f"{part.name}/")
                if f.sym_name.data in (set(called) or {"prefill", "decode"})
            ]
        return estimate_functions(functions, chip, source)
    inner = getattr(compiled, "compiled", compiled)
    module = getattr(inner, "module", None)
    if not isinstance(module, builtin.ModuleOp):
        raise XdslAneError(
            "estimate: expected a compiled model, a module or the path of a "
            f"compiled package, got {type(compiled).__name__}"
        )
    return estimate_functions(_functions(module), chip, source)
