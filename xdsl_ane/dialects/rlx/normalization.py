"""rlx normalizations: rms_norm (over any one axis) and layer_norm (over
the last axis)."""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping
from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation
from xdsl.irdl import (
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from xdsl_ane.dialects.rlx.base import (
    FUNCTIONAL,
    RlxOp,
    Value,
    check_norm_param,
    rlx_op_definition,
)
from xdsl_ane.dialects.typing import (
    F32Attr,
    I64Attr,
    f32_attr,
    i64_attr,
    int_prop,
    normalize_axis,
    require_float,
    require_same_element_type,
    tensor_of,
)


def rms_axis(op: Operation) -> int:
    """The normalized axis of a verified RMSNorm op (rms_norm or its
    gradients), −1 (the last) when `axis` is absent."""
    return int_prop(op.properties, "axis", -1)


def norm_axis(
    op_name: str, properties: Mapping[str, Attribute], input: TensorType
) -> int:
    """The checked `axis` property of an RMSNorm op (the last when absent)."""
    shape = input.get_shape()
    axis = int_prop(properties, "axis", -1)
    return normalize_axis(op_name, "axis", axis, len(shape), ("input", shape))


class NormOp(RlxOp, ABC):
    """Normalization over one axis with parameters of shape [D] (or
    broadcast to the input, `check_norm_param`)."""

    PARAMS: ClassVar[tuple[str, ...]] = ()
    eps = prop_def(F32Attr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    @classmethod
    def normalized_axis(
        cls, properties: Mapping[str, Attribute], input: TensorType
    ) -> int:
        return input.get_num_dims() - 1

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", t)
        axis = cls.normalized_axis(properties, t)
        named = [("input", t)]
        for pname, pt in zip(cls.PARAMS, operand_types[1:]):
            p = tensor_of(cls.name, pname, pt)
            check_norm_param(cls.name, pname, p, t, axis)
            named.append((pname, p))
        require_same_element_type(cls.name, named)
        return [t]


@rlx_op_definition
class RmsNormOp(NormOp):
    """x · rsqrt(mean(x², axis) + eps) · gamma, over the last axis unless
    `axis` says otherwise (QK-norm over D of [1, H, D, S] heads)."""

    name = "rlx.rms_norm"
    PARAMS: ClassVar[tuple[str, ...]] = ("gamma",)
    input = operand_def(TensorType)
    gamma = operand_def(TensorType)
    axis = opt_prop_def(I64Attr)

    def __init__(self, input: Value, gamma: Value, eps: float, axis: int | None = None):
        self.init_inferred(
            [input, gamma], {"eps": f32_attr(eps), "axis": i64_attr(axis)}
        )

    @classmethod
    def normalized_axis(
        cls, properties: Mapping[str, Attribute], input: TensorType
    ) -> int:
        return norm_axis(cls.name, properties, input)


@rlx_op_definition
class LayerNormOp(NormOp):
    """(x − mean) · rsqrt(var + eps) · gamma + beta over the last axis."""

    name = "rlx.layer_norm"
    PARAMS: ClassVar[tuple[str, ...]] = ("gamma", "beta")
    input = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)

    def __init__(self, input: Value, gamma: Value, beta: Value, eps: float):
        self.init_inferred([input, gamma, beta], {"eps": f32_attr(eps)})


OPS = (
    RmsNormOp,
    LayerNormOp,
)
"""The ops of this family, as the rlx dialect lists them."""
