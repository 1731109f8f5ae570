"""Lowering of rlx quantize/dequantize to MIL's (iOS17+) ops: per-tensor
scale and zero point consts, or per-channel / per-block `scales` (a tensor
of the data's rank, repeated over blocks).

Per-block parameters have no MIL quantize/dequantize form, so the data is
viewed with each blocked axis split in two, [.., S_i, B_i, ..], where the
scales, viewed as [.., S_i, 1, ..], broadcast; the view is undone after.
A dequantize of constant int8 data by constant scales of the result's
dtype is a weight: `constexpr_blockwise_shift_scale` (iOS18), which keeps
it compressed on the device."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i8
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.mil.builders import Emitter
from xdsl_ane.dialects.typing import element_type_of, int_prop, shape_of
from xdsl_ane.passes.rlx_to_mil.normalization import is_constant


def block_views(
    data: tuple[int, ...], scales: tuple[int, ...]
) -> tuple[list[int], list[int]] | None:
    """The shapes that make `scales` broadcast against `data` blockwise:
    each axis with 1 < S < D becomes [S, D / S] in the data and [S, 1] in
    the scales. None when they broadcast as they are."""
    if all(s in (1, d) for d, s in zip(data, scales)):
        return None
    data_view: list[int] = []
    scale_view: list[int] = []
    for d, s in zip(data, scales):
        if 1 < s < d:
            data_view += [s, d // s]
            scale_view += [s, 1]
        else:
            data_view.append(d)
            scale_view.append(s)
    return data_view, scale_view


def blockwise(e: Emitter, compute, data: SSAValue, scales: SSAValue) -> SSAValue:
    """`compute(data, scales)` with the scales repeated over their blocks."""
    shape = shape_of(data)
    views = block_views(shape, shape_of(scales))
    if views is None:
        return compute(data, scales)
    data_view, scale_view = views
    result = compute(
        e(mil.ReshapeOp(data, data_view)), e(mil.ReshapeOp(scales, scale_view))
    )
    return e(mil.ReshapeOp(result, list(shape)))


def scales_as(e: Emitter, scales: SSAValue, like: SSAValue) -> SSAValue:
    """The scales in `like`'s float type."""
    if element_type_of(scales) == element_type_of(like):
        return scales
    return e(mil.CastOp(scales, mil.mil_dtype_name(element_type_of(like))))


class LowerQuantize(RewritePattern):
    """q = clamp(round(x / scale) + zero_point, −128, 127) as int8; with
    per-block scales, x / scales (blockwise) then MIL's quantize with scale
    1, which rounds half to even and clamps."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.QuantizeOp, rewriter: PatternRewriter) -> None:
        e = Emitter(rewriter)
        float_type = element_type_of(op.input)
        if op.scales is None:
            scale = e.const(op.scale.value.data, float_type)  # type: ignore[union-attr]
            x = op.input
        else:
            scales = scales_as(e, op.scales, op.input)
            x = blockwise(e, lambda x, s: e(mil.RealDivOp(x, s)), op.input, scales)
            scale = e.const(1.0, float_type)
        zero_point = e.const(int_prop(op.properties, "zero_point"), i8)
        rewriter.replace(op, mil.QuantizeOp(x, scale, zero_point, None, "int8"))


class LowerDequantize(RewritePattern):
    """x = (q − zero_point) · scale in the result's float type; constant
    data and scales of that type are a `constexpr_blockwise_shift_scale`
    (offset: the zero point), other per-block scales a cast, a sub and a
    blockwise mul."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.DequantizeOp, rewriter: PatternRewriter
    ) -> None:
        e = Emitter(rewriter)
        float_type = element_type_of(op.result)
        zp = int_prop(op.properties, "zero_point")
        if op.scales is None:
            scale = e.const(op.scale.value.data, float_type)  # type: ignore[union-attr]
            zero_point = e.const(zp, i8)
            rewriter.replace(op, mil.DequantizeOp(op.input, scale, zero_point))
            return
        if (
            is_constant(op.input)
            and is_constant(op.scales)
            and element_type_of(op.scales) == float_type
        ):
            offset = None
            if zp:
                offset = e.const(np.full(shape_of(op.scales), zp, np.int8), i8)
            rewriter.replace(
                op, mil.ConstexprBlockwiseShiftScaleOp(op.input, op.scales, offset)
            )
            return
        dtype = mil.mil_dtype_name(float_type)
        centered = e(mil.CastOp(op.input, dtype))
        if zp:
            centered = e(mil.SubOp(centered, e.const(zp, float_type)))
        scales = scales_as(e, op.scales, op.result)
        product = blockwise(e, lambda x, s: e(mil.MulOp(x, s)), centered, scales)
        rewriter.replace(op, [], [product])


PATTERNS = (LowerQuantize(), LowerDequantize())
