"""Lowering of rlx pooling (max_pool, avg_pool) to MIL.

MIL's own ceil_mode follows another rule than torch's (it keeps a last
window that starts in the after-padding only when there is padding, and
wants symmetric padding), so it is never emitted: a ceil_mode overhang
becomes extra after-padding of a floor-mode pooling, which gives the same
windows. Max pooling ignores padding either way; average pooling keeps
torch's divisors as below.
"""

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
from xdsl_ane.dialects.rlx.pooling import PoolWindows
from xdsl_ane.dialects.typing import element_type_of, shape_of
from xdsl_ane.interpreter.spatial import pool_divisor


def mil_padding(windows: PoolWindows, sizes: tuple[int, ...]) -> list[int]:
    """MIL's `pad` (before/after per spatial axis) of a floor-mode pooling
    with rlx's windows: the padding, and a ceil_mode overhang after it."""
    pad: list[int] = []
    for (before, after), extra in zip(windows.padding, windows.overhang(sizes)):
        pad += [before, after + extra]
    return pad


def pool_arguments(windows: PoolWindows, sizes: tuple[int, ...]) -> dict:
    pad = mil_padding(windows, sizes)
    custom = any(pad)
    return {
        "kernel_sizes": windows.kernel,
        "strides": windows.strides,
        "pad_type": "custom" if custom else "valid",
        "pad": pad if custom else None,
    }


def on_image(
    e: Emitter, op: rlx.PoolOp
) -> tuple[SSAValue, PoolWindows, tuple[int, ...]]:
    """The op's input, windows and spatial sizes as a 2-D pooling: a 1-D
    signal [N, C, W] becomes [N, C, 1, W] with windows of height 1, the
    ANE's form of a signal (mil-ane-layout keeps it without conversions)."""
    windows, sizes = op.windows(), shape_of(op.input)[2:]
    if len(sizes) == 2:
        return op.input, windows, sizes
    n, c, w = shape_of(op.input)
    image = e(mil.ReshapeOp(op.input, [n, c, 1, w]))
    return (
        image,
        PoolWindows(
            (1, *windows.kernel),
            (1, *windows.strides),
            ((0, 0), *windows.padding),
            windows.ceil_mode,
        ),
        (1, *sizes),
    )


def from_image(e: Emitter, y: SSAValue, op: rlx.PoolOp) -> SSAValue:
    """The pooled image back in the op's result shape (a signal's)."""
    shape = shape_of(op.result)
    return y if shape_of(y) == shape else e(mil.ReshapeOp(y, shape))


class LowerMaxPool(RewritePattern):
    """y = MIL max_pool(x) with rlx's kernel, strides and padding (padding
    and overhang never win in either); a signal pools as an image of
    height 1."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.MaxPoolOp, rewriter: PatternRewriter) -> None:
        e = Emitter(rewriter)
        x, windows, sizes = on_image(e, op)
        y = e(mil.MaxPoolOp(x, **pool_arguments(windows, sizes)))
        rewriter.replace(op, [], [from_image(e, y, op)])


class LowerAvgPool(RewritePattern):
    """y = Σ window / count. Without count_include_pad, MIL's
    exclude_padding_from_average counts x's elements only, as torch does,
    overhang or not. With it, MIL counts the whole (extended) padded window
    = Π kernel, which is torch's count unless a ceil_mode overhang reaches
    past the padding: then y = avg_pool(x) · (Π kernel / count), the ratio a
    const map over the output positions (or, with no padding, where both
    counts are x's elements, the excluding form). A signal pools as an image
    of height 1."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.AvgPoolOp, rewriter: PatternRewriter) -> None:
        e = Emitter(rewriter)
        x, windows, sizes = on_image(e, op)
        args = pool_arguments(windows, sizes)
        include = op.includes_padding()
        overhang = any(windows.overhang(sizes))
        padded = any(b or a for b, a in windows.padding)
        exclude = not include or (overhang and not padded)
        y = e(mil.AvgPoolOp(x, **args, exclude_padding_from_average=exclude or None))
        if include and overhang and padded:
            out = shape_of(y)[2:]
            counts = pool_divisor(
                sizes, windows.kernel, windows.strides, windows.padding, out, True
            )
            ratio = np.prod(windows.kernel) / counts
            y = e(mil.MulOp(y, e.const(ratio, element_type_of(op.input))))
        rewriter.replace(op, [], [from_image(e, y, op)])


PATTERNS = (LowerMaxPool(), LowerAvgPool())
