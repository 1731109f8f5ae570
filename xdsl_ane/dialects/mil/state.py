"""MIL's state ops (iOS18) and the ops a stateful model needs with them:
`read_state`, `coreml_update_state`, `slice_update`, `reduce_argmax`.

Type rules from coremltools iOS18 states.py (read_state,
coreml_update_state), iOS18 tensor_transformation.slice_update and iOS15
reduction.reduce_argmax. `!mil.state<T>` wraps a tensor T that persists
across predictions; Core ML only supports fp16 states (the protobuf
printer checks this, so an fp32 program can still be interpreted).

MIL's protobuf has no `coreml_update_state`: coremltools writes it as
`write_state(input, data)` followed, when the result is used, by
`read_state(input)` under the op's name, and its loader merges the pair
back. The state ops carry memory effects (read / write) instead of being
pure, so CSE and dead-code elimination keep their order and never drop a
store.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import BoolAttr, StringAttr, TensorType, i1, i8, i32
from xdsl.irdl import (
    irdl_attr_definition,
    operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect

from xdsl_ane.ane.cost import input_elements
from xdsl_ane.ane.rules import ARGMAX
from xdsl_ane.dialects.mil.base import (
    FLOAT,
    FLOAT_INT32,
    FUNCTIONAL,
    MilOp,
    Value,
    mil_op_definition,
    operand_axis,
    require_element_type,
)
from xdsl_ane.dialects.mil.inputs import MilInput
from xdsl_ane.dialects.state_type import StateTypeBase, wrapped_type
from xdsl_ane.dialects.typing import (
    I64Attr,
    KnownAttributesOnly,
    OpTypeError,
    bool_attr,
    bool_prop,
    choice,
    fmt_shape,
    fmt_type,
    i64_attr,
    int_prop,
    reduced_shape,
    str_prop,
    tensor,
    tensor_of,
)

SLICE_UPDATE_TYPES = (*FLOAT, i32, i8, i1)


@irdl_attr_definition
class StateType(StateTypeBase):
    """`!mil.state<tensor<...>>`: MIL's `state<tensor<...>>`."""

    name = "mil.state"
    wrapped: TensorType


@mil_op_definition
class ReadStateOp(MilOp):
    """A copy of the state's current value."""

    name = "mil.read_state"
    input = operand_def(StateType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    traits = traits_def(MemoryReadEffect(), KnownAttributesOnly())
    MIL_INPUTS: ClassVar = (MilInput("input"),)
    OPSET: ClassVar = "iOS18"

    FLOPS_PER_ELEMENT: ClassVar = 0

    def __init__(self, input: Value):
        self.init_mil({"input": input})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        return [wrapped_type(cls.name, "input", operand_types[0], StateType)]


@mil_op_definition
class CoremlUpdateStateOp(MilOp):
    """Stores `value` in `state` and returns it (MIL's write then read)."""

    name = "mil.coreml_update_state"
    state = operand_def(StateType)
    value = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    traits = traits_def(MemoryWriteEffect(), KnownAttributesOnly())
    MIL_INPUTS: ClassVar = (MilInput("state"), MilInput("value"))
    OPSET: ClassVar = "iOS18"

    FLOPS_PER_ELEMENT: ClassVar = 0

    def __init__(self, state: Value, value: Value):
        self.init_mil({"state": state, "value": value})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        held = wrapped_type(cls.name, "state", operand_types[0], StateType)
        value = tensor_of(cls.name, "value", operand_types[1])
        if value != held:
            raise OpTypeError(
                cls.name,
                f"operand 'value' {fmt_type(value)} must have the type the state "
                f"holds, {fmt_type(held)}",
            )
        return [value]


@mil_op_definition
class SliceUpdateOp(MilOp):
    """x with x[begin[0]:end[0], begin[1]:end[1], ...] = update; begin and
    end are int32 [rank] and may be computed at run time. Without strides
    or masks (MIL's defaults), end − begin must equal update's shape, which
    is checked here when both are inline consts and by the interpreter
    otherwise; update is never rank 0."""

    name = "mil.slice_update"
    x = operand_def(TensorType)
    update = operand_def(TensorType)
    begin = operand_def(TensorType)
    end = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("update"),
        MilInput("begin"),
        MilInput("end"),
        MilInput("stride"),
        MilInput("begin_mask"),
        MilInput("end_mask"),
        MilInput("squeeze_mask"),
    )
    OPSET: ClassVar = "iOS18"

    FLOPS_PER_ELEMENT: ClassVar = 0
    ANE_INDEX_OPERANDS: ClassVar = True

    def __init__(self, x: Value, update: Value, begin: Value, end: Value):
        self.init_mil({"x": x, "update": update, "begin": begin, "end": end})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = cls.tensor_operands(operand_types, properties)
        x, update, begin, end = ops["x"], ops["update"], ops["begin"], ops["end"]
        assert x is not None and update is not None
        assert begin is not None and end is not None
        require_element_type(cls.name, "x", x, SLICE_UPDATE_TYPES)
        require_element_type(cls.name, "update", update, SLICE_UPDATE_TYPES)
        xs, us = x.get_shape(), update.get_shape()
        if update.element_type != x.element_type:
            raise OpTypeError(
                cls.name, "operands 'x' and 'update' must have the same element type"
            )
        if not us or len(us) != len(xs) or any(a > b for a, b in zip(us, xs)):
            raise OpTypeError(
                cls.name,
                f"operand 'update' {fmt_shape(us)} must have the rank of operand "
                f"'x' {fmt_shape(xs)} (not 0) and fit inside it",
            )
        for name, t in (("begin", begin), ("end", end)):
            require_element_type(cls.name, name, t, (i32,))
            if t.get_shape() != (len(xs),):
                raise OpTypeError(
                    cls.name,
                    f"operand '{name}' {fmt_shape(t.get_shape())} must be "
                    f"[{len(xs)}] (one entry per axis of operand 'x')",
                )
        return [x]

    def verify_(self) -> None:
        super().verify_()
        from xdsl_ane.dialects.dense import dense_to_numpy
        from xdsl_ane.dialects.mil.const import ConstOp

        begin, end = self.begin.owner, self.end.owner
        if (
            isinstance(begin, ConstOp)
            and isinstance(end, ConstOp)
            and begin.val is not None
            and end.val is not None
        ):
            size = tuple(
                int(e - b)
                for b, e in zip(dense_to_numpy(begin.val), dense_to_numpy(end.val))
            )
            us = tensor_of(self.name, "update", self.update.type).get_shape()
            if size != us:
                raise OpTypeError(
                    self.name,
                    f"end − begin {fmt_shape(size)} must equal the shape of operand "
                    f"'update' {fmt_shape(us)}",
                )


@mil_op_definition
class ReduceArgmaxOp(MilOp):
    """The int32 index of the largest value of x along `axis` (default −1;
    the first one on ties), the axis kept as size 1 when `keep_dims`
    (default false). `output_dtype` (iOS17) is "int32", the default (MIL's
    "uint16" is not supported)."""

    name = "mil.reduce_argmax"
    x = operand_def(TensorType)
    axis = opt_prop_def(I64Attr)
    keep_dims = opt_prop_def(BoolAttr)
    output_dtype = opt_prop_def(StringAttr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("axis", -1),
        MilInput("keep_dims", False),
        MilInput("output_dtype", "int32"),
    )

    ANE_RULES: ClassVar = (ARGMAX,)
    ANE_INDEX_RESULT: ClassVar = True

    def flops(self) -> int:
        return input_elements(self)

    def __init__(
        self, x: Value, axis: int | None = None, keep_dims: bool | None = None
    ):
        self.init_mil(
            {"x": x}, {"axis": i64_attr(axis), "keep_dims": bool_attr(keep_dims)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, FLOAT_INT32)
        shape = x.get_shape()
        if not shape:
            raise OpTypeError(cls.name, "operand 'x' must have rank ≥ 1")
        axis = operand_axis(
            cls.name,
            "axis",
            int_prop(properties, "axis", cls.input_default("axis")),
            ("x", shape),
        )
        keep = bool_prop(properties, "keep_dims")
        choice(
            cls.name,
            "output_dtype",
            str_prop(properties, "output_dtype", cls.input_default("output_dtype")),
            ("int32",),
        )
        return [tensor(reduced_shape(shape, (axis,), keep), i32)]


OPS = (
    ReadStateOp,
    CoremlUpdateStateOp,
    SliceUpdateOp,
    ReduceArgmaxOp,
)
"""The ops of this family, as the mil dialect lists them."""
