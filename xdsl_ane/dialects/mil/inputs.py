"""What MIL says of the inputs of an op: their names in coremltools' order,
the value written for an absent one, and the dtype of a float parameter.

Each mil op class declares its inputs as `MIL_INPUTS`, a tuple of
`MilInput`s in the order of coremltools 9.0's `input_spec`, operands and
properties alike under MIL's names. An input that coremltools' builder fills
in when it is absent (`Builder._add_op` writes `default_inputs()`) carries
that default: a constant, or a rule computing it from the op. The printers
(`xdsl_ane.backend.mil_inputs`) write an op's inputs from this declaration;
the interpreter and the passes read an absent parameter's value from it
(`MilOp.input_default`), and the MIL text importer the kind of value each
property holds (`property_kind`).

Dtypes follow coremltools' typing of each input: integer parameters and
lists are int32 unless their `MilInput.dtype` says otherwise
(pixel_unshuffle's downscale_factor is uint32), flags bool, choices strings;
a float parameter is fp32 unless its `MilInput.dtype` says otherwise (log's
epsilon takes x's dtype, layer_norm's gamma's, one_hot's absent on_value
off_value's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_to_attr_constraint

from xdsl_ane.dialects.dense import numpy_dtype_of
from xdsl_ane.dialects.typing import (
    F32Attr,
    I64Array,
    I64Attr,
    element_type_of,
    shape_of,
)

ParamValue = np.ndarray | str
"""A compile-time MIL value: a numpy array of its MIL dtype (0-d for a
scalar), or a string."""

Scalar = bool | int | float | str
"""A constant default: bool, int (int32), float (in the input's dtype) or
string."""

DtypeRule = Callable[[Operation], np.dtype]
"""The dtype of an input's value, computed from the op."""

DefaultRule = Callable[[Operation], ParamValue | None]
"""The value written for an absent input, computed from the op (None: not
written)."""

INT32 = np.dtype(np.int32)
UINT32 = np.dtype(np.uint32)
FP32 = np.dtype(np.float32)
BOOL = np.dtype(np.bool_)


@dataclass(frozen=True)
class MilInput:
    """One input of a MIL op: its name, the default coremltools writes when
    it is absent, and, for a float parameter or an integer one that is not
    int32, the dtype of its value."""

    name: str
    default: Scalar | DefaultRule | None = None
    """A constant, a rule computing the value from the op, or None: the
    input is required, or an absent one is not written (coremltools has no
    default for it)."""
    dtype: np.dtype | DtypeRule | None = None
    """The MIL dtype of the input's value where it is not the value's own:
    of a float parameter, given or default, that is not fp32 (the f32
    property's type), of an integer parameter that is not int32 (the i64
    property's MIL type; uint32 for pixel_unshuffle's downscale_factor),
    and of a constant default of another type than the constant's
    (one_hot's on/off value, typed like the other)."""

    def value_dtype(self, op: Operation) -> np.dtype | None:
        """The declared dtype of the input's value in `op`, if any."""
        if self.dtype is None or isinstance(self.dtype, np.dtype):
            return self.dtype
        return self.dtype(op)

    def default_value(self, op: Operation) -> ParamValue | None:
        """The value written for the input when `op` lacks it (None: not
        written)."""
        default = self.default
        if default is None or isinstance(default, str):
            return default
        if callable(default):
            return default(op)
        dtype = self.value_dtype(op)
        return np.array(default, scalar_dtype(default) if dtype is None else dtype)


def scalar_dtype(value: bool | int | float) -> np.dtype:
    """MIL's dtype of a Python constant, as coremltools types a const:
    bool, int32 or fp32."""
    if isinstance(value, bool):
        return BOOL
    return INT32 if isinstance(value, int) else FP32


# --- what default rules read ---------------------------------------------------


def element_dtype(value: SSAValue) -> np.dtype:
    """The numpy dtype of a tensor value's elements."""
    return numpy_dtype_of(element_type_of(value))


def attribute_dtype(attr: Attribute) -> np.dtype:
    """The MIL dtype of a typed scalar attribute: its own element type, with
    the 64-bit integers of generic properties narrowed to int32."""
    assert isinstance(attr, IntegerAttr | FloatAttr)
    try:
        return numpy_dtype_of(attr.type)
    except ValueError:
        return INT32


def dtype_of_first_given(*names: str, otherwise: np.dtype = FP32) -> DtypeRule:
    """The dtype of the first of the named inputs the op has (an operand's
    element type, a typed property's own type), else `otherwise`."""

    def rule(op: Operation) -> np.dtype:
        for name in names:
            given = getattr(op, name)
            if isinstance(given, SSAValue):
                return element_dtype(given)
            if given is not None:
                return attribute_dtype(given)
        return otherwise

    return rule


LIKE_X = dtype_of_first_given("x")
"""x's dtype: log's, rsqrt's and inverse's epsilon, clip's alpha and beta."""


@dataclass(frozen=True)
class PerSpatialAxis:
    """A default rule: `value` for each spatial axis of x, the first operand
    (`per_axis` entries each), as an int32 vector: conv's strides, pad and
    dilations. A type rule, which knows x's rank but has no op, reads it
    through `for_spatial_axes`."""

    value: int
    per_axis: int = 1

    def for_spatial_axes(self, spatial: int) -> tuple[int, ...]:
        """The default for `spatial` spatial axes."""
        return (self.value,) * (self.per_axis * spatial)

    def __call__(self, op: Operation) -> ParamValue:
        spatial = len(shape_of(op.operands[0])) - 2
        return np.array(self.for_spatial_axes(spatial), INT32)


def all_axes(op: Operation) -> ParamValue:
    """Every axis of x, the first operand, as an int32 vector (layer_norm's
    axes)."""
    return np.arange(len(shape_of(op.operands[0])), dtype=INT32)


# --- property kinds --------------------------------------------------------------

PROPERTY_KINDS: tuple[tuple[object, str], ...] = (
    (I64Array, "ints"),
    (I64Attr, "int"),
    (BoolAttr, "bool"),
    (F32Attr, "float"),
    (StringAttr, "string"),
    (FloatAttr | IntegerAttr, "scalar"),
)
"""The MIL value each declared kind of property holds: an int32 vector, an
int32 scalar, a bool, an fp16 or fp32 scalar (held as f32), a string, or a
typed scalar that keeps its own type (one_hot's on_value)."""


@cache
def property_kind(op_type: type[IRDLOperation], name: str) -> str | None:
    """What MIL value a property of `op_type` holds ("ints", "int", "bool",
    "float", "string" or "scalar", see PROPERTY_KINDS), read from its
    declared constraint; None for a property that is no MIL value."""
    constraint = op_type.get_irdl_definition().properties[name].constr
    for declared, kind in PROPERTY_KINDS:
        if constraint == irdl_to_attr_constraint(declared):
            return kind
    return None
