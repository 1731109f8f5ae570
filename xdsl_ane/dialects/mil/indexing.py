"""MIL's index-driven ops: `gather`, `one_hot` and `band_part`.

Type rules from coremltools iOS17 scatter_gather.gather and iOS15
tensor_operation.one_hot / band_part.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    BoolAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    i1,
    i8,
    i32,
)
from xdsl.ir import Attribute
from xdsl.irdl import (
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from xdsl_ane.ane.rules import FALLBACK, GATHER, OpRule, Severity
from xdsl_ane.dialects.mil.base import (
    FLOAT,
    FLOAT_INT32_BOOL,
    FUNCTIONAL,
    INT16,
    MilOp,
    Value,
    mil_op_definition,
    operand_axis,
    require_element_type,
)
from xdsl_ane.dialects.mil.inputs import INT32, MilInput, dtype_of_first_given
from xdsl_ane.dialects.typing import (
    I64Attr,
    OpTypeError,
    bool_attr,
    element_name,
    fmt_shape,
    i64_attr,
    int_prop,
    is_float,
    tensor,
)


@mil_op_definition
class GatherOp(MilOp):
    """Slices of x along `axis` picked by `indices` (numpy.take), with the
    first `batch_dims` axes of x and indices paired up as batch axes:
    result shape x[:axis] + indices[batch_dims:] + x[axis+1:]. Indices must
    lie in [0, x.shape[axis]) (iOS17)."""

    name = "mil.gather"
    x = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = opt_prop_def(I64Attr)
    batch_dims = opt_prop_def(I64Attr)
    validate_indices = opt_prop_def(BoolAttr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("indices"),
        MilInput("axis", 0),
        MilInput("batch_dims", 0),
        MilInput("validate_indices", False),
    )

    FLOPS_PER_ELEMENT: ClassVar = 0
    ANE_RULES: ClassVar = (GATHER,)

    def __init__(
        self,
        x: Value,
        indices: Value,
        axis: int | None = None,
        batch_dims: int | None = None,
        validate_indices: bool | None = None,
    ):
        self.init_mil(
            {"x": x, "indices": indices},
            {
                "axis": i64_attr(axis),
                "batch_dims": i64_attr(batch_dims),
                "validate_indices": bool_attr(validate_indices),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = cls.tensor_operands(operand_types, properties)
        x, indices = ops["x"], ops["indices"]
        assert x is not None and indices is not None
        require_element_type(cls.name, "x", x, (*FLOAT, i32, i8))
        require_element_type(cls.name, "indices", indices, (i32, *INT16, i8))
        xs, ns = x.get_shape(), indices.get_shape()
        axis = operand_axis(
            cls.name,
            "axis",
            int_prop(properties, "axis", cls.input_default("axis")),
            ("x", xs),
        )
        batch_dims = int_prop(properties, "batch_dims", cls.input_default("batch_dims"))
        if not 0 <= batch_dims <= min(axis, len(ns)):
            raise OpTypeError(
                cls.name,
                f"batch_dims {batch_dims} must lie in [0, {min(axis, len(ns))}]: at "
                f"most axis {axis} and the rank of operand 'indices' {fmt_shape(ns)}",
            )
        if xs[:batch_dims] != ns[:batch_dims]:
            raise OpTypeError(
                cls.name,
                f"the first {batch_dims} (batch) dimensions of operand 'x' "
                f"{fmt_shape(xs)} and operand 'indices' {fmt_shape(ns)} differ",
            )
        out = [*xs[:axis], *ns[batch_dims:], *xs[axis + 1 :]]
        return [tensor(out, x.element_type)]


ONE_HOT_TYPES = (*FLOAT, i32, i1)


def scalar_attr(value: float | int | bool, element_type: Attribute) -> Attribute:
    """A scalar property of the given element type (one_hot's on/off values)."""
    if is_float(element_type):
        return FloatAttr(float(value), element_type)
    assert isinstance(element_type, IntegerType)
    return IntegerAttr(int(value), element_type)


@mil_op_definition
class OneHotOp(MilOp):
    """A new axis of size `one_hot_vector_size` at `axis` (default -1, the
    last) holding `on_value` where the position equals the index and
    `off_value` elsewhere (out-of-range indices give an all-off vector).

    The result dtype is the type of `on_value` / `off_value` (typed scalar
    attributes of f16, f32, i32 or i1, equal when both are given). An absent
    one takes MIL's default, 1 resp. 0, of the other's type, or int32 as in
    MIL when both are absent."""

    name = "mil.one_hot"
    indices = operand_def(TensorType)
    one_hot_vector_size = prop_def(I64Attr)
    axis = opt_prop_def(I64Attr)
    on_value = opt_prop_def(FloatAttr | IntegerAttr)
    off_value = opt_prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    MIL_INPUTS: ClassVar = (
        MilInput("indices"),
        MilInput("one_hot_vector_size"),
        MilInput("axis", -1),
        # MIL's int32 default would clash with a float value given for the
        # other: an absent one takes the other's type (int32 when both are
        # absent, as in MIL).
        MilInput(
            "on_value",
            1,
            dtype_of_first_given("on_value", "off_value", otherwise=INT32),
        ),
        MilInput(
            "off_value",
            0,
            dtype_of_first_given("off_value", "on_value", otherwise=INT32),
        ),
    )

    def __init__(
        self,
        indices: Value,
        one_hot_vector_size: int,
        axis: int | None = None,
        *,
        element_type: Attribute | None = None,
        on_value: float | int | bool = 1,
        off_value: float | int | bool = 0,
    ):
        """Without `element_type`, on/off values are left at MIL's int32 default."""
        typed = element_type is not None
        self.init_mil(
            {"indices": indices},
            {
                "one_hot_vector_size": i64_attr(one_hot_vector_size),
                "axis": i64_attr(axis),
                "on_value": scalar_attr(on_value, element_type) if typed else None,
                "off_value": scalar_attr(off_value, element_type) if typed else None,
            },
        )

    @classmethod
    def value_type(cls, properties) -> Attribute:
        """The result element type (see the class docstring)."""
        on, off = properties.get("on_value"), properties.get("off_value")
        for prop, attr in (("on_value", on), ("off_value", off)):
            if attr is not None:
                assert isinstance(attr, FloatAttr | IntegerAttr)
                if attr.type not in ONE_HOT_TYPES:
                    raise OpTypeError(
                        cls.name,
                        f"property '{prop}' has type {attr.type}, expected one of "
                        f"{', '.join(element_name(t) for t in ONE_HOT_TYPES)}",
                    )
        if on is not None and off is not None:
            assert isinstance(on, FloatAttr | IntegerAttr)
            assert isinstance(off, FloatAttr | IntegerAttr)
            if on.type != off.type:
                raise OpTypeError(
                    cls.name,
                    f"properties 'on_value' ({on.type}) and 'off_value' ({off.type}) "
                    "must have the same type",
                )
        given = on if on is not None else off
        if given is None:
            return i32
        assert isinstance(given, FloatAttr | IntegerAttr)
        return given.type

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        indices = cls.tensor_operands(operand_types, properties)["indices"]
        assert indices is not None
        require_element_type(cls.name, "indices", indices, (i32,))
        shape = indices.get_shape()
        size = int_prop(properties, "one_hot_vector_size")
        if size < 0:
            raise OpTypeError(cls.name, f"one_hot_vector_size {size} must be >= 0")
        axis = operand_axis(
            cls.name,
            "axis",
            int_prop(properties, "axis", cls.input_default("axis")),
            ("indices", shape),
            len(shape) + 1,
        )
        out = [*shape[:axis], size, *shape[axis:]]
        return [tensor(out, cls.value_type(properties))]


@mil_op_definition
class BandPartOp(MilOp):
    """Keeps the band of the innermost matrices of x and zeroes the rest:
    element (m, n) survives iff (lower < 0 or m - n <= lower) and
    (upper < 0 or n - m <= upper); lower and upper default to -1."""

    name = "mil.band_part"
    x = operand_def(TensorType)
    lower = opt_prop_def(I64Attr)
    upper = opt_prop_def(I64Attr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("lower", -1),
        MilInput("upper", -1),
    )

    ANE_RULES: ClassVar = (
        OpRule(
            Severity.WARNING,
            f"band_part {FALLBACK}",
            "add a constant 0/-1e4 mask instead",
        ),
    )

    def __init__(self, x: Value, lower: int | None = None, upper: int | None = None):
        self.init_mil({"x": x}, {"lower": i64_attr(lower), "upper": i64_attr(upper)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, FLOAT_INT32_BOOL)
        if len(x.get_shape()) < 2:
            raise OpTypeError(
                cls.name,
                f"operand 'x' must have rank >= 2, got shape {fmt_shape(x.get_shape())}",
            )
        return [x]


OPS = (
    GatherOp,
    OneHotOp,
    BandPartOp,
)
"""The ops of this family, as the mil dialect lists them."""
