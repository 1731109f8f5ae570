"""The MIL inputs of each mil op, as coremltools 9.0 writes them.

A mil op carries MIL's tensor inputs as operands and its compile-time
parameters as properties, both under MIL's names, and leaves an optional
input absent to mean MIL's default. coremltools' builder writes every
optional input that has a default explicitly (`Builder._add_op` fills in
`default_inputs()`), each compile-time value as a const op just before the op.
`mil_inputs(op)` lists the same inputs in the op's `input_spec` order, as
the op class declares them (`MIL_INPUTS`, see `xdsl_ane.dialects.mil.inputs`):
an SSA value (a list for `concat`'s values) or a compile-time value, a numpy
array of its MIL dtype (0-d for a scalar) or a `str`.

Dtypes follow coremltools' typing of each input: integer properties and
lists are int32 (scalar or vector; pixel_unshuffle's downscale_factor
uint32, as its `MilInput` declares), flags bool, choices strings; a float
property has the dtype its `MilInput` declares (x's for log's epsilon and
clip's bounds, gamma's for layer_norm's epsilon), else its own; one_hot's
typed on/off values keep their own type, and an absent one takes the
other's.

Inputs absent with no default (conv's bias, squeeze's and the reductions'
axes, split's num_splits or split_sizes, quantize's zero_point and axis) are
not written, as in coremltools.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    i1,
)
from xdsl.ir import Attribute, SSAValue

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.mil.inputs import INT32, ParamValue, attribute_dtype
from xdsl_ane.errors import XdslAneError

InputValue = SSAValue | list[SSAValue] | ParamValue
"""A written input: an SSA value, a list of them (a variadic input) or a
compile-time value."""


def mil_type(op: mil.MilOp) -> str:
    """MIL's op type: the op name without `mil.`."""
    return op.name.removeprefix("mil.")


def mil_inputs(op: mil.MilOp) -> list[tuple[str, InputValue]]:
    """The op's MIL inputs in order: SSA values for operands, compile-time
    values for properties and for absent inputs that have a default."""
    declared = getattr(type(op), "MIL_INPUTS", None)
    if declared is None:
        raise XdslAneError(f"{op.name}: no MIL inputs (not a printable MIL op)")
    definition = op.get_irdl_definition()
    operand_names = {name for name, _ in definition.operands}
    known = operand_names | {d.name for d in declared} | {"operandSegmentSizes"}
    unknown = [name for name in op.properties if name not in known]
    if unknown:
        raise XdslAneError(f"{op.name}: property '{unknown[0]}' is not a MIL input")
    inputs: list[tuple[str, InputValue]] = []
    for spec in declared:
        name = spec.name
        value: InputValue | None = None
        if name in operand_names:
            operand = getattr(op, name)
            if isinstance(operand, SSAValue):
                value = operand
            elif operand is not None and len(operand):
                value = list(operand)
        elif name in op.properties:
            value = property_value(op, name, op.properties[name])
        if value is None:
            value = spec.default_value(op)
        if value is not None:
            inputs.append((name, value))
    return inputs


def property_value(op: mil.MilOp, name: str, attr: Attribute) -> ParamValue:
    """A property as the MIL value coremltools would write for it."""
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DenseArrayBase):
        return _int32(op, name, [int(v) for v in attr.get_values()])
    if isinstance(attr, IntegerAttr):
        if attr.type == i1:
            return np.array(bool(attr.value.data))
        dtype = type(op).mil_input(name).value_dtype(op)
        return _int32(op, name, attr.value.data, dtype or INT32)
    if isinstance(attr, FloatAttr):
        dtype = type(op).mil_input(name).value_dtype(op)
        return np.array(
            attr.value.data, attribute_dtype(attr) if dtype is None else dtype
        )
    raise XdslAneError(f"{op.name}: property '{name}' ({attr}) has no MIL value")


def _int32(
    op: mil.MilOp, name: str, value: int | Sequence[int], dtype: np.dtype = INT32
) -> np.ndarray:
    """An integer property as MIL's int32 (or the input's declared integer
    dtype: pixel_unshuffle's uint32 downscale_factor)."""
    array = np.array(value, dtype=np.int64)
    info = np.iinfo(dtype)
    if array.size and (array.min() < info.min or array.max() > info.max):
        raise XdslAneError(f"{op.name}: property '{name}' does not fit in {dtype}")
    return array.astype(dtype)
