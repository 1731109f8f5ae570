"""Lowering of rlx linear algebra and shape ops to MIL."""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.mil.builders import Emitter
from xdsl_ane.dialects.typing import bool_prop, int_prop, ints_prop, shape_of


class LowerMatmul(RewritePattern):
    """lhs·rhs on the last two axes = MIL matmul(x, y, transpose_x, transpose_y)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.MatmulOp, rewriter: PatternRewriter) -> None:
        new = mil.MatmulOp(
            op.lhs,
            op.rhs,
            transpose_x=bool_prop(op.properties, "transpose_lhs"),
            transpose_y=bool_prop(op.properties, "transpose_rhs"),
        )
        rewriter.replace(op, new)


class LowerReshape(RewritePattern):
    """reshape -> MIL reshape(shape = the result shape)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.ReshapeOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, mil.ReshapeOp(op.input, shape_of(op.result)))


class LowerTranspose(RewritePattern):
    """transpose(perm) -> MIL transpose(perm)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.TransposeOp, rewriter: PatternRewriter) -> None:
        perm = ints_prop(op.properties, "perm")
        assert perm is not None
        rewriter.replace(op, mil.TransposeOp(op.input, perm))


class LowerNarrow(RewritePattern):
    """x[..., start:start+length, ...] = slice_by_size(begin, size) with
    begin 0 / size −1 (to the end) on the other axes."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.NarrowOp, rewriter: PatternRewriter) -> None:
        rank = len(shape_of(op.input))
        axis = int_prop(op.properties, "axis") % rank
        begin = [0] * rank
        size = [-1] * rank
        begin[axis] = int_prop(op.properties, "start")
        size[axis] = int_prop(op.properties, "length")
        rewriter.replace(op, mil.SliceBySizeOp(op.input, begin, size))


class LowerConcat(RewritePattern):
    """concat(values, axis) with interleave = false."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.ConcatOp, rewriter: PatternRewriter) -> None:
        if len(op.inputs) == 1:
            rewriter.replace(op, [], [op.inputs[0]])
            return
        new = mil.ConcatOp(
            list(op.inputs), int_prop(op.properties, "axis"), interleave=False
        )
        rewriter.replace(op, new)


def broadcast_to(e: Emitter, x: SSAValue, target: tuple[int, ...]) -> SSAValue:
    """numpy broadcast_to as MIL ops: reshape to the target rank (leading
    1s), then tile each size-1 axis up to its target size."""
    source = shape_of(x)
    padded = (1,) * (len(target) - len(source)) + source
    if padded != source:
        x = e(mil.ReshapeOp(x, padded))
    reps = [t // s for s, t in zip(padded, target)]
    if any(r != 1 for r in reps):
        x = e(mil.TileOp(x, reps))
    return x


class LowerExpand(RewritePattern):
    """broadcast_to(x, shape): reshape to the target rank (leading 1s), then
    tile each size-1 axis up to its target size."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.ExpandOp, rewriter: PatternRewriter) -> None:
        x = broadcast_to(Emitter(rewriter), op.input, shape_of(op.result))
        rewriter.replace(op, [], [x])


class LowerGather(RewritePattern):
    """take(table, indices, axis) = MIL gather(x, indices, axis)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.GatherOp, rewriter: PatternRewriter) -> None:
        new = mil.GatherOp(op.table, op.indices, axis=int_prop(op.properties, "axis"))
        rewriter.replace(op, new)


PATTERNS = (
    LowerMatmul(),
    LowerReshape(),
    LowerTranspose(),
    LowerNarrow(),
    LowerConcat(),
    LowerExpand(),
    LowerGather(),
)
