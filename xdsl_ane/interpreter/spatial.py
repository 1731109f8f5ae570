"""Numerics of the spatial ops shared by the rlx and mil interpreters:
max and average pooling over the trailing axes (windows of numpy's
`sliding_window_view`), batch norm with inference statistics and group
norm. The sums (average pooling, the norms' statistics) accumulate f16 in
float32 and round once, as every reduction does here."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from xdsl_ane.interpreter.numerics import Array, accumulates_in_float32

Padding = Sequence[tuple[int, int]]


def _windows(
    x: Array,
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Padding,
    out: Sequence[int],
    fill: float,
) -> Array:
    """The pooling windows of x's trailing axes, `[..., *out, *kernel]`: x
    padded with `fill` (before, after) per axis, and after the last window
    where it overhangs the padded input (ceil_mode)."""
    spatial = len(kernel)
    sizes = x.shape[-spatial:]
    pads = [(0, 0)] * (x.ndim - spatial)
    for n, o, k, s, (b, a) in zip(sizes, out, kernel, strides, padding):
        pads.append((b, a + max(0, (o - 1) * s + k - (n + b + a))))
    padded = np.pad(x, pads, constant_values=fill)
    axes = tuple(range(x.ndim - spatial, x.ndim))
    view = sliding_window_view(padded, tuple(kernel), axis=axes)
    index = (Ellipsis, *(slice(0, o * s, s) for o, s in zip(out, strides)))
    return view[index + (slice(None),) * spatial]


def max_pool(
    x: Array,
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Padding,
    out: Sequence[int],
) -> Array:
    """max over each window; padding and overhang hold −inf, so never win."""
    windows = _windows(x, kernel, strides, padding, out, -np.inf)
    return windows.max(axis=tuple(range(-len(kernel), 0)))


def window_counts(
    size: int, k: int, s: int, before: int, after: int, out: int, include_pad: bool
) -> Array:
    """The divisor of each window along one axis: its size within the padded
    input [−before, size + after), or within the input [0, size) without
    `include_pad` (torch's avg_pool divisor)."""
    low, high = (-before, size + after) if include_pad else (0, size)
    starts = np.arange(out) * s - before
    return np.minimum(starts + k, high) - np.maximum(starts, low)


def pool_divisor(
    sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Padding,
    out: Sequence[int],
    include_pad: bool,
) -> Array:
    """The divisors of all output positions, `[*out]`: the product of each
    axis's `window_counts`."""
    divisor = np.ones((), np.int64)
    for n, k, s, (b, a), o in zip(sizes, kernel, strides, padding, out):
        counts = window_counts(n, k, s, b, a, o, include_pad)
        divisor = np.multiply.outer(divisor, counts)
    return divisor


@accumulates_in_float32
def avg_pool(
    x: Array,
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Padding,
    out: Sequence[int],
    include_pad: bool,
) -> Array:
    """Σ window / divisor over x padded with zeros (`pool_divisor`)."""
    windows = _windows(x, kernel, strides, padding, out, 0.0)
    total = windows.sum(axis=tuple(range(-len(kernel), 0)))
    divisor = pool_divisor(
        x.shape[-len(kernel) :], kernel, strides, padding, out, include_pad
    )
    return (total / divisor).astype(x.dtype)


def per_channel(p: Array, rank: int) -> Array:
    """A `[C]` parameter shaped `[C, 1, ...]` against `[N, C, ...]`."""
    return p.reshape(-1, *([1] * (rank - 2)))


@accumulates_in_float32
def batch_norm(
    x: Array,
    mean: Array,
    var: Array,
    gamma: Array | None,
    beta: Array | None,
    eps: float,
) -> Array:
    """(x − mean) / sqrt(var + eps) · gamma + beta, per channel (axis 1)."""
    out = (x - per_channel(mean, x.ndim)) / np.sqrt(per_channel(var, x.ndim) + eps)
    if gamma is not None:
        out = out * per_channel(gamma, x.ndim)
    if beta is not None:
        out = out + per_channel(beta, x.ndim)
    return out.astype(x.dtype)


@accumulates_in_float32
def group_norm(
    x: Array, groups: int, gamma: Array | None, beta: Array | None, eps: float
) -> Array:
    """Each sample's `groups` runs of C / groups channels normalized over
    those channels and the spatial axes (biased variance), then
    · gamma + beta per channel."""
    grouped = x.reshape(x.shape[0], groups, -1)
    centered = grouped - grouped.mean(axis=-1, keepdims=True)
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    out = (centered / np.sqrt(variance + eps)).reshape(x.shape)
    if gamma is not None:
        out = out * per_channel(gamma, x.ndim)
    if beta is not None:
        out = out + per_channel(beta, x.ndim)
    return out.astype(x.dtype)
