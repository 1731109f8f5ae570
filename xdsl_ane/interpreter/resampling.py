"""Numpy semantics of resampling and padding, for rlx (torch's
`F.interpolate` and `F.pad`) and for MIL (`upsample_nearest_neighbor`,
`upsample_bilinear`, `pad`), pixel shuffling (torch's and MIL's
`pixel_shuffle` / `pixel_unshuffle`, the same in both), and the vision
activations.

Interpolation is separable: resampling one axis of size n to size m is a
matrix A [m, n] applied along that axis, and a 2-D upsample applies one per
spatial axis. `interpolation_matrix` builds A for torch's rules; the
convert-rlx-to-mil lowering reuses it for the resamplings MIL has no op for
(bicubic, and sizes that are no integer multiple), so the lowered program
computes exactly these weights. Nearest neighbour selects rows instead
(`nearest_indices`), exact in every dtype. Interpolated values accumulate
in float32 and are rounded to the input's dtype once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xdsl_ane.interpreter.numerics import Array

CUBIC_A = -0.75
"""Keys' cubic convolution parameter, as torch's bicubic uses."""


def nearest_indices(n: int, m: int) -> np.ndarray:
    """torch's "nearest" source index of each of m outputs from n inputs:
    min(⌊d · (n/m)⌋, n − 1), the scale and product in float32 as torch
    computes them (so an index on a rounding boundary matches too)."""
    if m == n:
        return np.arange(m)
    scale = np.float32(n) / np.float32(m)
    d = np.arange(m, dtype=np.float32)
    return np.minimum(np.floor(d * scale).astype(np.int64), n - 1)


def source_positions(n: int, m: int, align_corners: bool) -> np.ndarray:
    """The source coordinate s(d) of each of m outputs: d·(n − 1)/(m − 1)
    with align_corners (0 for m = 1), else (d + ½)·n/m − ½ (float64)."""
    d = np.arange(m, dtype=np.float64)
    if align_corners:
        return d * ((n - 1) / (m - 1)) if m > 1 else np.zeros(m)
    return (d + 0.5) * (n / m) - 0.5


def cubic_weights(t: np.ndarray) -> np.ndarray:
    """Keys' weights [len(t), 4] of the taps at ⌊s⌋ − 1 .. ⌊s⌋ + 2 for the
    fractions t = s − ⌊s⌋: W(|x|) = (A+2)|x|³ − (A+3)|x|² + 1 for |x| ≤ 1,
    A|x|³ − 5A|x|² + 8A|x| − 4A for 1 < |x| < 2."""
    a = CUBIC_A

    def near(x: np.ndarray) -> np.ndarray:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=-1)


def interpolation_matrix(mode: str, n: int, m: int, align_corners: bool) -> np.ndarray:
    """A [m, n] (float64) with y = A · x resampling an axis of size n to m
    as torch does in `mode`: "nearest" one 1 per row; "bilinear" the two
    taps around s clamped at 0 below, the upper one capped at n − 1;
    "bicubic" four cubic taps, indices clamped to [0, n − 1] (a clamped
    tap adds its weight to the edge)."""
    matrix = np.zeros((m, n))
    rows = np.arange(m)
    if mode == "nearest":
        matrix[rows, nearest_indices(n, m)] = 1.0
        return matrix
    s = source_positions(n, m, align_corners)
    if mode == "bilinear":
        s = np.maximum(s, 0.0)
        low = np.minimum(np.floor(s).astype(np.int64), n - 1)
        high = np.minimum(low + 1, n - 1)
        t = s - low
        np.add.at(matrix, (rows, low), 1 - t)
        np.add.at(matrix, (rows, high), t)
        return matrix
    assert mode == "bicubic", mode
    base = np.floor(s).astype(np.int64)
    weights = cubic_weights(s - base)
    for k in range(4):
        np.add.at(matrix, (rows, np.clip(base - 1 + k, 0, n - 1)), weights[:, k])
    return matrix


def apply_along(x: Array, matrix: np.ndarray, axis: int) -> Array:
    """y = A · x along `axis` of x (float32 accumulation)."""
    moved = np.moveaxis(x.astype(np.float32), axis, -1)
    y = moved @ matrix.T.astype(np.float32)
    return np.moveaxis(y, -1, axis)


def upsample(x: Array, mode: str, size: Sequence[int], align_corners: bool) -> Array:
    """rlx.upsample: the spatial axes of x [N, C, (H,) W] resampled to
    `size`, one axis after the other."""
    spatial = range(x.ndim - len(size), x.ndim)
    if mode == "nearest":
        for axis, m in zip(spatial, size):
            x = np.take(x, nearest_indices(x.shape[axis], m), axis=axis)
        return x
    y = x.astype(np.float32)
    for axis, m in zip(spatial, size):
        y = apply_along(
            y, interpolation_matrix(mode, x.shape[axis], m, align_corners), axis
        )
    return y.astype(x.dtype)


def mil_bilinear_matrix(
    n: int, m: int, align_corners: bool, half_pixel_centers: bool
) -> np.ndarray:
    """MIL upsample_bilinear's weights [m, n] for one axis: grid point
    d·(n − 1)/(m − 1) with align_corners, (d + ½)·n/m − ½ with
    half_pixel_centers, else d·n/m; clamped to [0, n − 1]."""
    d = np.arange(m, dtype=np.float64)
    if align_corners:
        s = d * ((n - 1) / (m - 1)) if m > 1 else np.zeros(m)
    elif half_pixel_centers:
        s = (d + 0.5) * (n / m) - 0.5
    else:
        s = d * (n / m)
    s = np.clip(s, 0, n - 1)
    low = np.floor(s).astype(np.int64)
    high = np.minimum(low + 1, n - 1)
    matrix = np.zeros((m, n))
    rows = np.arange(m)
    np.add.at(matrix, (rows, low), 1 - (s - low))
    np.add.at(matrix, (rows, high), s - low)
    return matrix


def mil_upsample_bilinear(
    x: Array, scales: Sequence[int], align_corners: bool, half_pixel_centers: bool
) -> Array:
    """MIL upsample_bilinear with integer scale factors (height, width) on
    the last two axes."""
    y = x.astype(np.float32)
    for axis, scale in zip((-2, -1), scales):
        n = x.shape[axis]
        matrix = mil_bilinear_matrix(n, n * scale, align_corners, half_pixel_centers)
        y = apply_along(y, matrix, axis)
    return y.astype(x.dtype)


def mil_upsample_nearest(x: Array, scales: Sequence[int]) -> Array:
    """MIL upsample_nearest_neighbor with integer scale factors (height,
    width): each element repeated along the last two axes."""
    return np.repeat(np.repeat(x, scales[0], axis=-2), scales[1], axis=-1)


NUMPY_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}
"""torch's and MIL's pad modes in numpy's words (reflect excludes the edge
in all three)."""


def pad(x: Array, pairs: Sequence[tuple[int, int]], mode: str, value: float) -> Array:
    """x padded by (before, after) for each of its last len(pairs) axes."""
    pairs = [(0, 0)] * (x.ndim - len(pairs)) + list(pairs)
    if mode == "constant":
        return np.pad(x, pairs, constant_values=x.dtype.type(value))
    return np.pad(x, pairs, mode=NUMPY_PAD_MODES[mode])


# --- pixel shuffle -------------------------------------------------------------


def pixel_shuffle(x: Array, r: int) -> Array:
    """[N, C·r², H, W] -> [N, C, H·r, W·r], out[n, c, h·r + i, w·r + j] =
    x[n, c·r² + i·r + j, h, w]."""
    n, c, h, w = x.shape
    blocks = x.reshape(n, c // (r * r), r, r, h, w)  # [n, c, i, j, h, w]
    moved = blocks.transpose(0, 1, 4, 2, 5, 3)  # [n, c, h, i, w, j]
    return np.ascontiguousarray(moved).reshape(n, c // (r * r), h * r, w * r)


def pixel_unshuffle(x: Array, r: int) -> Array:
    """The inverse of `pixel_shuffle`: [N, C, H·r, W·r] -> [N, C·r², H, W]."""
    n, c, height, width = x.shape
    h, w = height // r, width // r
    blocks = x.reshape(n, c, h, r, w, r)  # [n, c, h, i, w, j]
    moved = blocks.transpose(0, 1, 3, 5, 2, 4)  # [n, c, i, j, h, w]
    return np.ascontiguousarray(moved).reshape(n, c * r * r, h, w)


# --- activations ---------------------------------------------------------------


def hardsigmoid(x: Array) -> Array:
    """min(max(x + 3, 0), 6) / 6."""
    return np.clip(x + x.dtype.type(3), 0, 6) / x.dtype.type(6)


def hardswish(x: Array) -> Array:
    """x · min(max(x + 3, 0), 6) / 6."""
    return x * np.clip(x + x.dtype.type(3), 0, 6) / x.dtype.type(6)


def leaky_relu(x: Array, alpha: float) -> Array:
    """x for x ≥ 0, alpha · x below."""
    return np.where(x >= 0, x, x * x.dtype.type(alpha))


def elu(x: Array, alpha: float) -> Array:
    """x for x > 0, alpha · (eˣ − 1) otherwise (expm1 in float32 for f16)."""
    negative = np.expm1(np.minimum(x, 0).astype(np.float32)).astype(x.dtype)
    return np.where(x > 0, x, negative * x.dtype.type(alpha))


def sigmoid_hard(x: Array, alpha: float, beta: float) -> Array:
    """MIL sigmoid_hard: min(max(alpha · x + beta, 0), 1)."""
    return np.clip(x * x.dtype.type(alpha) + x.dtype.type(beta), 0, 1)
