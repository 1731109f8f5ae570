"""rlx normalizations over the channels of spatial tensors `[N, C, W]` or
`[N, C, H, W]`: batch_norm (inference statistics) and group_norm (instance
norm is groups = C). Their affine parameters gamma and beta are optional
`[C]` operands, written `gamma %g` and `beta %b` in the short syntax
(that of mil's ops with optional operands)."""

from __future__ import annotations

from abc import ABC

from xdsl.dialects.builtin import DenseArrayBase, TensorType, i32
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from xdsl_ane.dialects.mil.base import TaggedOptionalOperandsOp
from xdsl_ane.dialects.rlx.base import RlxOp, Value, rlx_op_definition
from xdsl_ane.dialects.typing import (
    F32Attr,
    I64Attr,
    OpTypeError,
    f32_attr,
    fmt_shape,
    i64_attr,
    int_prop,
    require_float,
    require_same_element_type,
    tensor_of,
)

EPSILON = 1e-5
"""The default `epsilon` of both ops (torch's)."""


def _optional(value: Value | None) -> list[Value]:
    return [] if value is None else [value]


class ChannelNormOp(RlxOp, ABC):
    """A normalization of `[N, C, (H,) W]` with per-channel `[C]` operands
    (the required ones first, then gamma and beta when present). Each op
    declares its operands itself, `input` first (IRDL orders a base class's
    fields after the subclass's)."""

    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))
    result = result_def(TensorType)
    epsilon = opt_prop_def(F32Attr)

    @classmethod
    def channel_operands(cls, properties) -> list[str]:
        """The names of the `[C]` operands present, in operand order."""
        segments = properties.get("operandSegmentSizes")
        defs = cls.get_irdl_definition().operands
        if segments is None:
            raise OpTypeError(cls.name, "property 'operandSegmentSizes' is missing")
        sizes = [int(v) for v in segments.get_values()]
        return [name for (name, _), n in zip(defs[1:], sizes[1:]) for _ in range(n)]

    @classmethod
    def check_channels(cls, operand_types, properties) -> TensorType:
        t = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", t)
        shape = t.get_shape()
        if len(shape) not in (3, 4):
            raise OpTypeError(
                cls.name,
                f"operand 'input' must be [N, C, W] or [N, C, H, W], got "
                f"{fmt_shape(shape)}",
            )
        named = [("input", t)]
        for name, pt in zip(cls.channel_operands(properties), operand_types[1:]):
            p = tensor_of(cls.name, name, pt)
            if p.get_shape() != (shape[1],):
                raise OpTypeError(
                    cls.name,
                    f"operand '{name}' {fmt_shape(p.get_shape())} must be "
                    f"[{shape[1]}] (C of operand 'input' {fmt_shape(shape)})",
                )
            named.append((name, p))
        require_same_element_type(cls.name, named)
        return t

    # The short syntax of ops with optional operands, as mil's:
    # `rlx.batch_norm %x, %mean, %var, beta %b {epsilon = ...} : (...) -> ...`.
    parse = TaggedOptionalOperandsOp.__dict__["parse"]
    print = TaggedOptionalOperandsOp.print

    def eps(self) -> float:
        return EPSILON if self.epsilon is None else self.epsilon.value.data


@rlx_op_definition
class BatchNormOp(ChannelNormOp):
    """y = (x − mean) / sqrt(var + epsilon) · gamma + beta per channel (axis
    1), with inference statistics mean and var `[C]`; gamma and beta are
    optional `[C]` (1 and 0 when absent), `epsilon` defaults to 1e-5."""

    name = "rlx.batch_norm"
    input = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    gamma = opt_operand_def(TensorType)
    beta = opt_operand_def(TensorType)

    def __init__(
        self,
        input: Value,
        mean: Value,
        var: Value,
        gamma: Value | None = None,
        beta: Value | None = None,
        epsilon: float | None = None,
    ):
        self.init_inferred(
            [input, mean, var, _optional(gamma), _optional(beta)],
            {
                "epsilon": f32_attr(epsilon),
                "operandSegmentSizes": _segments(1, 1, 1, gamma, beta),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        return [cls.check_channels(operand_types, properties)]


@rlx_op_definition
class GroupNormOp(ChannelNormOp):
    """y = (x − mean_g) / sqrt(var_g + epsilon) · gamma + beta: the C channels
    form `groups` groups of C / groups consecutive channels, and mean_g and
    the biased var_g are over each group's channels and spatial axes of one
    sample. gamma and beta are optional `[C]` (1 and 0 when absent);
    `epsilon` defaults to 1e-5. Instance norm is groups = C, layer norm over
    (C, H, W) groups = 1."""

    name = "rlx.group_norm"
    input = operand_def(TensorType)
    gamma = opt_operand_def(TensorType)
    beta = opt_operand_def(TensorType)
    groups = prop_def(I64Attr)

    def __init__(
        self,
        input: Value,
        groups: int,
        gamma: Value | None = None,
        beta: Value | None = None,
        epsilon: float | None = None,
    ):
        self.init_inferred(
            [input, _optional(gamma), _optional(beta)],
            {
                "groups": i64_attr(groups),
                "epsilon": f32_attr(epsilon),
                "operandSegmentSizes": _segments(1, gamma, beta),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = cls.check_channels(operand_types, properties)
        groups = int_prop(properties, "groups")
        channels = t.get_shape()[1]
        if groups < 1 or channels % groups:
            raise OpTypeError(
                cls.name,
                f"property 'groups' {groups} must be >= 1 and divide C = {channels} "
                f"of operand 'input' {fmt_shape(t.get_shape())}",
            )
        return [t]


def _segments(*parts: int | Value | None) -> DenseArrayBase:
    """operandSegmentSizes of single operands (1) and optional ones."""
    sizes = [p if isinstance(p, int) else int(p is not None) for p in parts]
    return DenseArrayBase.from_list(i32, sizes)


OPS = (
    BatchNormOp,
    GroupNormOp,
)
"""The ops of this family, as the rlx dialect lists them."""
