"""The values of the numpy interpreter, shared by its op implementations
(`interpreter.mil`, `.rlx`, `.state`) and the runner (`interpreter.core`).

Runtime values are numpy arrays whose dtype matches the tensor's element type
(f32 -> float32, f16 -> float16, i32 -> int32, i8 -> int8, i1 -> bool); f16
results are computed in float16. Weights (`rlx.param`, `mil.const weight=`)
come from a `WeightStore` (weights/store.py) handed to the interpreter functions.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from xdsl_ane.diagnostics import did_you_mean
from xdsl_ane.dialects.dense import dense_to_numpy  # noqa: F401 (re-exported)
from xdsl_ane.dialects.dtypes import numpy_dtype_of
from xdsl_ane.dialects.uses import uses_through
from xdsl_ane.errors import XdslAneError


class InterpretationError(DiagnosticException, XdslAneError):
    """A runtime failure of the interpreter: missing or mis-shaped input or
    weight, or an op without an implementation. An `XdslAneError`, the one
    exception type of the API (`run_function`)."""


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype that holds values of an MLIR element type."""
    try:
        return numpy_dtype_of(element_type)
    except ValueError:
        raise InterpretationError(f"unsupported element type {element_type}") from None


def check_value(what: str, value: np.ndarray, t: Attribute) -> np.ndarray:
    """Checks that a runtime array matches the tensor type `t` exactly."""
    if not isinstance(t, TensorType):
        raise InterpretationError(f"{what} has type {t}; only tensors are supported")
    shape = t.get_shape()
    dtype = numpy_dtype(t.element_type)
    if not isinstance(value, np.ndarray):
        raise InterpretationError(f"{what} is not an array")
    if tuple(value.shape) != tuple(shape):
        raise InterpretationError(
            f"{what} has shape {list(value.shape)}, expected {list(shape)}"
        )
    if value.dtype != dtype:
        raise InterpretationError(f"{what} has dtype {value.dtype}, expected {dtype}")
    return value


RANDOM_INTEGERS = 8
"""Random integer inputs lie in [0, 8), or below the size they index."""

SAME_VALUES = {
    *(f"rlx.{n}" for n in ("reshape", "transpose", "expand", "narrow", "cast")),
    *(
        f"mil.{n}"
        for n in (
            "reshape",
            "transpose",
            "squeeze",
            "expand_dims",
            "cast",
            "identity",
            "slice_by_size",
            "slice_by_index",
        )
    ),
}
"""Ops whose result holds (some of) their first operand's values as they are."""


def index_bound(value: SSAValue) -> int | None:
    """The size `value` indexes: the smallest axis a gather of its values
    reads along, or a one_hot's size, through ops that pass the values on
    unchanged (None where it indexes nothing). A runtime feeds ids below it:
    token type ids index a table of 2 rows."""
    bounds = []
    for use in uses_through(
        value, lambda use: use.operation.name in SAME_VALUES and use.index == 0
    ):
        op = use.operation
        if op.name in ("rlx.gather", "mil.gather") and use.index == 1:
            table = op.operands[0].type
            axis = op.properties.get("axis")
            a = 0 if axis is None else axis.value.data  # type: ignore[attr-defined]
            bounds.append(table.get_shape()[a])  # type: ignore[attr-defined]
        elif op.name == "mil.one_hot":
            bounds.append(op.properties["one_hot_vector_size"].value.data)  # type: ignore[attr-defined]
    return min(bounds) if bounds else None


def random_array(
    rng: np.random.Generator, t: Attribute, bound: int | None = None
) -> np.ndarray:
    """Floats from N(0, 1), booleans uniformly, integers in [0, 8) (or in
    [0, bound) where `index_bound` found a smaller size)."""
    if not isinstance(t, TensorType):
        raise InterpretationError(
            f"no random value of type {t}; only tensors are supported"
        )
    shape = t.get_shape()
    dtype = numpy_dtype(t.element_type)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    high = RANDOM_INTEGERS if bound is None else max(1, min(bound, RANDOM_INTEGERS))
    return rng.integers(0, high, size=shape).astype(dtype)


def find_function(module: builtin.ModuleOp, name: str | None) -> func.FuncOp:
    if name is not None:
        # the module's own functions first, without walking every op: a
        # runtime looks its function up on every call
        for op in module.ops:
            if isinstance(op, func.FuncOp) and op.sym_name.data == name:
                return op
    functions = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    if not functions:
        raise InterpretationError("the module has no func.func to run")
    if name is None:
        return functions[0]
    for f in functions:
        if f.sym_name.data == name:
            return f
    known = [f.sym_name.data for f in functions]
    raise InterpretationError(
        f"no function named '{name}'{did_you_mean(name, known)} (the module has "
        f"{', '.join(known)})"
    )
