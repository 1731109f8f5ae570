"""Lowering of rlx convolutions (conv, conv_transpose) to MIL's conv and
conv_transpose."""

from __future__ import annotations

import numpy as np
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.mil.builders import Emitter
from xdsl_ane.dialects.rlx.convolution import (
    ConvolutionOp,
    ConvParameters,
    conv_parameters,
)
from xdsl_ane.dialects.typing import element_type_of, shape_of
from xdsl_ane.locations import where
from xdsl_ane.passes.rlx_to_mil.normalization import is_constant


def mil_spatial_properties(params: ConvParameters) -> dict[str, object]:
    """strides, dilations and groups for MIL, left out where they are MIL's
    defaults (1)."""
    return {
        "strides": params.strides if any(s != 1 for s in params.strides) else None,
        "dilations": (
            params.dilations if any(d != 1 for d in params.dilations) else None
        ),
        "groups": params.groups if params.groups != 1 else None,
    }


def check_dilated_weight(op: ConvolutionOp, params: ConvParameters) -> None:
    """MIL's conv takes a dilated kernel only as a compile-time constant."""
    if any(d != 1 for d in params.dilations) and not is_constant(op.weight):
        raise PassFailedException(
            f"{where(op)}{op.name}: property 'dilations' {list(params.dilations)} "
            "needs a constant operand 'weight' (MIL's conv takes a dilated kernel "
            "only as a compile-time constant)"
        )


class LowerConv(RewritePattern):
    """out = conv(x, weight, bias) with pad_type "custom" and pad = padding
    (MIL's pad is rlx's (before, after) per spatial axis)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.ConvOp, rewriter: PatternRewriter) -> None:
        params = conv_parameters(op)
        check_dilated_weight(op, params)
        pad = params.flat_padding
        rewriter.replace(
            op,
            mil.ConvOp(
                op.input,
                op.weight,
                op.bias,
                pad_type="custom" if any(pad) else None,
                pad=pad if any(pad) else None,
                **mil_spatial_properties(params),  # type: ignore[arg-type]
            ),
        )


class LowerConvTranspose(RewritePattern):
    """out = conv_transpose(x, weight) cropped by padding (pad_type
    "custom"); output_padding extends the end of an axis: into the crop
    where the after-padding covers it (pad after − output_padding), else
    by a concat of zeros after the full result, bias added after them."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.ConvTransposeOp, rewriter: PatternRewriter
    ) -> None:
        params = conv_parameters(op)
        check_dilated_weight(op, params)
        pad: list[int] = []
        zeros: list[int] = []  # per spatial axis, appended after the crop
        for (before, after), extra in zip(params.padding, params.output_padding):
            pad += [before, max(after - extra, 0)]
            zeros.append(max(extra - after, 0))
        spatial = dict(
            pad_type="custom" if any(pad) else None,
            pad=pad if any(pad) else None,
            **mil_spatial_properties(params),
        )
        if not any(zeros):
            rewriter.replace(
                op,
                mil.ConvTransposeOp(op.input, op.weight, op.bias, **spatial),  # type: ignore[arg-type]
            )
            return
        e = Emitter(rewriter)
        out = e(mil.ConvTransposeOp(op.input, op.weight, **spatial))  # type: ignore[arg-type]
        element = element_type_of(out)
        for axis, count in enumerate(zeros, start=2):
            if count:
                shape = list(shape_of(out))
                shape[axis] = count
                filler = e.const(np.zeros(shape), element)
                out = e(mil.ConcatOp([out, filler], axis))
        if op.bias is None:
            rewriter.replace_op(op, [], [out])
            return
        c_out = shape_of(op.bias)[0]
        column = e(mil.ReshapeOp(op.bias, (c_out, *[1] * len(zeros))))
        rewriter.replace(op, mil.AddOp(out, column))


PATTERNS = (LowerConv(), LowerConvTranspose())
