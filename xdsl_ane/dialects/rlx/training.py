"""rlx loss and backward ops: softmax cross-entropy and its backward,
RMSNorm and activation backward."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    StringAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute
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
    element_name,
    f32_attr,
    fmt_shape,
    is_float,
    require_float,
    require_rank,
    require_same_element_type,
    str_attr,
    str_prop,
    tensor,
    tensor_of,
)

# --- loss --------------------------------------------------------------------


def check_cross_entropy(
    op_name: str, logits: Attribute, labels: Attribute
) -> TensorType:
    """logits [N, C] float; labels [N] i32, or float holding class indices."""
    lt = tensor_of(op_name, "logits", logits)
    require_float(op_name, "logits", lt)
    n, _ = require_rank(op_name, "logits", lt, 2)
    yt = tensor_of(op_name, "labels", labels)
    if yt.get_shape() != (n,):
        raise OpTypeError(
            op_name,
            f"operand 'labels' {fmt_shape(yt.get_shape())} must be [{n}] for operand "
            f"'logits' {fmt_shape(lt.get_shape())}",
        )
    if yt.element_type != i32 and not is_float(yt.element_type):
        raise OpTypeError(
            op_name,
            "operand 'labels' must be i32 or a float type holding class indices, "
            f"got {element_name(yt.element_type)}",
        )
    return lt


@irdl_op_definition
class SoftmaxCrossEntropyOp(RlxOp):
    """Per-row loss logsumexp(logits) − logits[label]."""

    name = "rlx.softmax_cross_entropy"
    logits = operand_def(TensorType)
    labels = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    def __init__(self, logits: Value, labels: Value):
        self.init_inferred([logits, labels])

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        lt = check_cross_entropy(cls.name, operand_types[0], operand_types[1])
        return [tensor(lt.get_shape()[:1], lt.element_type)]


@irdl_op_definition
class SoftmaxCrossEntropyBackwardOp(RlxOp):
    """d_logits = (softmax(logits) − onehot(labels)) · d_loss[:, None]."""

    name = "rlx.softmax_cross_entropy_backward"
    logits = operand_def(TensorType)
    labels = operand_def(TensorType)
    d_loss = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    def __init__(self, logits: Value, labels: Value, d_loss: Value):
        self.init_inferred([logits, labels, d_loss])

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        lt = check_cross_entropy(cls.name, operand_types[0], operand_types[1])
        dt = tensor_of(cls.name, "d_loss", operand_types[2])
        if dt.get_shape() != lt.get_shape()[:1]:
            raise OpTypeError(
                cls.name,
                f"operand 'd_loss' {fmt_shape(dt.get_shape())} must be "
                f"{fmt_shape(lt.get_shape()[:1])} for operand 'logits' "
                f"{fmt_shape(lt.get_shape())}",
            )
        require_same_element_type(cls.name, [("logits", lt), ("d_loss", dt)])
        return [lt]


# --- training ----------------------------------------------------------------


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
