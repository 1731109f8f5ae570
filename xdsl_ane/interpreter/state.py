"""Numpy semantics of the state ops and their companions (rlx and mil).

A state argument is passed as a `StateBuffer`, a mutable holder of one
array: `read_state` returns what it holds, `write_state` /
`coreml_update_state` replace it (`interpreter.core.StatefulRuntime`
keeps one buffer per state name across calls). The arrays a buffer holds
are read-only and own their data, so no one changes them in place and
they are handed out and taken in without copies: a `slice_update` result
is such an array, so a layer's read, update and write of a package's KV
cache costs one copy of the cache, not four.

`slice_update` writes `update` at a runtime `begin` (end = begin +
update's shape); a slice that leaves the input is an `InterpretationError`
(Core ML's behaviour there is undefined). `argmax` / `reduce_argmax` give
the first index of the largest value, as int32.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.ir import Attribute

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.state_type import StateTypeBase
from xdsl_ane.dialects.typing import bool_prop, int_prop
from xdsl_ane.interpreter.numerics import checked_impl
from xdsl_ane.interpreter.values import (
    InterpretationError,
    check_value,
    numpy_dtype,
)


class StateBuffer:
    """The value of one state, shared by the calls that receive it."""

    def __init__(self, t: StateTypeBase, value: np.ndarray | None = None):
        self.type = t
        wrapped = t.wrapped
        if value is None:
            value = np.zeros(wrapped.get_shape(), numpy_dtype(wrapped.element_type))
        self.value = frozen(check_value(f"state {t}", value, wrapped))

    def store(self, what: str, value: np.ndarray) -> None:
        self.value = frozen(check_value(what, value, self.type.wrapped))


def frozen(value: np.ndarray) -> np.ndarray:
    """`value` as an array no one can change: itself where it owns its data
    and is read-only (a state's value, a `slice_update` result), else a
    read-only copy."""
    if value.flags.owndata and not value.flags.writeable:
        return value
    copy = np.array(value, copy=True)
    copy.flags.writeable = False
    return copy


def check_state_argument(what: str, value: object, t: Attribute) -> None:
    """A state argument must be a StateBuffer holding the state's type (an
    fp16 and an fp32 state of one shape are different states)."""
    if not isinstance(value, StateBuffer):
        raise InterpretationError(
            f"{what} is a state ({t}); pass a StateBuffer (see StatefulRuntime)"
        )
    if value.type.wrapped != t.wrapped:  # type: ignore[attr-defined]
        raise InterpretationError(
            f"{what}: the buffer holds {value.type.wrapped}, the function's state "
            f"is {t}"
        )


def slice_update(op_name: str, x: np.ndarray, update: np.ndarray, begin) -> np.ndarray:
    begin = [int(b) for b in np.asarray(begin).reshape(-1)]
    if any(b < 0 or b + u > d for b, u, d in zip(begin, update.shape, x.shape)):
        raise InterpretationError(
            f"{op_name}: the slice at begin {begin} of size {list(update.shape)} "
            f"leaves the input of shape {list(x.shape)}"
        )
    out = np.array(x, copy=True)
    out[tuple(slice(b, b + u) for b, u in zip(begin, update.shape))] = update
    out.flags.writeable = False  # a state may hold it without a copy
    return out


def argmax(x: np.ndarray, axis: int, keep_dims: bool) -> np.ndarray:
    # NaN never wins (fp16 overflow must not pick a token).
    filled = np.where(np.isnan(x), -np.inf, x) if x.dtype.kind == "f" else x
    return np.argmax(filled, axis=axis, keepdims=keep_dims).astype(np.int32)


@register_impls
class StateFunctions(InterpreterFunctions):
    """The state ops of both dialects, slice_update and argmax."""

    @impl(rlx.ReadStateOp)
    def run_rlx_read_state(self, interpreter: Interpreter, op, args):
        return (args[0].value,)

    @impl(mil.ReadStateOp)
    def run_mil_read_state(self, interpreter: Interpreter, op, args):
        return (args[0].value,)

    @impl(rlx.WriteStateOp)
    def run_write_state(self, interpreter: Interpreter, op, args):
        args[0].store(f"{op.name} value", args[1])
        return ()

    @impl(mil.CoremlUpdateStateOp)
    def run_coreml_update_state(self, interpreter: Interpreter, op, args):
        args[0].store(f"{op.name} value", args[1])
        return (args[0].value,)

    @checked_impl(rlx.SliceUpdateOp, convert=False)
    def run_rlx_slice_update(self, op, x, update, begin):
        return slice_update(op.name, x, update, begin)

    @checked_impl(mil.SliceUpdateOp, convert=False)
    def run_mil_slice_update(self, op, x, update, begin, end):
        if not np.array_equal(np.asarray(end) - np.asarray(begin), update.shape):
            raise InterpretationError(
                f"{op.name}: end − begin {list(np.asarray(end) - np.asarray(begin))} "
                f"differs from the update's shape {list(update.shape)}"
            )
        return slice_update(op.name, x, update, begin)

    @checked_impl(rlx.ArgmaxOp, convert=False)
    def run_argmax(self, op, x):
        axis = int_prop(op.properties, "axis", -1)
        return argmax(x, axis, bool_prop(op.properties, "keep_dims"))

    @checked_impl(mil.ReduceArgmaxOp, convert=False)
    def run_reduce_argmax(self, op, x):
        axis = int_prop(op.properties, "axis", op.input_default("axis"))
        return argmax(x, axis, bool_prop(op.properties, "keep_dims"))


def state_arguments(function: func.FuncOp) -> dict[str, StateTypeBase]:
    """The state arguments of a function by name (name hint, else argN)."""
    states = {}
    for i, arg in enumerate(function.body.block.args):
        if isinstance(arg.type, StateTypeBase):
            states[arg.name_hint or f"arg{i}"] = arg.type
    return states
