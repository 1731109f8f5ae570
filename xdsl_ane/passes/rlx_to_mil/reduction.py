"""Lowering of rlx reductions to MIL: reduce_{sum,mean,max,min}, softmax,
argmax, cumsum, topk and argsort, each the MIL op of that meaning."""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.typing import bool_prop, int_prop, ints_prop, shape_of

REDUCTIONS = {
    rlx.ReduceSumOp: mil.ReduceSumOp,
    rlx.ReduceMeanOp: mil.ReduceMeanOp,
    rlx.ReduceMaxOp: mil.ReduceMaxOp,
    rlx.ReduceMinOp: mil.ReduceMinOp,
}


class LowerReduction(RewritePattern):
    """reduce_{sum,mean,max,min}(axes, keep_dims) -> the MIL op of that name."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        build = REDUCTIONS.get(type(op))
        if build is None:
            return
        axes = ints_prop(op.properties, "axes")
        keep = bool_prop(op.properties, "keep_dims")
        rewriter.replace(op, build(op.operands[0], axes, keep))


class LowerSoftmax(RewritePattern):
    """softmax(x, axis) -> MIL softmax(axis)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.SoftmaxOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(
            op, mil.SoftmaxOp(op.input, int_prop(op.properties, "axis", -1))
        )


class LowerArgmax(RewritePattern):
    """argmax(axis, keep_dims) -> MIL reduce_argmax(axis, keep_dims)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.ArgmaxOp, rewriter: PatternRewriter) -> None:
        keep = bool_prop(op.properties, "keep_dims")
        new = mil.ReduceArgmaxOp(
            op.input, int_prop(op.properties, "axis", -1), keep or None
        )
        rewriter.replace(op, new)


class LowerCumsum(RewritePattern):
    """cumsum(axis, exclusive, reverse) -> MIL cumsum on the same axis made
    non-negative (MIL's cumsum takes −1 but no other negative axis); the
    flags are written only when set."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.CumsumOp, rewriter: PatternRewriter) -> None:
        axis = int_prop(op.properties, "axis") % len(shape_of(op.input))
        exclusive = bool_prop(op.properties, "exclusive") or None
        reverse = bool_prop(op.properties, "reverse") or None
        rewriter.replace(op, mil.CumsumOp(op.input, axis, exclusive, reverse))


class LowerTopk(RewritePattern):
    """topk(k, axis, largest) -> MIL topk(k, axis, ascending = not largest),
    sorted (MIL's default), values and int32 indices (its defaults)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.TopkOp, rewriter: PatternRewriter) -> None:
        ascending = not bool_prop(op.properties, "largest", True)
        new = mil.TopkOp(
            op.input,
            int_prop(op.properties, "k"),
            int_prop(op.properties, "axis", -1),
            ascending or None,
        )
        rewriter.replace(op, new)


class LowerArgsort(RewritePattern):
    """argsort(axis, descending) -> MIL argsort(axis, ascending = not
    descending): MIL sorts descending by default, rlx (as torch) ascending."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.ArgsortOp, rewriter: PatternRewriter) -> None:
        descending = bool_prop(op.properties, "descending", False)
        axis = int_prop(op.properties, "axis", -1)
        rewriter.replace(op, mil.ArgsortOp(op.input, axis, not descending or None))


PATTERNS = (
    LowerReduction(),
    LowerSoftmax(),
    LowerArgmax(),
    LowerCumsum(),
    LowerTopk(),
    LowerArgsort(),
)
