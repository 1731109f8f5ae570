"""Lowering of rlx rotary embedding, attention and their backward ops to MIL.

RoPE and its gradient rotate pairs of the head dimension. With tables that
are inline constants (the training kernels bake them) they become
x·C ± swap(x)·S̃ with C, S̃ [S, D] folded at compile time
(`rotation_tables`): a swap of the pair partners (two slices and a concat,
of a view as pairs for the interleaved style), two muls and an add. With
tables computed at run time (the positions of a decode step) the pairs are
rotated as they are: slices, four muls, a sub, an add and a concat.
Attention is decomposed into matmul, scale, mask, softmax and matmul (not
MIL's scaled_dot_product_attention, whose mask the ANE has been seen to
ignore); in the "bhds" layout every product is a matmul with transpose
flags.

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

from xdsl_ane.ane.limits import MASKED
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.dense import dense_to_numpy
from xdsl_ane.dialects.mil.builders import Emitter
from xdsl_ane.dialects.typing import element_type_of, shape_of, str_prop


def causal_masks(s: int, skv: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The additive causal mask [1, 1, S, Skv] (`rlx.causal_visible`) and,
    when some rows see nothing, the row mask [1, 1, S, 1]."""
    visible = rlx.causal_visible(s, skv)
    additive = np.where(visible, 0.0, MASKED)[None, None]
    rows = visible.any(axis=1)
    row_mask = None if rows.all() else rows.astype(np.float64)[None, None, :, None]
    return additive, row_mask


def attention_probabilities(
    e: Emitter, op: rlx.AttentionOp | rlx.AttentionBackwardOp
) -> SSAValue:
    """P = softmax(q·kᵀ·scale + mask) [B, H, S, Skv] over the keys, zero on
    rows that see no key; in "bhds" q and k are [.., D, S], so q·kᵀ is
    matmul(q, k) with q transposed."""
    dtype = element_type_of(op.q)
    layout = op.layout_name
    bhds = layout == "bhds"
    scores = e(mil.MatmulOp(op.q, op.k, transpose_x=bhds, transpose_y=not bhds))
    scores = e(mil.MulOp(scores, e.const(rlx.attention_scale(op), dtype)))
    mask = str_prop(op.properties, "mask", "none")
    row_mask = None
    if mask == "causal":
        s = rlx.sequence_and_head(shape_of(op.q), layout)[0]
        skv = rlx.sequence_and_head(shape_of(op.k), layout)[0]
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
    """out = softmax(q·kᵀ·scale + mask) · v; in "bhds" outᵀ = v·Pᵀ."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.AttentionOp, rewriter: PatternRewriter) -> None:
        require_tiled(op)
        e = Emitter(rewriter)
        p = attention_probabilities(e, op)
        if op.layout_name == "bhds":
            rewriter.replace(op, mil.MatmulOp(op.v, p, False, True))
        else:
            rewriter.replace(op, mil.MatmulOp(p, op.v, False, False))


class LowerAttentionBackward(RewritePattern):
    """With P recomputed as in the forward and dO the output gradient:
    dV = Pᵀ·dO; dP = dO·vᵀ; dS = P ⊙ (dP − Σ_keys dP ⊙ P);
    dQ = dS·k·scale; dK = dSᵀ·q·scale. In "bhds" (operands and gradients
    [.., D, S]): dVᵀ = dOᵀ·P, dP = (dOᵀ)ᵀ·vᵀ, dQᵀ = kᵀ·dSᵀ, dKᵀ = qᵀ·dS."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.AttentionBackwardOp, rewriter: PatternRewriter
    ) -> None:
        require_tiled(op)
        e = Emitter(rewriter)
        p = attention_probabilities(e, op)
        wrt = op.wrt.data
        bhds = op.layout_name == "bhds"
        if wrt == "value":
            if bhds:
                rewriter.replace(op, mil.MatmulOp(op.d_out, p, False, False))
            else:
                rewriter.replace(op, mil.MatmulOp(p, op.d_out, True, False))
            return
        d_p = e(mil.MatmulOp(op.d_out, op.v, bhds, not bhds))
        row_dot = e(mil.ReduceSumOp(e(mil.MulOp(d_p, p)), [-1], keep_dims=True))
        d_s = e(mil.MulOp(p, e(mil.SubOp(d_p, row_dot))))
        scale = e.const(rlx.attention_scale(op), element_type_of(op.q))
        if wrt == "query" and bhds:
            grad = e(mil.MatmulOp(op.k, d_s, False, True))
        elif wrt == "query":
            grad = e(mil.MatmulOp(d_s, op.k, False, False))
        elif bhds:
            grad = e(mil.MatmulOp(op.q, d_s, False, False))
        else:
            grad = e(mil.MatmulOp(d_s, op.q, True, False))
        rewriter.replace(op, mil.MulOp(grad, scale))


def rotation_tables(
    cos: np.ndarray, sin: np.ndarray, style: str
) -> tuple[np.ndarray, np.ndarray]:
    """C and S̃ [S, D] from the tables [S, D/2]: C[:, d] the cosine of d's
    pair and S̃[:, d] its sine signed for d's place in the pair — "half"
    pairs (i, i + D/2): C = [cos, cos], S̃ = [−sin, sin]; "interleaved"
    pairs (2i, 2i + 1): C[2i] = C[2i+1] = cos_i, S̃[2i] = −sin_i,
    S̃[2i+1] = sin_i. With swap(x) exchanging the partners of each pair,
    x rotated by θ is x·C + swap(x)·S̃, and by −θ x·C − swap(x)·S̃."""
    if style == "half":
        return np.concatenate([cos, cos], axis=1), np.concatenate([-sin, sin], axis=1)
    c = np.repeat(cos, 2, axis=1)
    return c, np.stack([-sin, sin], axis=2).reshape(sin.shape[0], -1)


def inline_constant(value: SSAValue) -> np.ndarray | None:
    """The data of `value` when it is an inline constant (`rlx.constant`,
    or a `mil.const` with its value in the IR)."""
    owner = value.owner
    if isinstance(owner, rlx.ConstantOp):
        return dense_to_numpy(owner.value)
    if isinstance(owner, mil.ConstOp) and owner.val is not None:
        return dense_to_numpy(owner.val)
    return None


def slice_axis(e: Emitter, x: SSAValue, axis: int, start: int, size: int) -> SSAValue:
    """x[start:start + size] along `axis` (slice_by_size)."""
    rank = len(shape_of(x))
    begin, sizes = [0] * rank, [-1] * rank
    begin[axis], sizes[axis] = start, size
    return e(mil.SliceBySizeOp(x, begin, sizes))


class PairView:
    """x [B, H, S, D] or [B, H, D, S] seen as its RoPE pairs: the two
    partners a, b of each pair as slices along `axis` of `x` ("half") or of
    a view with each pair on an axis of 2 ("interleaved": [B·H, S, D/2, 2]
    or [B·H, D/2, 2, S]); `join` puts the two halves back into x's shape."""

    def __init__(self, e: Emitter, x: SSAValue, style: str, layout: str):
        self.e, self.shape, self.style = e, shape_of(x), style
        b, h, s, d = (*self.shape[:2], *rlx.sequence_and_head(self.shape, layout))
        half = d // 2
        # The last axis as −1, as MIL writers usually spell it.
        if style == "half":
            self.view, self.axis = x, -1 if layout == "bhsd" else 2
        elif layout == "bhsd":
            self.view = e(mil.ReshapeOp(x, (b * h, s, half, 2)))
            self.axis = -1
        else:
            self.view = e(mil.ReshapeOp(x, (b * h, half, 2, s)))
            self.axis = 2
        size = half if style == "half" else 1
        self.a = slice_axis(e, self.view, self.axis, 0, size)
        self.b = slice_axis(e, self.view, self.axis, size, size)

    def join(self, a: SSAValue, b: SSAValue) -> SSAValue:
        joined = self.e(mil.ConcatOp([a, b], self.axis, interleave=False))
        if self.style == "half":
            return joined
        return self.e(mil.ReshapeOp(joined, self.shape))


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


def pair_tables(e: Emitter, table: SSAValue, style: str, layout: str) -> SSAValue:
    """A run-time table [S, D/2] shaped to broadcast against the pair
    halves: [D/2, S] in "bhds"; with an axis of 1 for the pair
    ([S, D/2, 1] or [D/2, 1, S]) in the interleaved style."""
    s, half = shape_of(table)
    if layout == "bhds":
        table = e(mil.TransposeOp(table, (1, 0)))
    if style == "half":
        return table
    return e(mil.ReshapeOp(table, (s, half, 1) if layout == "bhsd" else (half, 1, s)))


def lower_rope(
    e: Emitter, op: rlx.RopeOp | rlx.RopeBackwardOp, x: SSAValue, inverse: bool
) -> SSAValue:
    """Rotary embedding of x [B, H, S, D] ("bhsd") or [B, H, D, S]
    ("bhds") with cos, sin [S, D/2], by −θ when `inverse`."""
    style, layout = str_prop(op.properties, "style"), op.layout_name
    dtype = element_type_of(x)
    pairs = PairView(e, x, style, layout)
    cos, sin = inline_constant(op.cos), inline_constant(op.sin)
    if cos is not None and sin is not None:
        c, signed_sin = rotation_tables(cos, sin, style)
        if layout == "bhds":
            c, signed_sin = c.T, signed_sin.T
        swapped = pairs.join(pairs.b, pairs.a)
        rotated = e(mil.MulOp(swapped, e.const(signed_sin, dtype)))
        scaled = e(mil.MulOp(x, e.const(c, dtype)))
        combine = mil.SubOp if inverse else mil.AddOp
        return e(combine(scaled, rotated))
    cos_t = pair_tables(e, op.cos, style, layout)
    sin_t = pair_tables(e, op.sin, style, layout)
    a, b = rotate_pairs(e, pairs.a, pairs.b, cos_t, sin_t, inverse)
    return pairs.join(a, b)


class LowerRope(RewritePattern):
    """rope(x, cos, sin): each pair (a, b) -> (a·cos − b·sin, a·sin + b·cos)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.RopeOp, rewriter: PatternRewriter) -> None:
        y = lower_rope(Emitter(rewriter), op, op.input, inverse=False)
        rewriter.replace(op, [], [y])


class LowerRopeBackward(RewritePattern):
    """rope_backward(dy): the transpose of a rotation is the rotation by −θ,
    (a, b) -> (a·cos + b·sin, b·cos − a·sin)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.RopeBackwardOp, rewriter: PatternRewriter
    ) -> None:
        y = lower_rope(Emitter(rewriter), op, op.d_out, inverse=True)
        rewriter.replace(op, [], [y])


PATTERNS = (
    LowerAttention(),
    LowerAttentionBackward(),
    LowerRope(),
    LowerRopeBackward(),
)
