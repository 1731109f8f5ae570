"""Checking xDSL's `canonicalize` on mil programs by numbers: a function
interpreted before and after on the same inputs must give identical
results, and a second canonicalize must change nothing (`check_same`,
`check_text`); shared by the canonicalization tests.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from ane_form import function_of
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import Builtin, ModuleOp, TensorType
from xdsl.dialects.func import Func
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.parser import Parser
from xdsl.transforms.canonicalize import CanonicalizePass

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.mil import MIL
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.passes.driver import make_context


def parse(text: str) -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, Func, MIL):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def canonicalized(module: ModuleOp) -> ModuleOp:
    out = module.clone()
    CanonicalizePass().apply(make_context(), out)
    out.verify()
    return out


def mil_ops(module: ModuleOp) -> Counter[str]:
    """How many of each mil op (consts apart) the module holds."""
    return Counter(
        op.name.removeprefix("mil.")
        for op in module.walk()
        if op.name.startswith("mil.") and op.name != "mil.const"
    )


def consts(module: ModuleOp) -> list[mil.ConstOp]:
    return [op for op in module.walk() if isinstance(op, mil.ConstOp)]


def check_same(
    module: ModuleOp,
    weights: Mapping[str, np.ndarray] | None = None,
    seeds: Sequence[int] = (0, 1),
) -> ModuleOp:
    """Canonicalizes `module`, checks that the result computes exactly what
    the input does and that canonicalizing again changes nothing."""
    after = canonicalized(module)
    for seed in seeds:
        inputs = random_inputs(function_of(module), seed)
        expected = run_function(module, inputs, weights)
        actual = run_function(after, inputs, weights)
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert a.dtype == e.dtype and a.shape == e.shape
            np.testing.assert_array_equal(a, e)
    assert str(canonicalized(after)) == str(after)
    return after


def check_text(
    text: str, remaining: Mapping[str, int], weights: Mapping[str, np.ndarray] = {}
) -> ModuleOp:
    after = check_same(parse(text), weights)
    assert mil_ops(after) == Counter(remaining)
    return after


def build_module(
    arg_types: Sequence[TensorType],
    body: Callable[..., Sequence[SSAValue]],
) -> ModuleOp:
    """A one-function module; `body(emit, *args)` emits ops through `emit`
    (which returns the op's first result) and returns the results."""
    block = Block(arg_types=arg_types)
    ops: list[Operation] = []

    def emit(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    results = body(emit, *block.args)
    block.add_ops([*ops, func.ReturnOp(*results)])
    function = func.FuncOp(
        "main", (list(arg_types), [r.type for r in results]), Region(block)
    )
    module = builtin.ModuleOp([function])
    module.verify()
    return module


def arange_weights(**shapes: Sequence[int]) -> dict[str, np.ndarray]:
    """Weights whose every element differs, so any misplaced element shows."""
    return {
        name: np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        for name, shape in shapes.items()
    }
