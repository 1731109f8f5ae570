"""rlx state and update ops (DESIGN.md, "State, update and argmax ops";
rlx.argmax is a reduction, in reduction.py).

`!rlx.state<T>` is a tensor T held across calls (a function argument
only). `rlx.read_state` gives its current value and `rlx.write_state`
stores a new one; the two carry memory effects (read, write), so CSE
merges reads only where no write lies between and nothing drops a write.
`rlx.slice_update` writes `update` into `input` at a runtime `begin`
(the KV cache write at the current position).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType, i32
from xdsl.irdl import (
    irdl_attr_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect

from xdsl_ane.dialects.rlx.base import FUNCTIONAL, RlxOp, Value, rlx_op_definition
from xdsl_ane.dialects.state_type import StateTypeBase, wrapped_type
from xdsl_ane.dialects.typing import (
    InferredTypeOp,
    KnownAttributesOnly,
    OpTypeError,
    element_name,
    fmt_shape,
    fmt_type,
    tensor_of,
)


@irdl_attr_definition
class StateType(StateTypeBase):
    """`!rlx.state<tensor<...>>`: a tensor held across calls."""

    name = "rlx.state"
    wrapped: TensorType


@rlx_op_definition
class ReadStateOp(InferredTypeOp):
    """The current value of a state."""

    name = "rlx.read_state"
    state = operand_def(StateType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    traits = traits_def(MemoryReadEffect(), KnownAttributesOnly())

    def __init__(self, state: Value):
        self.init_inferred([state])

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        return [wrapped_type(cls.name, "state", operand_types[0], StateType)]


@rlx_op_definition
class WriteStateOp(InferredTypeOp):
    """Stores `value` into the state; later reads (in this call and the
    next ones) see it."""

    name = "rlx.write_state"
    state = operand_def(StateType)
    value = operand_def(TensorType)
    assembly_format = "$state `,` $value attr-dict `:` type($state) `,` type($value)"
    traits = traits_def(MemoryWriteEffect(), KnownAttributesOnly())

    def __init__(self, state: Value, value: Value):
        self.init_inferred([state, value])

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
        return []


@rlx_op_definition
class SliceUpdateOp(RlxOp):
    """`input` with `update` written at `begin`: out = input;
    out[b0:b0+u0, b1:b1+u1, ...] = update. `begin` is an i32 [rank] tensor
    computed at run time; the slice must lie inside `input` (the
    interpreter checks it)."""

    name = "rlx.slice_update"
    input = operand_def(TensorType)
    update = operand_def(TensorType)
    begin = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, update: Value, begin: Value):
        self.init_inferred([input, update, begin])

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = tensor_of(cls.name, "input", operand_types[0])
        update = tensor_of(cls.name, "update", operand_types[1])
        begin = tensor_of(cls.name, "begin", operand_types[2])
        check_slice_update(cls.name, ("input", x), ("update", update), begin)
        return [x]


def check_slice_update(
    op_name: str,
    input: tuple[str, TensorType],
    update: tuple[str, TensorType],
    begin: TensorType,
    begin_name: str = "begin",
) -> None:
    """update has input's element type and rank, no dimension larger than
    input's, and begin is i32 [rank]."""
    (x_name, x), (u_name, u) = input, update
    xs, us = x.get_shape(), u.get_shape()
    if u.element_type != x.element_type:
        raise OpTypeError(
            op_name,
            f"operand '{u_name}' ({element_name(u.element_type)}) must have the "
            f"element type of operand '{x_name}' ({element_name(x.element_type)})",
        )
    if len(us) != len(xs) or not xs or any(a > b for a, b in zip(us, xs)):
        raise OpTypeError(
            op_name,
            f"operand '{u_name}' {fmt_shape(us)} must have the rank of operand "
            f"'{x_name}' {fmt_shape(xs)} and fit inside it",
        )
    if begin.element_type != i32 or begin.get_shape() != (len(xs),):
        raise OpTypeError(
            op_name,
            f"operand '{begin_name}' must be i32 [{len(xs)}], got {fmt_type(begin)}",
        )


OPS = (
    ReadStateOp,
    WriteStateOp,
    SliceUpdateOp,
)
"""The ops of this family, as the rlx dialect lists them."""
