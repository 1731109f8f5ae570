"""The runner of the numpy interpreter for rlx and mil: one function of a
module on numpy inputs (`run_function`), reproducible random inputs, and
`StatefulRuntime`, which owns one buffer per state name and hands the same
buffers to every call of every function of a module, so what a `prefill`
call stores in the KV cache is what the next `decode` call reads, as Core ML
does with the states of one model. The values and weights it works on are
those of `interpreter.values` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.interpreter import Interpreter

from xdsl_ane.diagnostics import counted
from xdsl_ane.dialects.state_type import StateTypeBase, is_state
from xdsl_ane.interpreter.func import FuncFunctions
from xdsl_ane.interpreter.mil import MilFunctions
from xdsl_ane.interpreter.rlx import RlxFunctions
from xdsl_ane.interpreter.state import (
    StateBuffer,
    StateFunctions,
    check_state_argument,
)
from xdsl_ane.interpreter.values import (
    InterpretationError,
    check_value,
    dense_to_numpy,
    find_function,
    index_bound,
    numpy_dtype,
    random_array,
)
from xdsl_ane.weights.store import WeightStore

__all__ = [
    "FunctionRunner",
    "InterpretationError",
    "StatefulRuntime",
    "check_value",
    "dense_to_numpy",
    "find_function",
    "numpy_dtype",
    "random_array",
    "random_inputs",
    "run_calls",
    "run_function",
]


def random_inputs(function: func.FuncOp, seed: int) -> list[np.ndarray]:
    """Reproducible random arguments for `function`: floats from N(0, 1),
    integers in [0, 8) (below the size they index, `index_bound`), booleans
    uniformly; a state gets a `StateBuffer` holding such values."""
    rng = np.random.default_rng(seed)
    out = []
    for arg in function.body.block.args:
        t = arg.type
        if isinstance(t, StateTypeBase):
            out.append(StateBuffer(t, random_array(rng, t.wrapped)))
        else:
            out.append(random_array(rng, t, index_bound(arg)))
    return out


def run_function(
    module: builtin.ModuleOp,
    inputs: Sequence[np.ndarray],
    weights: Mapping[str, np.ndarray] | None = None,
    function: str | None = None,
    listeners: tuple[Interpreter.Listener, ...] = (),
) -> list[np.ndarray]:
    """Interprets one function of `module` on numpy inputs and returns its
    results. Inputs must match the argument types exactly; a state
    argument takes a `StateBuffer`, which the call reads and updates
    (`StatefulRuntime` below keeps them across calls); `listeners` see
    each op interpreted. Raises `XdslAneError` (an `InterpretationError`,
    naming the op, when the program fails)."""
    return FunctionRunner(module, weights, listeners).run(inputs, function)


class FunctionRunner:
    """An interpreter of `module` set up once for several calls of its
    functions (`run`: as `run_function`). With `keep_constants` the
    weights that constexpr ops expand are expanded once and kept for the
    next calls (calibration's samples), at the memory of their dense
    form."""

    def __init__(
        self,
        module: builtin.ModuleOp,
        weights: Mapping[str, np.ndarray] | None = None,
        listeners: tuple[Interpreter.Listener, ...] = (),
        keep_constants: bool = False,
    ):
        self.module = module
        store = WeightStore(weights)
        self.interpreter = Interpreter(module, listeners=listeners)
        self.interpreter.register_implementations(FuncFunctions())
        self.interpreter.register_implementations(RlxFunctions(store))
        self.interpreter.register_implementations(MilFunctions(store, keep_constants))
        self.interpreter.register_implementations(StateFunctions())

    def run(
        self, inputs: Sequence[np.ndarray], function: str | None = None
    ) -> list[np.ndarray]:
        f = find_function(self.module, function)
        name = f.sym_name.data
        arg_types = f.function_type.inputs.data
        if len(inputs) != len(arg_types):
            raise InterpretationError(
                f"@{name} takes {counted(len(arg_types), 'argument')}, got {len(inputs)}"
            )
        for i, (value, t) in enumerate(zip(inputs, arg_types)):
            if is_state(t):  # a StateBuffer the call reads and writes
                check_state_argument(f"argument arg{i} of @{name}", value, t)
            else:
                check_value(f"argument arg{i} of @{name}", value, t)
        results = self.interpreter.call_op(f, tuple(inputs))
        # a state's value is read-only (interpreter.state): the caller gets
        # a copy
        return [
            np.array(r) if not r.flags.writeable else r
            for r in map(np.asarray, results)
        ]


class StatefulRuntime:
    """Runs the functions of one module with states that persist across
    calls: each state argument, by name, gets one buffer (zeros at first)
    that every call of every function receives; `listeners` see each op
    of every call interpreted. One `FunctionRunner` serves every call
    (`keep_constants`: its constexpr weights expanded once)."""

    def __init__(
        self,
        module: builtin.ModuleOp,
        weights: Mapping[str, np.ndarray] | None = None,
        listeners: tuple[Interpreter.Listener, ...] = (),
        keep_constants: bool = False,
    ):
        self.module = module
        self.runner = FunctionRunner(module, weights, listeners, keep_constants)
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
        return self.runner.run(args, f.sym_name.data)

    def run_calls(
        self, calls: Sequence[tuple[str, Sequence[np.ndarray]]]
    ) -> list[np.ndarray]:
        """Runs `calls` (a function's name and its non-state arguments) in
        order, the states zeros at first (`reset`) and kept from call to
        call: every result of every call, in order."""
        self.reset()
        return [out for name, inputs in calls for out in self.call(name, inputs)]


def run_calls(
    module: builtin.ModuleOp,
    calls: Sequence[tuple[str, Sequence[np.ndarray]]],
    weights: Mapping[str, np.ndarray] | None = None,
    listeners: tuple[Interpreter.Listener, ...] = (),
) -> list[np.ndarray]:
    """`StatefulRuntime.run_calls` of a runtime of its own."""
    return StatefulRuntime(module, weights, listeners).run_calls(calls)
