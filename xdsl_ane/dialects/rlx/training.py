"""rlx backward ops for training: the RMSNorm gradients (with respect to the
input and to gamma) and the activation gradients. The other gradients are
in the family of their forward op: rope_backward and attention_backward in
attention.py, softmax_cross_entropy_backward in loss.py."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr, TensorType
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
    check_same_shape,
    rlx_op_definition,
)
from xdsl_ane.dialects.rlx.normalization import norm_axis
from xdsl_ane.dialects.typing import (
    F32Attr,
    I64Array,
    I64Attr,
    OpTypeError,
    choice,
    f32_attr,
    fmt_shape,
    i64_attr,
    ints_attr,
    ints_prop,
    require_float,
    require_same_element_type,
    str_attr,
    str_prop,
    tensor,
    tensor_of,
)


@rlx_op_definition
class RmsNormBackwardInputOp(RlxOp):
    """d_x for y = x·r·γ, r = rsqrt(mean(x², axis) + eps):
    d_x = r·(γ·d_y) − x·r³·mean(x·γ·d_y); `axis` and γ as in rlx.rms_norm."""

    name = "rlx.rms_norm_backward_input"
    input = operand_def(TensorType)
    gamma = operand_def(TensorType)
    d_out = operand_def(TensorType)
    result = result_def(TensorType)
    eps = prop_def(F32Attr)
    axis = opt_prop_def(I64Attr)
    assembly_format = FUNCTIONAL

    def __init__(
        self,
        input: Value,
        gamma: Value,
        d_out: Value,
        eps: float,
        axis: int | None = None,
    ):
        self.init_inferred(
            [input, gamma, d_out], {"eps": f32_attr(eps), "axis": i64_attr(axis)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", x)
        g = tensor_of(cls.name, "gamma", operand_types[1])
        check_norm_param(cls.name, "gamma", g, x, norm_axis(cls.name, properties, x))
        dy = tensor_of(cls.name, "d_out", operand_types[2])
        check_same_shape(cls.name, "d_out", dy, "input", x)
        require_same_element_type(cls.name, [("input", x), ("gamma", g), ("d_out", dy)])
        return [x]


@rlx_op_definition
class RmsNormBackwardGammaOp(RlxOp):
    """d_γ = Σ of d_y · x · rsqrt(mean(x², axis) + eps) over the axes γ
    broadcasts along: γ is [D] (every axis but `axis`, the last, is
    summed) unless `gamma_shape` gives the shape of the forward's γ
    (`check_norm_param`: [1, H, D, 1] sums over the batch and sequence
    only, leaving a γ gradient per head)."""

    name = "rlx.rms_norm_backward_gamma"
    input = operand_def(TensorType)
    d_out = operand_def(TensorType)
    result = result_def(TensorType)
    eps = prop_def(F32Attr)
    axis = opt_prop_def(I64Attr)
    gamma_shape = opt_prop_def(I64Array)
    assembly_format = FUNCTIONAL

    def __init__(
        self,
        input: Value,
        d_out: Value,
        eps: float,
        axis: int | None = None,
        gamma_shape: Sequence[int] | None = None,
    ):
        self.init_inferred(
            [input, d_out],
            {
                "eps": f32_attr(eps),
                "axis": i64_attr(axis),
                "gamma_shape": ints_attr(gamma_shape),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", x)
        if x.get_num_dims() == 0:
            raise OpTypeError(cls.name, "operand 'input' must have rank >= 1")
        dy = tensor_of(cls.name, "d_out", operand_types[1])
        check_same_shape(cls.name, "d_out", dy, "input", x)
        require_same_element_type(cls.name, [("input", x), ("d_out", dy)])
        axis = norm_axis(cls.name, properties, x)
        shape = x.get_shape()
        if "gamma_shape" not in properties:
            if axis != len(shape) - 1:
                raise OpTypeError(
                    cls.name,
                    f"property 'gamma_shape' is needed for axis {axis}, which is "
                    f"not the last of operand 'input' {fmt_shape(shape)}",
                )
            return [tensor(shape[-1:], x.element_type)]
        gamma = tensor(ints_prop(properties, "gamma_shape"), x.element_type)
        check_norm_param(cls.name, "gamma_shape", gamma, x, axis, "property")
        return [gamma]


ACTIVATION_KINDS = ("relu", "silu", "gelu", "gelu_tanh", "sigmoid", "tanh")


@rlx_op_definition
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


OPS = (
    RmsNormBackwardInputOp,
    RmsNormBackwardGammaOp,
    ActivationBackwardOp,
)
"""The ops of this family, as the rlx dialect lists them."""
