"""Shared pieces of the rlx dialect: the op base class and operand checks."""

from __future__ import annotations

from abc import ABC
from typing import TypeVar

from xdsl.dialects.builtin import (
    TensorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    OpDef,
    ParsePropInAttrDict,
    irdl_op_definition,
    traits_def,
)
from xdsl.irdl.declarative_assembly_format import FormatProgram, ParsingState
from xdsl.parser import Parser
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from xdsl_ane.dialects.typing import (
    InferredTypeOp,
    KnownAttributesOnly,
    OpTypeError,
    check_property_types,
    checks_property_types,
    fmt_shape,
)

Value = SSAValue | Operation

FUNCTIONAL = "operands attr-dict `:` functional-type(operands, results)"
"""The short syntax of most rlx ops: `rlx.op %a, %b {props} : (A, B) -> R`."""


class RlxOp(InferredTypeOp, ABC):
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure(), KnownAttributesOnly())


RlxOpClass = TypeVar("RlxOpClass", bound=type[RlxOp])


class PropertyNamingFormat(FormatProgram):
    """An op's assembly format that checks the parsed properties by name
    before IRDL checks them without one (the short syntax checks required
    properties while parsing, before the op's verifier)."""

    def resolve_constraint_variables(self, state: ParsingState, op_def: OpDef):
        check_property_types(op_def, state.properties)
        super().resolve_constraint_variables(state, op_def)


def rlx_op_definition(cls: RlxOpClass) -> RlxOpClass:
    """`irdl_op_definition` for an rlx op: a property of the wrong kind
    (`keep_dims = 1.0 : f32`, `perm = array<f32: ...>`) is an error naming
    the op and the property, in either syntax (IRDL's own message names
    neither)."""
    cls = checks_property_types(irdl_op_definition(cls))
    op_def = cls.get_irdl_definition()
    if op_def.assembly_format is not None:
        stmts = FormatProgram.from_str(op_def.assembly_format, op_def).stmts
        program = PropertyNamingFormat(stmts)

        def parse(op_type: type[RlxOp], parser: Parser) -> RlxOp:
            start = parser.pos
            try:
                return program.parse(parser, op_type)
            except VerifyException as e:
                # a parse error, so that it points at the op in the text
                parser.raise_error(str(e), start, parser.pos)

        cls.parse = classmethod(parse)  # type: ignore[method-assign]
    return cls


def check_norm_param(
    op_name: str,
    operand: str,
    param: TensorType,
    input: TensorType,
    axis: int,
    kind: str = "operand",
) -> None:
    """A norm parameter of an input normalized over `axis`: [D] when that is
    the last axis (`check_last_axis_param`); for another axis, of the
    input's rank with D on `axis` and each other dimension 1 or the input's
    (a γ [1, H, D, 1] per head of [1, H, D, S])."""
    shape, p = input.get_shape(), param.get_shape()
    if axis == len(shape) - 1:
        check_last_axis_param(op_name, operand, param, input)
        return
    fits = len(p) == len(shape) and all(
        n == d if i == axis else n in (1, d) for i, (n, d) in enumerate(zip(p, shape))
    )
    if not fits:
        raise OpTypeError(
            op_name,
            f"{kind} '{operand}' {fmt_shape(p)} must have rank {len(shape)}, "
            f"{shape[axis]} on axis {axis} and 1 or the input's size elsewhere, "
            f"for operand 'input' {fmt_shape(shape)}",
        )


def check_last_axis_param(
    op_name: str, operand: str, param: TensorType, input: TensorType
) -> None:
    """A norm parameter (gamma, beta) is [D] for an input [..., D]."""
    shape = input.get_shape()
    if len(shape) == 0 or param.get_shape() != (shape[-1],):
        raise OpTypeError(
            op_name,
            f"operand '{operand}' {fmt_shape(param.get_shape())} must be "
            f"[{shape[-1] if shape else '?'}] for operand 'input' {fmt_shape(shape)}",
        )


def check_same_shape(
    op_name: str, name: str, t: TensorType, other_name: str, other: TensorType
) -> None:
    if t.get_shape() != other.get_shape():
        raise OpTypeError(
            op_name,
            f"operand '{name}' {fmt_shape(t.get_shape())} must have the shape of "
            f"operand '{other_name}' {fmt_shape(other.get_shape())}",
        )
