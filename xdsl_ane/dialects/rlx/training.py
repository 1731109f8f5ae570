"""rlx backward ops for training: the RMSNorm gradients (with respect to the
input and to gamma) and the activation gradients. The other gradients are
in the family of their forward op: rope_backward and attention_backward in
attention.py, softmax_cross_entropy_backward in loss.py."""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
)

from xdsl_ane.dialects.rlx.base import (
    FUNCTIONAL,
    RlxOp,
    Value,
    check_last_axis_param,
    check_same_shape,
)
from xdsl_ane.dialects.typing import (
    F32Attr,
    OpTypeError,
    choice,
    f32_attr,
    require_float,
    require_same_element_type,
    str_attr,
    str_prop,
    tensor,
    tensor_of,
)


@irdl_op_definition
class RmsNormBackwardInputOp(RlxOp):
    """d_x for y = x·r·γ, r = rsqrt(mean(x²) + eps):
    d_x = r·(γ·d_y) − x·r³·mean(x·γ·d_y)."""

    name = "rlx.rms_norm_backward_input"
    input = operand_def(TensorType)
    gamma = operand_def(TensorType)
    d_out = operand_def(TensorType)
    result = result_def(TensorType)
    eps = prop_def(F32Attr)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, gamma: Value, d_out: Value, eps: float):
        self.init_inferred([input, gamma, d_out], {"eps": f32_attr(eps)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", x)
        g = tensor_of(cls.name, "gamma", operand_types[1])
        check_last_axis_param(cls.name, "gamma", g, x)
        dy = tensor_of(cls.name, "d_out", operand_types[2])
        check_same_shape(cls.name, "d_out", dy, "input", x)
        require_same_element_type(cls.name, [("input", x), ("gamma", g), ("d_out", dy)])
        return [x]


@irdl_op_definition
class RmsNormBackwardGammaOp(RlxOp):
    """d_γ = Σ over all but the last axis of d_y · x · rsqrt(mean(x²) + eps)."""

    name = "rlx.rms_norm_backward_gamma"
    input = operand_def(TensorType)
    d_out = operand_def(TensorType)
    result = result_def(TensorType)
    eps = prop_def(F32Attr)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, d_out: Value, eps: float):
        self.init_inferred([input, d_out], {"eps": f32_attr(eps)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", x)
        if x.get_num_dims() == 0:
            raise OpTypeError(cls.name, "operand 'input' must have rank >= 1")
        dy = tensor_of(cls.name, "d_out", operand_types[1])
        check_same_shape(cls.name, "d_out", dy, "input", x)
        require_same_element_type(cls.name, [("input", x), ("d_out", dy)])
        return [tensor(x.get_shape()[-1:], x.element_type)]


ACTIVATION_KINDS = ("relu", "silu", "gelu", "gelu_tanh", "sigmoid", "tanh")


@irdl_op_definition
class ActivationBackwardOp(RlxOp):
    """d_x = f'(x) · d_y for the activation named by `kind`."""

    name = "rlx.activation_backward"
    input = operand_def(TensorType)
    d_out = operand_def(TensorType)
    result = result_def(TensorType)
    kind = prop_def(StringAttr)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, d_out: Value, kind: str):
        self.init_inferred([input, d_out], {"kind": str_attr(kind)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        choice(cls.name, "kind", str_prop(properties, "kind"), ACTIVATION_KINDS)
        x = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", x)
        dy = tensor_of(cls.name, "d_out", operand_types[1])
        check_same_shape(cls.name, "d_out", dy, "input", x)
        require_same_element_type(cls.name, [("input", x), ("d_out", dy)])
        return [x]
