"""rlx normalizations over the last axis: rms_norm and layer_norm."""

from __future__ import annotations

from abc import ABC
from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
)

from xdsl_ane.dialects.rlx.base import FUNCTIONAL, RlxOp, Value, check_last_axis_param
from xdsl_ane.dialects.typing import (
    F32Attr,
    f32_attr,
    require_float,
    require_same_element_type,
    tensor_of,
)


class NormOp(RlxOp, ABC):
    """Normalization over the last axis with parameters of shape [D]."""

    PARAMS: ClassVar[tuple[str, ...]] = ()
    eps = prop_def(F32Attr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", t)
        named = [("input", t)]
        for pname, pt in zip(cls.PARAMS, operand_types[1:]):
            p = tensor_of(cls.name, pname, pt)
            check_last_axis_param(cls.name, pname, p, t)
            named.append((pname, p))
        require_same_element_type(cls.name, named)
        return [t]


@irdl_op_definition
class RmsNormOp(NormOp):
    """x · rsqrt(mean(x², last axis) + eps) · gamma."""

    name = "rlx.rms_norm"
    PARAMS: ClassVar[tuple[str, ...]] = ("gamma",)
    input = operand_def(TensorType)
    gamma = operand_def(TensorType)

    def __init__(self, input: Value, gamma: Value, eps: float):
        self.init_inferred([input, gamma], {"eps": f32_attr(eps)})


@irdl_op_definition
class LayerNormOp(NormOp):
    """(x − mean) · rsqrt(var + eps) · gamma + beta over the last axis."""

    name = "rlx.layer_norm"
    PARAMS: ClassVar[tuple[str, ...]] = ("gamma", "beta")
    input = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)

    def __init__(self, input: Value, gamma: Value, beta: Value, eps: float):
        self.init_inferred([input, gamma, beta], {"eps": f32_attr(eps)})
