"""MIL type inference of one op checked against coremltools': a `Case` of
const (`C`) and runtime (`R`) inputs, the result types coremltools infers
(`coreml_types`) and ours (`our_types`); shared by test_mil_dialect and the
tests of the ops added since.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    TensorType,
    f16,
    f32,
    i1,
    i8,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.test_value import create_ssa_value

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.typing import STORAGE_ELEMENT_TYPES, tensor

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import Function
    from coremltools.converters.mil.mil import types as ct_types


def value(shape: Sequence[int], element_type: Attribute = f32) -> SSAValue:
    return create_ssa_value(tensor(shape, element_type))


def const(shape: Sequence[int], element_type: Attribute = f32) -> SSAValue:
    """A mil.const of zeros (for inputs MIL requires to be const)."""
    t = tensor(shape, element_type)
    return mil.ConstOp(DenseIntOrFPElementsAttr.from_list(t, [0])).result


def result_types(op: Operation) -> list[Attribute]:
    return [r.type for r in op.results]


INT4 = STORAGE_ELEMENT_TYPES["i4"]


UINT4 = STORAGE_ELEMENT_TYPES["ui4"]


CT_DTYPES = {
    f32: ct_types.fp32,
    f16: ct_types.fp16,
    i32: ct_types.int32,
    i8: ct_types.int8,
    i1: ct_types.bool,
}


NP_DTYPES = {
    f32: np.float32,
    f16: np.float16,
    i32: np.int32,
    i8: np.int8,
    i1: np.bool_,
    INT4: ct_types.np_int4_dtype,
    UINT4: ct_types.np_uint4_dtype,
}


@dataclass
class Input:
    """An operand of a cross-checked op: runtime (a program input in
    coremltools) or const (a numpy array there, a mil.const here)."""

    shape: list[int]
    element_type: Attribute = f32
    is_const: bool = False
    fill: float = 1.0


@dataclass
class Case:
    id: str
    inputs: list[Input]
    ours: Callable[..., Operation]
    theirs: Callable[..., Any]


def C(shape, element_type=f32, fill=1.0):  # noqa: N802 - short for readability
    return Input(shape, element_type, True, fill)


def R(shape, element_type=f32):  # noqa: N802
    return Input(shape, element_type)


def coreml_types(case: Case) -> list[tuple[tuple[int, ...], str]]:
    """The (shape, dtype) of each output coremltools infers for the case."""
    runtime = [i for i in case.inputs if not i.is_const]
    specs = [
        mb.TensorSpec(shape=tuple(i.shape), dtype=CT_DTYPES[i.element_type])
        for i in runtime
    ] or [mb.TensorSpec(shape=(1,))]
    out: list[tuple[tuple[int, ...], str]] = []
    names = [f"in{k}" for k in range(len(specs))]
    with Function(dict(zip(names, specs)), ct.target.iOS18) as function:
        runtime_args = iter(function.inputs[n] for n in names)
        values = [
            np.full(i.shape, i.fill, NP_DTYPES[i.element_type])
            if i.is_const
            else next(runtime_args)
            for i in case.inputs
        ]
        results = case.theirs(*values)
        for r in results if isinstance(results, list | tuple) else [results]:
            out.append((tuple(r.shape), ct_types.builtin_to_string(r.dtype)))
    return out


def our_types(case: Case) -> list[tuple[tuple[int, ...], str]]:
    values = [
        const(i.shape, i.element_type) if i.is_const else value(i.shape, i.element_type)
        for i in case.inputs
    ]
    op = case.ours(*values)
    op.verify()
    out = []
    for t in result_types(op):
        assert isinstance(t, TensorType)
        out.append((tuple(t.get_shape()), mil.mil_dtype_name(t.element_type)))
    return out
