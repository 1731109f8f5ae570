"""`rlx-gqa-tile`: grouped-query attention over repeated key/value heads.

Query head h of a grouped-query `rlx.attention` (H query heads over Hkv < H
key/value heads, R = H / Hkv) reads key/value head h // R. The pass repeats
each key/value head R times in that order (k0, k0, k1, k1, ... for R = 2)
with rank-4 ops only, so the attention that remains has H key/value heads:

    [B, Hkv, S, D] -reshape-> [B·Hkv, 1, S, D] -concat R× axis 1->
    [B·Hkv, R, S, D] -reshape-> [B, Hkv·R, S, D]

(Folding S and D into one axis, [B, Hkv, 1, S·D], works as well but makes
an axis of S·D = 32768 for Qwen3's S = 256, D = 128, beyond the ANE's
16384.)
Concatenating whole tensors along the head axis would give k0, k1, ..., k0,
k1, ... instead: the order of the other mapping (h mod Hkv). For
`rlx.attention_backward` with respect to key or value, the gradient over the
H repeated heads is summed back over each group of R:

    [B, H, S, D] -reshape-> [B·Hkv, R, S, D] -reduce_sum axis 1 (keep)->
    [B·Hkv, 1, S, D] -reshape-> [B, Hkv, S, D]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.locations import location_keeper

Insert = Callable[[Operation], Operation]


def as_built(op: Operation) -> Operation:
    """The default `insert`: the op stays where its builder put it (inside an
    `ImplicitBuilder`, at the end of the block being built)."""
    return op


def repeat_heads(value: SSAValue, repeats: int, insert: Insert = as_built) -> SSAValue:
    """[B, Hkv, X, Y] -> [B, Hkv·R, X, Y] with head j at positions j·R ..
    j·R + R − 1, so query head h reads key/value head h // R (Hugging Face's
    repeat_kv): rank 4 throughout, and no axis longer than the input's."""
    if repeats == 1:
        return value
    b, hkv, x, y = shape_of(value)
    flat = insert(rlx.ReshapeOp(value, (b * hkv, 1, x, y))).results[0]
    tiled = insert(rlx.ConcatOp([flat] * repeats, axis=1)).results[0]
    return insert(rlx.ReshapeOp(tiled, (b, hkv * repeats, x, y))).results[0]


def sum_head_groups(
    value: SSAValue, groups: int, insert: Insert = as_built
) -> SSAValue:
    """[B, H, X, Y] -> [B, Hkv, X, Y] summing each run of R = H / Hkv heads:
    the adjoint of `repeat_heads`."""
    b, h, x, y = shape_of(value)
    grouped = insert(rlx.ReshapeOp(value, (b * groups, h // groups, x, y)))
    summed = insert(rlx.ReduceSumOp(grouped.results[0], (1,), keep_dims=True))
    return insert(rlx.ReshapeOp(summed.results[0], (b, groups, x, y))).results[0]


def head_counts(op: rlx.AttentionOp | rlx.AttentionBackwardOp) -> tuple[int, int]:
    return shape_of(op.q)[1], shape_of(op.k)[1]


class TileGroupedQueryAttention(RewritePattern):
    """attention(q, k, v) with Hkv < H -> attention(q, repeat(k), repeat(v))."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.AttentionOp, rewriter: PatternRewriter) -> None:
        h, hkv = head_counts(op)
        if hkv == h:
            return
        k = repeat_heads(op.k, h // hkv, rewriter.insert)
        v = repeat_heads(op.v, h // hkv, rewriter.insert)
        new = rlx.AttentionOp(op.q, k, v, bias=op.bias, **op.builder_properties())
        rewriter.replace(op, new)


class TileGroupedQueryAttentionBackward(RewritePattern):
    """attention_backward with Hkv < H -> attention_backward over repeated
    heads; for wrt key/value the H-head gradient is summed back per group."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.AttentionBackwardOp, rewriter: PatternRewriter
    ) -> None:
        h, hkv = head_counts(op)
        if hkv == h:
            return
        k = repeat_heads(op.k, h // hkv, rewriter.insert)
        v = repeat_heads(op.v, h // hkv, rewriter.insert)
        wrt = op.wrt.data
        grad = rlx.AttentionBackwardOp(
            op.q, k, v, op.d_out, wrt, bias=op.bias, **op.builder_properties()
        )
        rewriter.insert(grad)
        if wrt == "query":
            rewriter.replace(op, [], [grad.result])
            return
        rewriter.replace(op, [], [sum_head_groups(grad.result, hkv, rewriter.insert)])


@dataclass(frozen=True)
class RlxGqaTilePass(ModulePass):
    """Rewrites grouped-query rlx.attention / rlx.attention_backward into
    attention over repeated key/value heads (query head h reads key/value
    head h // (H/Hkv)); key/value gradients are group-summed back."""

    name = "rlx-gqa-tile"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(
            TileGroupedQueryAttention(),
            apply_recursively=False,
            listener=location_keeper(),
        ).rewrite_module(op)
        PatternRewriteWalker(
            TileGroupedQueryAttentionBackward(),
            apply_recursively=False,
            listener=location_keeper(),
        ).rewrite_module(op)
