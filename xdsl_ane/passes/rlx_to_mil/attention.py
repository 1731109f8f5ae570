"""Lowering of rlx rotary embedding, attention and their backward ops to MIL.

RoPE and its gradient rotate pairs of the head dimension: slices (of a view
as pairs for the interleaved style), four muls, a sub, an add and a concat.
Attention is decomposed into matmul, scale,
mask, softmax and matmul (not MIL's scaled_dot_product_attention, whose
mask the ANE has been seen to ignore).

Both attention ops expect as many key/value heads as query heads: the
conversion pass runs the `rlx-gqa-tile` patterns first. Masks are additive
constants that stay finite in fp16. A query row that sees no key at all
(causal with S > Skv) is zeroed by a constant row mask, matching the rlx
semantics of such rows."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.mil.builders import Emitter
from xdsl_ane.dialects.typing import element_type_of, shape_of, str_prop
from xdsl_ane.limits import MASKED


def causal_masks(s: int, skv: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The additive causal mask [1, 1, S, Skv] (query i sees key j iff
    j ≤ i + Skv − S) and, when some rows see nothing, the row mask [1, 1, S, 1]."""
    i = np.arange(s)[:, None]
    j = np.arange(skv)[None, :]
    visible = j <= i + (skv - s)
    additive = np.where(visible, 0.0, MASKED)[None, None]
    rows = visible.any(axis=1)
    row_mask = None if rows.all() else rows.astype(np.float64)[None, None, :, None]
    return additive, row_mask


def attention_probabilities(
    e: Emitter, op: rlx.AttentionOp | rlx.AttentionBackwardOp
) -> SSAValue:
    """P = softmax(q·kᵀ·scale + mask) over the keys, zero on rows that see no key."""
    dtype = element_type_of(op.q)
    scores = e(mil.MatmulOp(op.q, op.k, transpose_x=False, transpose_y=True))
    scores = e(mil.MulOp(scores, e.const(rlx.attention_scale(op), dtype)))
    mask = str_prop(op.properties, "mask", "none")
    row_mask = None
    if mask == "causal":
        s, skv = shape_of(op.q)[2], shape_of(op.k)[2]
        additive, row_mask = causal_masks(s, skv)
        scores = e(mil.AddOp(scores, e.const(additive, dtype)))
    elif mask == "bias":
        assert op.bias is not None
        scores = e(mil.AddOp(scores, op.bias))
    probabilities = e(mil.SoftmaxOp(scores, -1))
    if row_mask is not None:
        probabilities = e(mil.MulOp(probabilities, e.const(row_mask, dtype)))
    return probabilities


def require_tiled(op: rlx.AttentionOp | rlx.AttentionBackwardOp) -> None:
    if shape_of(op.q)[1] != shape_of(op.k)[1]:
        raise AssertionError(f"{op.name}: grouped-query heads must be tiled first")


class LowerAttention(RewritePattern):
    """out = softmax(q·kᵀ·scale + mask) · v."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.AttentionOp, rewriter: PatternRewriter) -> None:
        require_tiled(op)
        e = Emitter(rewriter)
        probabilities = attention_probabilities(e, op)
        rewriter.replace(op, mil.MatmulOp(probabilities, op.v, False, False))


class LowerAttentionBackward(RewritePattern):
    """With P recomputed as in the forward and dO the output gradient:
    dV = Pᵀ·dO; dP = dO·vᵀ; dS = P ⊙ (dP − Σ_keys dP ⊙ P);
    dQ = dS·k·scale; dK = dSᵀ·q·scale."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.AttentionBackwardOp, rewriter: PatternRewriter
    ) -> None:
        require_tiled(op)
        e = Emitter(rewriter)
        p = attention_probabilities(e, op)
        wrt = op.wrt.data
        if wrt == "value":
            rewriter.replace(op, mil.MatmulOp(p, op.d_out, True, False))
            return
        d_p = e(mil.MatmulOp(op.d_out, op.v, False, True))
        row_dot = e(mil.ReduceSumOp(e(mil.MulOp(d_p, p)), [-1], keep_dims=True))
        d_s = e(mil.MulOp(p, e(mil.SubOp(d_p, row_dot))))
        scale = e.const(rlx.attention_scale(op), element_type_of(op.q))
        if wrt == "query":
            grad = e(mil.MatmulOp(d_s, op.k, False, False))
        else:
            grad = e(mil.MatmulOp(d_s, op.q, True, False))
        rewriter.replace(op, mil.MulOp(grad, scale))


def rotate_pairs(
    e: Emitter, a: SSAValue, b: SSAValue, cos: SSAValue, sin: SSAValue, inverse: bool
) -> tuple[SSAValue, SSAValue]:
    """(a, b) rotated by θ: (a·cos − b·sin, a·sin + b·cos); by −θ when
    `inverse`: (a·cos + b·sin, b·cos − a·sin)."""
    a_cos, b_sin = e(mil.MulOp(a, cos)), e(mil.MulOp(b, sin))
    a_sin, b_cos = e(mil.MulOp(a, sin)), e(mil.MulOp(b, cos))
    if inverse:
        return e(mil.AddOp(a_cos, b_sin)), e(mil.SubOp(b_cos, a_sin))
    return e(mil.SubOp(a_cos, b_sin)), e(mil.AddOp(a_sin, b_cos))


def lower_rope(
    e: Emitter, x: SSAValue, cos: SSAValue, sin: SSAValue, style: str, inverse: bool
) -> SSAValue:
    """Rotary embedding of x [B, H, S, D] with cos, sin [S, D/2].

    "half" pairs (i, i + D/2): slice the two halves, rotate, concat.
    "interleaved" pairs (2i, 2i + 1): view x as [B·H, S, D/2, 2], slice the
    even and odd lanes, rotate against cos, sin viewed as [S, D/2, 1],
    concat the lanes back and restore [B, H, S, D]."""
    b, h, s, d = shape_of(x)
    half = d // 2
    if style == "half":
        lo = e(mil.SliceBySizeOp(x, [0, 0, 0, 0], [-1, -1, -1, half]))
        hi = e(mil.SliceBySizeOp(x, [0, 0, 0, half], [-1, -1, -1, half]))
        lo, hi = rotate_pairs(e, lo, hi, cos, sin, inverse)
        return e(mil.ConcatOp([lo, hi], -1, interleave=False))
    pairs = e(mil.ReshapeOp(x, (b * h, s, half, 2)))
    even = e(mil.SliceBySizeOp(pairs, [0, 0, 0, 0], [-1, -1, -1, 1]))
    odd = e(mil.SliceBySizeOp(pairs, [0, 0, 0, 1], [-1, -1, -1, 1]))
    cos = e(mil.ReshapeOp(cos, (s, half, 1)))
    sin = e(mil.ReshapeOp(sin, (s, half, 1)))
    even, odd = rotate_pairs(e, even, odd, cos, sin, inverse)
    rotated = e(mil.ConcatOp([even, odd], -1, interleave=False))
    return e(mil.ReshapeOp(rotated, (b, h, s, d)))


class LowerRope(RewritePattern):
    """rope(x, cos, sin): each pair (a, b) -> (a·cos − b·sin, a·sin + b·cos)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.RopeOp, rewriter: PatternRewriter) -> None:
        style = str_prop(op.properties, "style")
        y = lower_rope(
            Emitter(rewriter), op.input, op.cos, op.sin, style, inverse=False
        )
        rewriter.replace(op, [], [y])


class LowerRopeBackward(RewritePattern):
    """rope_backward(dy): the transpose of a rotation is the rotation by −θ,
    (a, b) -> (a·cos + b·sin, b·cos − a·sin)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.RopeBackwardOp, rewriter: PatternRewriter
    ) -> None:
        style = str_prop(op.properties, "style")
        y = lower_rope(Emitter(rewriter), op.d_out, op.cos, op.sin, style, inverse=True)
        rewriter.replace(op, [], [y])


PATTERNS = (
    LowerAttention(),
    LowerAttentionBackward(),
    LowerRope(),
    LowerRopeBackward(),
)
