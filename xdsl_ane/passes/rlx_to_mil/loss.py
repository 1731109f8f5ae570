"""Lowering of rlx softmax cross-entropy and its backward to MIL with a
number of ops independent of the class count C: the label's logit is picked
with `one_hot` + `reduce_sum`, not with a graph per class."""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.mil.builders import Emitter
from xdsl_ane.dialects.typing import element_type_of, is_float, shape_of
from xdsl_ane.passes.rlx_to_mil.elementwise import TINY_EPSILON


def one_hot_labels(e: Emitter, logits: SSAValue, labels: SSAValue) -> SSAValue:
    """onehot(labels) [N, C] in the logits' dtype; labels held as floats are
    cast to int32 first (MIL's one_hot takes int32 indices)."""
    if is_float(element_type_of(labels)):
        labels = e(mil.CastOp(labels, "int32"))
    classes = shape_of(logits)[-1]
    return e(mil.OneHotOp(labels, classes, -1, element_type=element_type_of(logits)))


class LowerSoftmaxCrossEntropy(RewritePattern):
    """loss = logsumexp(x) − Σ x·onehot(label), with the max-shifted
    logsumexp(x) = log(Σ exp(x − m)) + m, m = max(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.SoftmaxCrossEntropyOp, rewriter: PatternRewriter
    ) -> None:
        e = Emitter(rewriter)
        x = op.logits
        m = e(mil.ReduceMaxOp(x, [-1], keep_dims=True))
        exp = e(mil.ExpOp(e(mil.SubOp(x, m))))
        total = e(mil.ReduceSumOp(exp, [-1], keep_dims=True))
        logsumexp = e(mil.AddOp(e(mil.LogOp(total, epsilon=TINY_EPSILON)), m))
        picked = e(
            mil.ReduceSumOp(
                e(mil.MulOp(x, one_hot_labels(e, x, op.labels))), [-1], keep_dims=True
            )
        )
        loss = e(mil.SubOp(logsumexp, picked))
        rewriter.replace(op, mil.ReshapeOp(loss, shape_of(op.result)))


class LowerSoftmaxCrossEntropyBackward(RewritePattern):
    """d_logits = (softmax(x) − onehot(label)) · d_loss[:, None]."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.SoftmaxCrossEntropyBackwardOp, rewriter: PatternRewriter
    ) -> None:
        e = Emitter(rewriter)
        probabilities = e(mil.SoftmaxOp(op.logits, -1))
        delta = e(mil.SubOp(probabilities, one_hot_labels(e, op.logits, op.labels)))
        d_loss = e(mil.ReshapeOp(op.d_loss, (shape_of(op.d_loss)[0], 1)))
        rewriter.replace(op, mil.MulOp(delta, d_loss))


PATTERNS = (LowerSoftmaxCrossEntropy(), LowerSoftmaxCrossEntropyBackward())
