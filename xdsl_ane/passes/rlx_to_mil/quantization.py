"""Lowering of rlx quantize/dequantize to MIL's (iOS17+) ops with per-tensor
scale and zero point consts."""

from __future__ import annotations

from xdsl.dialects.builtin import i8
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.passes.rlx_to_mil.emit import Emitter, element_type_of


class LowerQuantize(RewritePattern):
    """q = clamp(round(x / scale) + zero_point, −128, 127) as int8."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.QuantizeOp, rewriter: PatternRewriter) -> None:
        e = Emitter(rewriter)
        scale = e.const(op.scale.value.data, element_type_of(op.input))
        zero_point = e.const(op.zero_point.value.data, i8)
        rewriter.replace(op, mil.QuantizeOp(op.input, scale, zero_point, None, "int8"))


class LowerDequantize(RewritePattern):
    """x = (q − zero_point) · scale in the result's float type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.DequantizeOp, rewriter: PatternRewriter
    ) -> None:
        e = Emitter(rewriter)
        scale = e.const(op.scale.value.data, element_type_of(op.result))
        zero_point = e.const(op.zero_point.value.data, i8)
        rewriter.replace(op, mil.DequantizeOp(op.input, scale, zero_point))


PATTERNS = (LowerQuantize(), LowerDequantize())
