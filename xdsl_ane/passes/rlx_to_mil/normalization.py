"""Lowering of rlx normalizations (rms_norm, layer_norm) to MIL."""

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
from xdsl_ane.dialects.rlx.normalization import rms_axis


def rms_scale(e: Emitter, x: SSAValue, eps: float, axis: int = -1) -> SSAValue:
    """r = rsqrt(mean(x², axis) + eps), keeping the axis as 1. MIL's rsqrt
    adds its epsilon under the root, which is exactly the + eps."""
    mean_square = e(mil.ReduceMeanOp(e(mil.SquareOp(x)), [axis], keep_dims=True))
    return e(mil.RsqrtOp(mean_square, epsilon=eps))


class LowerRmsNorm(RewritePattern):
    """y = x · rsqrt(mean(x²) + eps) · γ (square, reduce_mean, rsqrt, mul, mul)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.RmsNormOp, rewriter: PatternRewriter) -> None:
        e = Emitter(rewriter)
        r = rms_scale(e, op.input, op.eps.value.data, rms_axis(op))
        normalized = e(mil.MulOp(op.input, r))
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


PATTERNS = (LowerRmsNorm(), LowerLayerNorm())
