"""Lowering of the rlx vision activations to MIL: leaky_relu and elu are
MIL ops of the same name, hardsigmoid is MIL's sigmoid_hard, hardswish
x · sigmoid_hard(x) (as coremltools writes it) and clamp MIL's clip."""

from __future__ import annotations

from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.mil.builders import Emitter
from xdsl_ane.dialects.typing import float_prop

HARD_SLOPE, HARD_OFFSET = 1 / 6, 0.5
"""min(max(x + 3, 0), 6) / 6 = min(max(x/6 + ½, 0), 1): sigmoid_hard's
alpha and beta."""


class LowerHardsigmoid(RewritePattern):
    """y = sigmoid_hard(x, 1/6, ½)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.HardsigmoidOp, rewriter: PatternRewriter
    ) -> None:
        rewriter.replace(op, mil.SigmoidHardOp(op.input, HARD_SLOPE, HARD_OFFSET))


class LowerHardswish(RewritePattern):
    """y = x · sigmoid_hard(x, 1/6, ½)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.HardswishOp, rewriter: PatternRewriter) -> None:
        e = Emitter(rewriter)
        gate = e(mil.SigmoidHardOp(op.input, HARD_SLOPE, HARD_OFFSET))
        rewriter.replace(op, mil.MulOp(op.input, gate))


class LowerLeakyRelu(RewritePattern):
    """y = leaky_relu(x, alpha)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.LeakyReluOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, mil.LeakyReluOp(op.input, op.alpha_of(op)))


class LowerElu(RewritePattern):
    """y = elu(x, alpha)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.EluOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, mil.EluOp(op.input, op.alpha_of(op)))


class LowerClamp(RewritePattern):
    """y = clip(x, min, max) with both bounds (MIL's clip needs min < max);
    one bound, or min = max, is maximum(x, min) and/or minimum(·, max)
    (max(x, 0) as relu)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.ClampOp, rewriter: PatternRewriter) -> None:
        low = float_prop(op.properties, "min")
        high = float_prop(op.properties, "max")
        if low is not None and high is not None and low < high:
            rewriter.replace(op, mil.ClipOp(op.input, low, high))
            return
        e = Emitter(rewriter)
        y = op.input
        if low == 0.0 and high is None:
            y = e(mil.ReluOp(y))
        elif low is not None:
            y = e(mil.MaximumOp(y, e.scalar_like(low, y)))
        if high is not None:
            y = e(mil.MinimumOp(y, e.scalar_like(high, y)))
        rewriter.replace(op, [], [y])


PATTERNS = (
    LowerHardsigmoid(),
    LowerHardswish(),
    LowerLeakyRelu(),
    LowerElu(),
    LowerClamp(),
)
