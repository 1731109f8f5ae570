"""Running programs in ANE form on logical data: map the logical inputs with
the layouts the pass recorded, feed dynamic weights as Wᵀ arguments, and map
the results back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import builtin, func

from xdsl_ane.dialects import ane
from xdsl_ane.interpreter.core import run_function
from xdsl_ane.passes.layouts import layout_of, recorded_layout


def function_of(module: builtin.ModuleOp, name: str | None = None) -> func.FuncOp:
    for op in module.walk():
        if isinstance(op, func.FuncOp) and (name is None or op.sym_name.data == name):
            return op
    raise KeyError(name)


def weight_arguments(function: func.FuncOp) -> list[tuple[int, str, bool]]:
    """(argument index, weight name, stored as [Cout, Cin]) per weight argument."""
    return [
        (record.arg.data, record.weight.data, record.stored_out_in)
        for record in ane.weight_args(function)
    ]


def ane_inputs(
    function: func.FuncOp,
    logical_inputs: Sequence[np.ndarray],
    weights: Mapping[str, np.ndarray],
) -> list[np.ndarray]:
    """The arguments of an ANE-form function for logical inputs: each
    mapped by its layout, then the dynamic weights W [Cout, Cin] as
    [1, Cin, 1, Cout] arguments holding Wᵀ."""
    arg_types = function.function_type.inputs.data
    inputs: list[np.ndarray | None] = [None] * len(arg_types)
    layouts = [recorded_layout(r) for r in ane.arg_layouts(function)]
    for i, x in enumerate(logical_inputs):
        layout = layouts[i] if i < len(layouts) else layout_of(x.shape)
        inputs[i] = layout.to_ane(x)
    for index, name, stored_out_in in weight_arguments(function):
        w = weights[name]
        shape = arg_types[index].get_shape()  # type: ignore[attr-defined]
        if stored_out_in:
            w = w.T
        inputs[index] = np.ascontiguousarray(w).reshape(shape)
    for i, (x, t) in enumerate(zip(inputs, arg_types)):
        # fp16 compute; a bool input is declared float (mil-io-types)
        dtype = np.float16 if "f16" in str(t) else None
        if x is not None and x.dtype == bool and "f32" in str(t):
            dtype = np.float32
        if x is not None and dtype is not None:
            inputs[i] = x.astype(dtype)
    assert all(x is not None for x in inputs)
    return inputs  # type: ignore[return-value]


def run_ane_form(
    module: builtin.ModuleOp,
    logical_inputs: Sequence[np.ndarray],
    weights: Mapping[str, np.ndarray],
    logical_shapes: Sequence[Sequence[int]],
    name: str | None = None,
) -> list[np.ndarray]:
    """Runs an ANE-form function on logical inputs; returns logical results."""
    function = function_of(module, name)
    inputs = ane_inputs(function, logical_inputs, weights)
    results = run_function(module, inputs, weights, function.sym_name.data)
    layouts = [recorded_layout(r) for r in ane.result_layouts(function)]
    if len(layouts) != len(results):
        layouts = [layout_of(shape) for shape in logical_shapes]
    return [layout.to_logical(y) for y, layout in zip(results, layouts)]
