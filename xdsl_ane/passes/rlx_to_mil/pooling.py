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
        "pad_type": "custom" if custom else None,
        "pad": pad if custom else None,
    }


class LowerMaxPool(RewritePattern):
    """y = MIL max_pool(x) with rlx's kernel, strides and padding (padding
    and overhang never win in either)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.MaxPoolOp, rewriter: PatternRewriter) -> None:
        sizes = shape_of(op.input)[2:]
        args = pool_arguments(op.windows(), sizes)
        rewriter.replace(op, mil.MaxPoolOp(op.input, **args))


class LowerAvgPool(RewritePattern):
    """y = Σ window / count. Without count_include_pad, MIL's
    exclude_padding_from_average counts x's elements only, as torch does,
    overhang or not. With it, MIL counts the whole (extended) padded window
    = Π kernel, which is torch's count unless a ceil_mode overhang reaches
    past the padding: then y = avg_pool(x) · (Π kernel / count), the ratio a
    const map over the output positions (or, with no padding, where both
    counts are x's elements, the excluding form)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.AvgPoolOp, rewriter: PatternRewriter) -> None:
        windows = op.windows()
        sizes = shape_of(op.input)[2:]
        args = pool_arguments(windows, sizes)
        include = op.includes_padding()
        overhang = any(windows.overhang(sizes))
        padded = any(b or a for b, a in windows.padding)
        exclude = not include or (overhang and not padded)
        pooled = mil.AvgPoolOp(
            op.input, **args, exclude_padding_from_average=exclude or None
        )
        if exclude or not overhang:
            rewriter.replace(op, pooled)
            return
        e = Emitter(rewriter)
        out = shape_of(op.result)[2:]
        counts = pool_divisor(
            sizes, windows.kernel, windows.strides, windows.padding, out, True
        )
        ratio = np.prod(windows.kernel) / counts
        scale = e.const(ratio, element_type_of(op.input))
        rewriter.replace(op, mil.MulOp(e(pooled), scale))


PATTERNS = (LowerMaxPool(), LowerAvgPool())
