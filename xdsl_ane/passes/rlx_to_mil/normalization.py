"""Lowering of rlx normalizations and rotary embeddings to MIL."""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.mil.base import is_compile_time_constant
from xdsl_ane.dialects.mil.builders import Emitter
from xdsl_ane.dialects.typing import shape_of, str_prop


def rms_scale(e: Emitter, x: SSAValue, eps: float) -> SSAValue:
    """r = rsqrt(mean(x², last axis) + eps), keeping the last axis as 1. MIL's
    rsqrt adds its epsilon under the root, which is exactly the + eps."""
    mean_square = e(mil.ReduceMeanOp(e(mil.SquareOp(x)), [-1], keep_dims=True))
    return e(mil.RsqrtOp(mean_square, epsilon=eps))


class LowerRmsNorm(RewritePattern):
    """y = x · rsqrt(mean(x²) + eps) · γ (square, reduce_mean, rsqrt, mul, mul)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.RmsNormOp, rewriter: PatternRewriter) -> None:
        e = Emitter(rewriter)
        normalized = e(mil.MulOp(op.input, rms_scale(e, op.input, op.eps.value.data)))
        rewriter.replace(op, mil.MulOp(normalized, op.gamma))


def is_constant(value: SSAValue) -> bool:
    """Whether MIL will see `value` as a compile-time constant (params and
    constants are lowered to consts)."""
    owner = value.owner
    if isinstance(owner, rlx.ParamOp | rlx.ConstantOp):
        return True
    return is_compile_time_constant(value)


class LowerLayerNorm(RewritePattern):
    """y = (x − mean) · rsqrt(var + eps) · γ + β = MIL layer_norm over axis −1;
    MIL wants γ and β as consts, so runtime ones are applied after it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.LayerNormOp, rewriter: PatternRewriter) -> None:
        eps = op.eps.value.data
        if is_constant(op.gamma) and is_constant(op.beta):
            new = mil.LayerNormOp(op.input, op.gamma, op.beta, axes=[-1], epsilon=eps)
            rewriter.replace(op, new)
            return
        e = Emitter(rewriter)
        normalized = e(mil.LayerNormOp(op.input, axes=[-1], epsilon=eps))
        scaled = e(mil.MulOp(normalized, op.gamma))
        rewriter.replace(op, mil.AddOp(scaled, op.beta))


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


PATTERNS = (LowerRmsNorm(), LowerLayerNorm(), LowerRope(), LowerRopeBackward())
