"""Lowering of rlx resampling (upsample, pad, pixel_shuffle,
pixel_unshuffle) to MIL.

MIL's upsample ops take integer scale factors on the last two axes, so an
upsample to an integer multiple of each spatial size is
`upsample_nearest_neighbor` (torch's nearest index ⌊d·n/m⌋ is then ⌊d/k⌋;
power-of-two scales in steps of at most 2×, the ANE's limit) or one
`upsample_bilinear` (whose grid is torch's for both align_corners);
a 1-D input [N, C, W] is resampled on its last two axes with the C scale 1,
which every grid leaves unchanged. MIL has no bicubic resampling, and other
sizes (fractional or downsampling ratios) have no integer scale: those are
y = A_H · x · A_Wᵀ, two matmuls with constant interpolation matrices
(`xdsl_ane.interpreter.resampling.interpolation_matrix`) at the static
size, the same weights torch applies, so exact up to rounding.
pixel_shuffle and pixel_unshuffle are MIL's ops of those names, whose
channel order is torch's (a factor of 1 is the input itself).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.mil.builders import Emitter
from xdsl_ane.dialects.rlx.resampling import pad_parameters, upsample_parameters
from xdsl_ane.dialects.typing import element_type_of, int_prop, shape_of
from xdsl_ane.interpreter.resampling import interpolation_matrix, nearest_indices
from xdsl_ane.locations import where


def integer_scales(mode: str, sizes: tuple[int, ...], size: tuple[int, ...]):
    """The (height, width) scale factors of MIL's upsample ops for the
    spatial `sizes` resampled to `size`, or None where some ratio is no
    integer ≥ 1 (or, for nearest, torch's index differs from ⌊d/k⌋)."""
    scales = []
    for n, m in zip(sizes, size):
        if m % n:
            return None
        k = m // n
        if mode == "nearest" and not np.array_equal(
            nearest_indices(n, m), np.arange(m) // k
        ):
            return None
        scales.append(k)
    return (1, *scales) if len(scales) == 1 else tuple(scales)


MAX_STEP = 2
"""The ANE upsamples at most 2× per op (ANE_FACTS)."""


def nearest_steps(scales: tuple[int, int]) -> list[tuple[int, int]]:
    """Nearest-neighbour (height, width) scales as steps of at most 2× where
    each scale is a power of two (⌊⌊d/2⌋/(k/2)⌋ = ⌊d/k⌋, so exact), else one
    step."""
    if not all(k & (k - 1) == 0 for k in scales):
        return [scales]
    steps = []
    remaining = list(scales)
    while any(k > 1 for k in remaining) or not steps:
        step = tuple(min(k, MAX_STEP) for k in remaining)
        steps.append(step)
        remaining = [k // s for k, s in zip(remaining, step)]
    return steps


def interpolate_axis(
    e: Emitter, x: SSAValue, matrix: np.ndarray, axis: int
) -> SSAValue:
    """A · x along the last (axis −1: x · Aᵀ) or second-to-last (axis −2:
    A · x, A broadcast over the batch axes) axis of x."""
    element = element_type_of(x)
    if axis == -1:
        return e(mil.MatmulOp(x, e.const(matrix.T, element)))
    return e(mil.MatmulOp(e.const(matrix, element), x))


class LowerUpsample(RewritePattern):
    """y = upsample(x): MIL's upsample op at integer scales, else
    x · A_Wᵀ and A_H · (…) with the interpolation matrices (an axis whose
    matrix is the identity is skipped)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.UpsampleOp, rewriter: PatternRewriter) -> None:
        mode, size, align_corners = upsample_parameters(
            op.name, op.properties, op.input.type
        )
        sizes = shape_of(op.input)[2:]
        scales = None if mode == "bicubic" else integer_scales(mode, sizes, size)
        if scales is not None and scales == (1, 1):
            rewriter.replace(op, [], [op.input])  # every grid is the identity
            return
        if scales is not None and mode == "nearest":
            e = Emitter(rewriter)
            y = op.input
            for step in nearest_steps(scales):
                y = e(mil.UpsampleNearestNeighborOp(y, *step))
            rewriter.replace(op, [], [y])
            return
        if scales is not None:
            rewriter.replace(
                op, mil.UpsampleBilinearOp(op.input, *scales, align_corners)
            )
            return
        e = Emitter(rewriter)
        y = op.input
        spatial = len(sizes)
        for i, (n, m) in enumerate(zip(sizes, size)):
            matrix = interpolation_matrix(mode, n, m, align_corners)
            if n == m and np.array_equal(matrix, np.eye(n)):
                continue
            y = interpolate_axis(e, y, matrix, i - spatial)
        rewriter.replace(op, [], [y])


REFLECTING = ("reflect", "replicate")


class LowerPad(RewritePattern):
    """y = pad(x): MIL's pad with the (before, after) pairs of the last
    axes from the first padded one on (MIL pads the last len(pad)/2 axes).
    reflect and replicate pad at most the last two axes, the image axes
    Core ML's padding layer has."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.PadOp, rewriter: PatternRewriter) -> None:
        pairs, mode, value = pad_parameters(op.name, op.properties, op.input.type)
        padded = [i for i, pair in enumerate(pairs) if pair != (0, 0)]
        if not padded:
            rewriter.replace(op, [], [op.input])
            return
        first = padded[0]
        if mode in REFLECTING and first < len(pairs) - 2:
            raise PassFailedException(
                f'{where(op)}{op.name}: mode "{mode}" pads axis {first}; MIL pads '
                f"{mode} on the last two axes only"
            )
        flat = [p for pair in pairs[first:] for p in pair]
        rewriter.replace(
            op,
            mil.PadOp(
                op.input,
                flat,
                mode=None if mode == "constant" else mode,
                constant_val=value if mode == "constant" and value != 0.0 else None,
            ),
        )


class LowerPixelShuffle(RewritePattern):
    """pixel_shuffle(r) -> MIL pixel_shuffle (upscale_factor r); r = 1 is
    the input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.PixelShuffleOp, rewriter: PatternRewriter
    ) -> None:
        factor = int_prop(op.properties, "upscale_factor")
        if factor == 1:
            rewriter.replace(op, [], [op.input])
        else:
            rewriter.replace(op, mil.PixelShuffleOp(op.input, factor))


class LowerPixelUnshuffle(RewritePattern):
    """pixel_unshuffle(r) -> MIL pixel_unshuffle (downscale_factor r, a
    uint32 in MIL); r = 1 is the input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.PixelUnshuffleOp, rewriter: PatternRewriter
    ) -> None:
        factor = int_prop(op.properties, "downscale_factor")
        if factor == 1:
            rewriter.replace(op, [], [op.input])
        else:
            rewriter.replace(op, mil.PixelUnshuffleOp(op.input, factor))


PATTERNS = (LowerUpsample(), LowerPad(), LowerPixelShuffle(), LowerPixelUnshuffle())
