"""The values of the numpy interpreter, shared by its op implementations
(`interpreter.mil`, `.rlx`, `.state`) and the runner (`interpreter.core`).

Runtime values are numpy arrays whose dtype matches the tensor's element type
(f32 -> float32, f16 -> float16, i32 -> int32, i8 -> int8, i1 -> bool); f16
results are computed in float16. Weights (`rlx.param`, `mil.const weight=`)
come from a `WeightStore` handed to the interpreter functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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


class WeightStore:
    """Named weight tensors for `rlx.param` and `mil.const weight=` ops."""

    def __init__(self, weights: Mapping[str, np.ndarray] | None = None):
        self.weights = dict(weights or {})

    def get(
        self,
        name: str,
        t: Attribute,
        op_name: str,
        file_shape: Sequence[int] | None = None,
        perm: Sequence[int] | None = None,
    ) -> np.ndarray:
        """The weight `name` as a value of type `t`. The file's tensor must
        have `file_shape` (default: t's shape); it is transposed by `perm`
        and reshaped to t's shape (see mil.const's weight views)."""
        if name not in self.weights:
            raise InterpretationError(
                f"{op_name}: weight '{name}' is not in the weights file"
            )
        value = self.weights[name]
        assert isinstance(t, TensorType)
        expected = tuple(t.get_shape() if file_shape is None else file_shape)
        if tuple(value.shape) != expected:
            raise InterpretationError(
                f"{op_name}: weight '{name}' has shape {list(value.shape)}, "
                f"the IR declares {list(expected)}"
            )
        value = weight_view(value, t.get_shape(), perm)
        dtype = numpy_dtype(t.element_type)
        if value.dtype != dtype:
            # A float weight may be stored at another precision (fp32 data for
            # an f16 program); anything else is a mismatch.
            if value.dtype.kind == "f" and dtype.kind == "f":
                return value.astype(dtype)
            raise InterpretationError(
                f"{op_name}: weight '{name}' has dtype {value.dtype}, the IR "
                f"declares {dtype}"
            )
        return value


def weight_view(
    value: np.ndarray, shape: Sequence[int], perm: Sequence[int] | None
) -> np.ndarray:
    """A weights-file tensor as a const sees it: transposed by `perm`, then
    reshaped row-major to `shape` (the one definition of weight views, used
    by the interpreter and the weight writers)."""
    if perm is not None:
        value = np.transpose(value, perm)
    return np.ascontiguousarray(value).reshape(tuple(shape))


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
