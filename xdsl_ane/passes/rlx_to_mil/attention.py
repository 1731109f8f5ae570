"""Lowering of rlx attention and its backward to MIL, decomposed into matmul,
scale, mask, softmax and matmul (not MIL's scaled_dot_product_attention,
whose mask the ANE has been seen to ignore).

Both expect as many key/value heads as query heads: the conversion pass runs
the `rlx-gqa-tile` patterns first. Masks are additive constants that stay
finite in fp16. A query row that sees no key at all (causal with S > Skv) is
zeroed by a constant row mask, matching the rlx semantics of such rows."""

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


PATTERNS = (LowerAttention(), LowerAttentionBackward())
