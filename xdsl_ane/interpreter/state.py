"""Numpy semantics of the state ops and their companions (rlx and mil), and
the runtime that keeps states across calls.

A state argument is passed as a `StateBuffer`, a mutable holder of one
array: `read_state` returns a copy of what it holds, `write_state` /
`coreml_update_state` replace it. `StatefulRuntime` owns one buffer per
state name and hands the same buffers to every call of every function of a
module, so what a `prefill` call stores in the KV cache is what the next
`decode` call reads, as Core ML does with the states of one model.

`slice_update` writes `update` at a runtime `begin` (end = begin +
update's shape); a slice that leaves the input is an `InterpretationError`
(Core ML's behaviour there is undefined). `argmax` / `reduce_argmax` give
the first index of the largest value, as int32.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.ir import Attribute

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.state_type import StateTypeBase
from xdsl_ane.dialects.typing import bool_prop, int_prop
from xdsl_ane.interpreter.core import (
    InterpretationError,
    check_value,
    find_function,
    numpy_dtype,
)
from xdsl_ane.interpreter.numerics import checked_impl


class StateBuffer:
    """The value of one state, shared by the calls that receive it."""

    def __init__(self, t: StateTypeBase, value: np.ndarray | None = None):
        self.type = t
        wrapped = t.wrapped
        if value is None:
            value = np.zeros(wrapped.get_shape(), numpy_dtype(wrapped.element_type))
        self.value = check_value(f"state {t}", value, wrapped)

    def store(self, what: str, value: np.ndarray) -> None:
        self.value = check_value(what, np.array(value, copy=True), self.type.wrapped)


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
        return (np.array(args[0].value, copy=True),)

    @impl(mil.ReadStateOp)
    def run_mil_read_state(self, interpreter: Interpreter, op, args):
        return (np.array(args[0].value, copy=True),)

    @impl(rlx.WriteStateOp)
    def run_write_state(self, interpreter: Interpreter, op, args):
        args[0].store(f"{op.name} value", args[1])
        return ()

    @impl(mil.CoremlUpdateStateOp)
    def run_coreml_update_state(self, interpreter: Interpreter, op, args):
        args[0].store(f"{op.name} value", args[1])
        return (np.array(args[1], copy=True),)

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
        axis = int_prop(op.properties, "axis", -1)
        return argmax(x, axis, bool_prop(op.properties, "keep_dims"))


def state_arguments(function: func.FuncOp) -> dict[str, StateTypeBase]:
    """The state arguments of a function by name (name hint, else argN)."""
    states = {}
    for i, arg in enumerate(function.body.block.args):
        if isinstance(arg.type, StateTypeBase):
            states[arg.name_hint or f"arg{i}"] = arg.type
    return states


class StatefulRuntime:
    """Runs the functions of one module with states that persist across
    calls: each state argument, by name, gets one buffer (zeros at first)
    that every call of every function receives."""

    def __init__(
        self,
        module: builtin.ModuleOp,
        weights: Mapping[str, np.ndarray] | None = None,
    ):
        self.module = module
        self.weights = weights
        self.states: dict[str, StateBuffer] = {}

    def state(self, name: str, t: StateTypeBase) -> StateBuffer:
        buffer = self.states.get(name)
        if buffer is None:
            buffer = self.states[name] = StateBuffer(t)
        elif buffer.type.wrapped != t.wrapped:
            raise InterpretationError(
                f"state '{name}' is {buffer.type.wrapped} in one function and "
                f"{t.wrapped} in another"
            )
        return buffer

    def reset(self) -> None:
        """Forgets every state (the next call starts from zeros)."""
        self.states.clear()

    def call(
        self, function: str | None, inputs: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        """Calls `function` with `inputs` for its non-state arguments, in
        order; state arguments get the runtime's buffers."""
        from xdsl_ane.interpreter.core import run_function

        f = find_function(self.module, function)
        args: list[object] = []
        given = list(inputs)
        for i, arg in enumerate(f.body.block.args):
            if isinstance(arg.type, StateTypeBase):
                args.append(self.state(arg.name_hint or f"arg{i}", arg.type))
            else:
                if not given:
                    raise InterpretationError(
                        f"@{f.sym_name.data}: too few inputs (argument {i} missing)"
                    )
                args.append(given.pop(0))
        if given:
            raise InterpretationError(
                f"@{f.sym_name.data}: {len(given)} input(s) more than its arguments"
            )
        return run_function(self.module, args, self.weights, f.sym_name.data)
