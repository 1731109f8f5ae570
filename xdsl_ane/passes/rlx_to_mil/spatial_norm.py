"""Lowering of rlx batch_norm and group_norm to MIL.

MIL wants the statistics and affine parameters of its norms as consts;
runtime ones are applied with elementwise ops, reshaped to `[C, 1, ...]`
against `[N, C, ...]`.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.mil.builders import Emitter
from xdsl_ane.dialects.typing import element_type_of, shape_of
from xdsl_ane.passes.rlx_to_mil.normalization import is_constant


def per_channel(e: Emitter, p: SSAValue, rank: int) -> SSAValue:
    """A `[C]` value as `[C, 1, ...]`, broadcasting against `[N, C, ...]`."""
    return e(mil.ReshapeOp(p, [shape_of(p)[0], *([1] * (rank - 2))]))


def affine(
    e: Emitter, y: SSAValue, gamma: SSAValue | None, beta: SSAValue | None
) -> SSAValue:
    """y · gamma + beta per channel, skipping an absent one. Const
    parameters go into one MIL batch_norm of mean 0, variance 1 and
    epsilon 0, which takes them as [C] without reshapes; runtime ones are
    a mul and an add."""
    present = [p for p in (gamma, beta) if p is not None]
    if not present:
        return y
    rank = len(shape_of(y))
    if all_constant(*present):
        c, element = shape_of(y)[1], element_type_of(present[0])
        mean = e.const(np.zeros(c), element)
        variance = e.const(np.ones(c), element)
        return e(mil.BatchNormOp(y, mean, variance, gamma, beta, epsilon=0.0))
    if gamma is not None:
        y = e(mil.MulOp(y, per_channel(e, gamma, rank)))
    if beta is not None:
        y = e(mil.AddOp(y, per_channel(e, beta, rank)))
    return y


def on_image(e: Emitter, x: SSAValue) -> SSAValue:
    """A signal [N, C, W] as the image [N, C, 1, W] (the ANE's form of a
    signal, which mil-ane-layout keeps without conversions); an image as
    it is."""
    shape = shape_of(x)
    if len(shape) == 4:
        return x
    n, c, w = shape
    return e(mil.ReshapeOp(x, [n, c, 1, w]))


def from_image(e: Emitter, y: SSAValue, shape: tuple[int, ...]) -> SSAValue:
    return y if shape_of(y) == shape else e(mil.ReshapeOp(y, shape))


def all_constant(*values: SSAValue | None) -> bool:
    return all(v is None or is_constant(v) for v in values)


class LowerBatchNorm(RewritePattern):
    """y = (x − mean) / sqrt(var + eps) · γ + β = MIL batch_norm, when the
    statistics and parameters are consts (a signal as an image of height
    1); otherwise
    (x − mean) · rsqrt(var, eps) · γ + β elementwise (MIL's rsqrt adds its
    epsilon under the root)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.BatchNormOp, rewriter: PatternRewriter) -> None:
        eps = op.eps()
        e = Emitter(rewriter)
        if all_constant(op.mean, op.var, op.gamma, op.beta):
            x = on_image(e, op.input)
            y = e(mil.BatchNormOp(x, op.mean, op.var, op.gamma, op.beta, epsilon=eps))
            rewriter.replace(op, [], [from_image(e, y, shape_of(op.input))])
            return
        rank = len(shape_of(op.input))
        centered = e(mil.SubOp(op.input, per_channel(e, op.mean, rank)))
        scale = per_channel(e, e(mil.RsqrtOp(op.var, epsilon=eps)), rank)
        y = affine(e, e(mil.MulOp(centered, scale)), op.gamma, op.beta)
        rewriter.replace(op, [], [y])


class LowerGroupNorm(RewritePattern):
    """y = (x − mean_g) / sqrt(var_g + eps) · γ + β. groups = C is MIL
    instance_norm (γ and β inside when const; a signal as an image of
    height 1); groups = 1 is layer_norm over
    every axis but N; otherwise x is viewed as [N, G, C/G, Π spatial] and
    layer-normed over its last two axes: reshape, layer_norm, reshape, then
    γ and β per channel (`affine`: MIL's norms have no per-channel
    parameters of a group); coremltools' torch frontend spends 10 ops."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.GroupNormOp, rewriter: PatternRewriter) -> None:
        eps = op.eps()
        shape = shape_of(op.input)
        n, c = shape[:2]
        groups = op.groups.value.data
        e = Emitter(rewriter)
        if groups == c:
            x = on_image(e, op.input)
            if all_constant(op.gamma, op.beta):
                y = e(mil.InstanceNormOp(x, op.gamma, op.beta, epsilon=eps))
                rewriter.replace(op, [], [from_image(e, y, shape)])
                return
            y = from_image(e, e(mil.InstanceNormOp(x, epsilon=eps)), shape)
        elif groups == 1:
            axes = list(range(1, len(shape)))
            y = e(mil.LayerNormOp(op.input, axes=axes, epsilon=eps))
        else:
            spatial = math.prod(shape[2:])
            grouped = e(mil.ReshapeOp(op.input, [n, groups, c // groups, spatial]))
            normed = e(mil.LayerNormOp(grouped, axes=[2, 3], epsilon=eps))
            y = e(mil.ReshapeOp(normed, shape))
        rewriter.replace(op, [], [affine(e, y, op.gamma, op.beta)])


PATTERNS = (LowerBatchNorm(), LowerGroupNorm())
