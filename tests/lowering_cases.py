"""Helpers for checking `convert-rlx-to-mil` by numbers.

A test builds a small rlx function, runs the interpreter on it and on its
lowering (a clone of the module after `ConvertRlxToMilPass`) with the same
inputs and weights, and compares the outputs. Inputs are described by `Arg`s
so that one description yields both the f32 and the f16 variant of a case:
an `Arg` without an element type takes the case's float type.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f16, f32, i1, i8, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.test_value import create_ssa_value

from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.interpreter.core import numpy_dtype, run_function
from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass

__all__ = [
    "Arg",
    "F16_TOL",
    "F32_TOL",
    "build_module",
    "check_lowering",
    "compare_outputs",
    "f16",
    "f32",
    "i1",
    "i8",
    "i32",
    "lower",
    "make_inputs",
    "mil_op_counts",
    "relative_error",
    "value",
]

F32_TOL = {"rtol": 1e-5, "atol": 1e-6}
"""Tight: the lowering computes the same formula in the same precision."""

F16_TOL = {"rtol": 1e-2, "atol": 1e-2}
"""Loose: both sides compute in float16, but the lowering's decomposition
rounds at other points than the rlx reference."""


def relative_error(expected: np.ndarray, actual: np.ndarray) -> float:
    """‖expected − actual‖ / ‖expected‖, in float64."""
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    return float(np.linalg.norm(e - a) / np.linalg.norm(e))


Generator = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def value(shape: Sequence[int], element: Attribute = f32) -> SSAValue:
    """A free SSA value of tensor type `shape` x `element`, an operand for
    verifier tests that build one op."""
    return create_ssa_value(tensor(shape, element))


def _normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape)


@dataclass(frozen=True)
class Arg:
    """One function argument: its shape, element type (None: the case's float
    type) and how its values are drawn (float64 or integer values, converted
    to the argument's dtype)."""

    shape: tuple[int, ...]
    element: Attribute | None = None
    gen: Generator = _normal

    def element_type(self, float_type: Attribute) -> Attribute:
        return self.element if self.element is not None else float_type


def positive(*shape: int) -> Arg:
    """Floats in [0.5, 2): for log, sqrt, rsqrt, pow's base."""
    return Arg(shape, gen=lambda rng, s: rng.uniform(0.5, 2.0, s))


def nonzero(*shape: int) -> Arg:
    """Floats with |x| in [0.5, 2): for divisors and reciprocals."""
    return Arg(
        shape,
        gen=lambda rng, s: rng.uniform(0.5, 2.0, s) * rng.choice([-1.0, 1.0], s),
    )


def normal(*shape: int, sigma: float = 1.0) -> Arg:
    return Arg(shape, gen=lambda rng, s: sigma * rng.standard_normal(s))


def small_ints(*shape: int, element: Attribute | None = None, low=-2, high=3) -> Arg:
    """Integer values in [low, high) (as floats unless `element` is an integer
    type): ties for comparisons, zeros for casts to i1."""
    return Arg(shape, element, lambda rng, s: rng.integers(low, high, s))


def indices(*shape: int, bound: int) -> Arg:
    """i32 indices in [0, bound): gather indices, class labels."""
    return Arg(shape, i32, lambda rng, s: rng.integers(0, bound, s))


def float_labels(*shape: int, bound: int) -> Arg:
    """Class labels held as floats (the case's float type)."""
    return Arg(shape, None, lambda rng, s: rng.integers(0, bound, s))


def bools(*shape: int) -> Arg:
    return Arg(shape, i1, lambda rng, s: rng.random(s) < 0.5)


def make_inputs(
    args: Sequence[Arg], float_type: Attribute, seed: int
) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for arg in args:
        dtype = numpy_dtype(arg.element_type(float_type))
        out.append(np.asarray(arg.gen(rng, arg.shape)).astype(dtype))
    return out


Body = Callable[..., SSAValue | Operation | Sequence[SSAValue | Operation]]


def build_module(
    arg_types: Sequence[Attribute], body: Body, name: str = "kernel"
) -> builtin.ModuleOp:
    """`func.func @name(args) { return body(*args) }` in a module; `body`
    returns one value (or op) or a list of them."""

    def emit(*args: SSAValue) -> list[SSAValue]:
        results = body(*args)
        if isinstance(results, SSAValue | Operation):
            results = [results]
        return [SSAValue.get(r) for r in results]

    module = builtin.ModuleOp([build_function(name, list(arg_types), emit)])
    module.verify()
    return module


def build_case(
    args: Sequence[Arg], body: Callable[..., object], float_type: Attribute
) -> builtin.ModuleOp:
    """A module for `args` with floats of `float_type`; `body(dtype, *args)`."""
    types = [tensor(a.shape, a.element_type(float_type)) for a in args]
    return build_module(types, lambda *values: body(float_type, *values))


def lower(module: builtin.ModuleOp) -> builtin.ModuleOp:
    """A clone of `module` after convert-rlx-to-mil; asserts that no rlx op
    remains and that the result verifies."""
    lowered = module.clone()
    ConvertRlxToMilPass().apply(Context(), lowered)
    leftover = sorted({op.name for op in lowered.walk() if op.name.startswith("rlx.")})
    assert not leftover, f"rlx ops left after lowering: {leftover}"
    lowered.verify()
    return lowered


def mil_op_counts(module: builtin.ModuleOp) -> Counter[str]:
    """How many ops of each mil op type the module holds (consts included)."""
    return Counter(op.name for op in module.walk() if op.name.startswith("mil."))


def compare_outputs(
    expected: Sequence[np.ndarray],
    actual: Sequence[np.ndarray],
    rtol: float,
    atol: float,
    what: str = "",
) -> None:
    """Same count, shapes and dtypes; floats within tolerance, everything else
    exactly equal."""
    assert len(actual) == len(expected), what
    for i, (e, a) in enumerate(zip(expected, actual)):
        label = f"{what} output {i}"
        assert a.dtype == e.dtype, f"{label}: dtype {a.dtype}, expected {e.dtype}"
        assert a.shape == e.shape, f"{label}: shape {a.shape}, expected {e.shape}"
        if e.dtype.kind == "f":
            assert np.all(np.isfinite(e)), f"{label}: reference is not finite"
            np.testing.assert_allclose(
                a.astype(np.float64),
                e.astype(np.float64),
                rtol=rtol,
                atol=atol,
                err_msg=label,
            )
        else:
            np.testing.assert_array_equal(a, e, err_msg=label)


def check_lowering(
    module: builtin.ModuleOp,
    inputs: Sequence[np.ndarray],
    weights: Mapping[str, np.ndarray] | None = None,
    rtol: float = F32_TOL["rtol"],
    atol: float = F32_TOL["atol"],
    expect_dtype: np.dtype | type | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Runs `module` and its lowering on the same data, compares the outputs
    and returns (rlx outputs, mil outputs). `expect_dtype`, when given, is
    the dtype every output must have."""
    lowered = lower(module)
    expected = run_function(module, inputs, weights)
    actual = run_function(lowered, inputs, weights)
    if expect_dtype is not None:
        for a in actual:
            assert a.dtype == np.dtype(expect_dtype), f"output dtype {a.dtype}"
    compare_outputs(expected, actual, rtol, atol)
    return expected, actual
