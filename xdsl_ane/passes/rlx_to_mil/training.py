"""Lowering of rlx backward ops (RMSNorm, activations) to MIL."""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.mil.builders import Emitter
from xdsl_ane.dialects.rlx.normalization import rms_axis
from xdsl_ane.dialects.typing import ints_prop, shape_of
from xdsl_ane.interpreter.numerics import (
    GELU_TANH_CUBIC,
    INV_SQRT_2,
    INV_SQRT_2PI,
    SQRT_2_OVER_PI,
)
from xdsl_ane.passes.rlx_to_mil.normalization import rms_scale


class LowerRmsNormBackwardInput(RewritePattern):
    """For y = x·r·γ with r = rsqrt(mean(x²) + eps), n = x·r and g = γ·dy:
    dx = r·(g − x·r²·mean(x·g)) = r·(g − n·mean(n·g)), the second form
    free of r², which overflows fp16 for rows near zero."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.RmsNormBackwardInputOp, rewriter: PatternRewriter
    ) -> None:
        e = Emitter(rewriter)
        axis = rms_axis(op)
        r = rms_scale(e, op.input, op.eps.value.data, axis)
        n = e(mil.MulOp(op.input, r))
        g = e(mil.MulOp(op.gamma, op.d_out))
        mean_ng = e(mil.ReduceMeanOp(e(mil.MulOp(n, g)), [axis], keep_dims=True))
        correction = e(mil.MulOp(n, mean_ng))
        rewriter.replace(op, mil.MulOp(r, e(mil.SubOp(g, correction))))


class LowerRmsNormBackwardGamma(RewritePattern):
    """dγ = Σ of dy · x · rsqrt(mean(x², axis) + eps) over the axes γ
    broadcasts along: the leading axes for γ [D] (dropped), those where
    `gamma_shape` is 1 otherwise (kept)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.RmsNormBackwardGammaOp, rewriter: PatternRewriter
    ) -> None:
        e = Emitter(rewriter)
        x = op.input
        r = rms_scale(e, x, op.eps.value.data, rms_axis(op))
        contribution = e(mil.MulOp(e(mil.MulOp(x, r)), op.d_out))
        shape = shape_of(x)
        gamma_shape = ints_prop(op.properties, "gamma_shape")
        if gamma_shape is None:
            summed, keep = list(range(len(shape) - 1)), False
        else:
            summed = [i for i, n in enumerate(gamma_shape) if n == 1 and shape[i] != 1]
            keep = True
        if not summed:
            rewriter.replace(op, [], [contribution])
            return
        rewriter.replace(op, mil.ReduceSumOp(contribution, summed, keep_dims=keep))


def activation_derivative(e: Emitter, kind: str, x: SSAValue) -> SSAValue:
    """f'(x) for the activations of rlx.activation_backward (not relu)."""

    def c(value: float) -> SSAValue:
        return e.scalar_like(value, x)

    if kind == "sigmoid":  # σ' = σ(1 − σ)
        s = e(mil.SigmoidOp(x))
        return e(mil.MulOp(s, e(mil.SubOp(c(1.0), s))))
    if kind == "tanh":  # tanh' = 1 − tanh²
        return e(mil.SubOp(c(1.0), e(mil.SquareOp(e(mil.TanhOp(x))))))
    if kind == "silu":  # (xσ)' = σ(1 + x(1 − σ))
        s = e(mil.SigmoidOp(x))
        inner = e(mil.AddOp(c(1.0), e(mil.MulOp(x, e(mil.SubOp(c(1.0), s))))))
        return e(mil.MulOp(s, inner))
    if (
        kind == "gelu"
    ):  # (xΦ)' = Φ(x) + x·φ(x), Φ = (1 + erf(x/√2))/2, φ = e^(−x²/2)/√(2π)
        scaled = e(mil.MulOp(x, c(INV_SQRT_2)))
        cdf = e(mil.MulOp(c(0.5), e(mil.AddOp(c(1.0), e(mil.ErfOp(scaled))))))
        gauss = e(mil.ExpOp(e(mil.MulOp(e(mil.SquareOp(x)), c(-0.5)))))
        pdf = e(mil.MulOp(gauss, c(INV_SQRT_2PI)))
        return e(mil.AddOp(cdf, e(mil.MulOp(x, pdf))))
    if kind == "gelu_tanh":
        # y = x/2·(1 + t), t = tanh(u), u = √(2/π)(x + a·x³):
        # y' = (1 + t)/2 + x/2·(1 − t²)·√(2/π)(1 + 3a·x²)
        x2 = e(mil.SquareOp(x))
        u = e(
            mil.MulOp(
                e(
                    mil.MulOp(
                        x, e(mil.AddOp(c(1.0), e(mil.MulOp(x2, c(GELU_TANH_CUBIC)))))
                    )
                ),
                c(SQRT_2_OVER_PI),
            )
        )
        t = e(mil.TanhOp(u))
        du = e(
            mil.MulOp(
                e(mil.AddOp(c(1.0), e(mil.MulOp(x2, c(3 * GELU_TANH_CUBIC))))),
                c(SQRT_2_OVER_PI),
            )
        )
        sech2 = e(mil.SubOp(c(1.0), e(mil.SquareOp(t))))
        left = e(mil.MulOp(c(0.5), e(mil.AddOp(c(1.0), t))))
        right = e(mil.MulOp(e(mil.MulOp(e(mil.MulOp(x, c(0.5))), sech2)), du))
        return e(mil.AddOp(left, right))
    raise AssertionError(f"unknown activation {kind}")


class LowerActivationBackward(RewritePattern):
    """dx = f'(x) · dy; for relu dx = (x > 0 ? dy : 0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.ActivationBackwardOp, rewriter: PatternRewriter
    ) -> None:
        e = Emitter(rewriter)
        kind = op.kind.data
        if kind == "relu":
            positive = e(mil.GreaterOp(op.input, e.scalar_like(0.0, op.input)))
            zero = e.scalar_like(0.0, op.d_out)
            rewriter.replace(op, mil.SelectOp(positive, op.d_out, zero))
            return
        derivative = activation_derivative(e, kind, op.input)
        rewriter.replace(op, mil.MulOp(derivative, op.d_out))


PATTERNS = (
    LowerRmsNormBackwardInput(),
    LowerRmsNormBackwardGamma(),
    LowerActivationBackward(),
)
