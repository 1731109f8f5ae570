"""Lowering of rlx sources and elementwise ops to MIL.

Most rlx elementwise ops have a MIL op of the same meaning; the rest are
short formulas (neg = x·(−1), reciprocal = 1 / x)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.dense import dense_to_numpy
from xdsl_ane.dialects.mil.base import mil_dtype_name
from xdsl_ane.dialects.mil.builders import Emitter, const_op
from xdsl_ane.dialects.typing import element_type_of, shape_of
from xdsl_ane.passes.rlx_to_mil.shape import broadcast_to

# rlx unary op -> a function building the MIL op(s) of the same meaning.
UNARY = {
    rlx.ReluOp: lambda x: mil.ReluOp(x),
    rlx.GeluOp: lambda x: mil.GeluOp(x, mode="EXACT"),
    rlx.GeluTanhOp: lambda x: mil.GeluOp(x, mode="TANH_APPROXIMATION"),
    rlx.SiluOp: lambda x: mil.SiluOp(x),
    rlx.SigmoidOp: lambda x: mil.SigmoidOp(x),
    rlx.TanhOp: lambda x: mil.TanhOp(x),
    rlx.ExpOp: lambda x: mil.ExpOp(x),
    rlx.SqrtOp: lambda x: mil.SqrtOp(x),
    rlx.AbsOp: lambda x: mil.AbsOp(x),
    rlx.SinOp: lambda x: mil.SinOp(x),
    rlx.CosOp: lambda x: mil.CosOp(x),
    rlx.ErfOp: lambda x: mil.ErfOp(x),
    rlx.FloorOp: lambda x: mil.FloorOp(x),
    rlx.RoundOp: lambda x: mil.RoundOp(x),
}

BINARY = {
    rlx.AddOp: mil.AddOp,
    rlx.SubOp: mil.SubOp,
    rlx.MulOp: mil.MulOp,
    rlx.DivOp: mil.RealDivOp,
    rlx.MaxOp: mil.MaximumOp,
    rlx.MinOp: mil.MinimumOp,
    rlx.PowOp: mil.PowOp,
}

COMPARE = {
    "eq": mil.EqualOp,
    "ne": mil.NotEqualOp,
    "lt": mil.LessOp,
    "le": mil.LessEqualOp,
    "gt": mil.GreaterOp,
    "ge": mil.GreaterEqualOp,
}

TINY_EPSILON = mil.LogOp.input_default("epsilon")
"""A negligible ε for MIL's log(x + ε) and 1/sqrt(x + ε): MIL log's own
default, 1e-45 (fp32's smallest subnormal once rounded), which changes no
normal value beyond rounding."""


class LowerConstant(RewritePattern):
    """rlx.constant -> mil.const val."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.ConstantOp, rewriter: PatternRewriter) -> None:
        value = op.value
        rewriter.replace(
            op, const_op(dense_to_numpy(value), element_type_of(op.result))
        )


class LowerParam(RewritePattern):
    """rlx.param "name" -> mil.const weight "name" (data from the weights file)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.ParamOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(
            op, mil.ConstOp.from_weight(op.param_name.data, op.result.type)
        )


class LowerUnary(RewritePattern):
    """y = f(x) for f in relu, gelu (exact / tanh), silu, sigmoid, tanh, exp,
    sqrt, abs, sin, cos, erf, floor, round: the MIL op of the same name."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        build = UNARY.get(type(op))
        if build is not None:
            rewriter.replace(op, build(op.operands[0]))


class LowerLog(RewritePattern):
    """log(x) = MIL log(x, ε) with ε negligible (MIL adds ε before the log)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.LogOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, mil.LogOp(op.input, epsilon=TINY_EPSILON))


class LowerRsqrt(RewritePattern):
    """rsqrt(x) = MIL rsqrt(x, ε) = 1/sqrt(x + ε) with ε negligible."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.RsqrtOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, mil.RsqrtOp(op.input, epsilon=TINY_EPSILON))


class LowerNeg(RewritePattern):
    """−x = x · (−1)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.NegOp, rewriter: PatternRewriter) -> None:
        e = Emitter(rewriter)
        rewriter.replace(op, mil.MulOp(op.input, e.scalar_like(-1.0, op.input)))


class LowerReciprocal(RewritePattern):
    """1/x = real_div(1, x) (MIL's inverse adds an ε of 1e-4 by default)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.ReciprocalOp, rewriter: PatternRewriter
    ) -> None:
        e = Emitter(rewriter)
        rewriter.replace(op, mil.RealDivOp(e.scalar_like(1.0, op.input), op.input))


class LowerBinary(RewritePattern):
    """z = x ∘ y with numpy broadcasting: add, sub, mul, real_div, maximum,
    minimum, pow."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        build = BINARY.get(type(op))
        if build is not None:
            rewriter.replace(op, build(op.operands[0], op.operands[1]))


class LowerCompare(RewritePattern):
    """compare{predicate} -> equal / not_equal / less / less_equal / greater /
    greater_equal."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.CompareOp, rewriter: PatternRewriter) -> None:
        build = COMPARE[op.predicate.data]
        rewriter.replace(op, build(op.lhs, op.rhs))


class LowerWhere(RewritePattern):
    """where(c, a, b) = select(cond=c, a=a, b=b). MIL takes select's shape
    from a and b only, so when the condition is wider than both, a is first
    broadcast to the result shape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.WhereOp, rewriter: PatternRewriter) -> None:
        on_true = op.on_true
        result = shape_of(op.result)
        if broadcast_shape(shape_of(op.on_true), shape_of(op.on_false)) != result:
            on_true = broadcast_to(Emitter(rewriter), on_true, result)
        rewriter.replace(op, mil.SelectOp(op.cond, on_true, op.on_false))


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(a, b))


class LowerCast(RewritePattern):
    """cast -> MIL cast(dtype) with MIL's dtype name of the result type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.CastOp, rewriter: PatternRewriter) -> None:
        target = element_type_of(op.result)
        if target == element_type_of(op.input):
            rewriter.replace(op, [], [op.input])
            return
        rewriter.replace(op, mil.CastOp(op.input, mil_dtype_name(target)))


PATTERNS = (
    LowerConstant(),
    LowerParam(),
    LowerUnary(),
    LowerLog(),
    LowerRsqrt(),
    LowerNeg(),
    LowerReciprocal(),
    LowerBinary(),
    LowerCompare(),
    LowerWhere(),
    LowerCast(),
)
