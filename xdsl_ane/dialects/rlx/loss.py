"""rlx loss ops: softmax cross-entropy per row and its backward, the gradient
with respect to the logits."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType, i32
from xdsl.ir import Attribute
from xdsl.irdl import operand_def, result_def

from xdsl_ane.dialects.rlx.base import FUNCTIONAL, RlxOp, Value, rlx_op_definition
from xdsl_ane.dialects.typing import (
    OpTypeError,
    element_name,
    fmt_shape,
    is_float,
    require_float,
    require_rank,
    require_same_element_type,
    tensor,
    tensor_of,
)


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


@rlx_op_definition
class SoftmaxCrossEntropyOp(RlxOp):
    """Per-row loss logsumexp(logits) − logits[label] of logits [N, C] and
    labels [N], i32 or a float type holding integers."""

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


@rlx_op_definition
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


OPS = (
    SoftmaxCrossEntropyOp,
    SoftmaxCrossEntropyBackwardOp,
)
"""The ops of this family, as the rlx dialect lists them."""
