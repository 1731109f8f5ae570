"""Numpy semantics of convolutions, shared by rlx.conv / rlx.conv_transpose
and MIL's conv / conv_transpose: 1 to 3 spatial axes, groups, strides,
(before, after) padding, dilations. A convolution is one batched matmul
over groups of im2col patches; f16 accumulates in float32 and rounds once
(after the bias: the product's, `numerics.matmul`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xdsl_ane.interpreter.numerics import Array, accumulates_in_float32, matmul

Padding = Sequence[tuple[int, int]]


def pad_or_crop(x: Array, padding: Padding) -> Array:
    """x with zeros added on its spatial axes (axes 2...) by (before, after),
    a negative amount cropping instead."""
    grow = [(0, 0), (0, 0), *((max(b, 0), max(a, 0)) for b, a in padding)]
    x = np.pad(x, grow)
    crop = tuple(
        slice(max(-b, 0), x.shape[2 + i] - max(-a, 0))
        for i, (b, a) in enumerate(padding)
    )
    return x[(slice(None), slice(None), *crop)]


def correlate(
    x: Array,
    weight: Array,
    strides: Sequence[int],
    padding: Padding,
    dilations: Sequence[int],
    groups: int,
    bias: Array | None = None,
) -> Array:
    """out[n, o, p] = Σ_{c, k} x_pad[n, g(o)·C_in/g + c, p·stride + k·dilation]
    · weight[o, c, k] (+ bias[o]) for x [N, C_in, *D] and weight
    [C_out, C_in/g, *K]: patches [g, N·D_out, C_in/g · K] times weights
    [g, C_in/g · K, C_out/g]."""
    kernel = weight.shape[2:]
    n, c_in = x.shape[:2]
    c_out = weight.shape[0]
    if n == 1 and is_pointwise(kernel, strides, padding):
        # a 1x1 convolution is a product by x's channels as they lie:
        # patches [g, D, C_in/g] a view of x, no copy
        out_spatial = x.shape[2:]
        patches = x.reshape(groups, c_in // groups, -1).transpose(0, 2, 1)
    else:
        patches, out_spatial = im2col(x, kernel, strides, padding, dilations, groups)
    w = weight.reshape(groups, c_out // groups, -1).transpose(0, 2, 1)
    if bias is not None:
        bias = bias.reshape(groups, 1, c_out // groups)
    out = matmul(patches, w, bias)  # [g, N·D_out, C_out/g]
    out = out.reshape(groups, n, *out_spatial, c_out // groups)
    out = np.moveaxis(out, (0, -1), (1, 2))  # [N, g, C_out/g, *D_out]
    return out.reshape(n, c_out, *out_spatial)


def is_pointwise(
    kernel: Sequence[int], strides: Sequence[int], padding: Padding
) -> bool:
    """A 1x1 kernel at stride 1, unpadded."""
    return (
        all(k == 1 for k in kernel)
        and all(s == 1 for s in strides)
        and all(b == a == 0 for b, a in padding)
    )


def im2col(
    x: Array,
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Padding,
    dilations: Sequence[int],
    groups: int,
) -> tuple[Array, tuple[int, ...]]:
    """x's patches [g, N·D_out, C_in/g · K] and D_out."""
    spatial = x.ndim - 2
    padded = pad_or_crop(x, padding)
    windows = np.lib.stride_tricks.sliding_window_view(
        padded,
        [(k - 1) * d + 1 for k, d in zip(kernel, dilations)],
        axis=tuple(range(2, 2 + spatial)),
    )
    # windows [N, C_in, *D_full, *window]: every stride-th window, every
    # dilation-th tap of it.
    index = (
        slice(None),
        slice(None),
        *(slice(None, None, s) for s in strides),
        *(slice(None, None, d) for d in dilations),
    )
    patches = windows[index]
    n, c_in = x.shape[:2]
    out_spatial = patches.shape[2 : 2 + spatial]
    # [N, g, C_in/g, *D_out, *K] -> [g, N, *D_out, C_in/g, *K]
    patches = patches.reshape(n, groups, c_in // groups, *out_spatial, *kernel)
    patches = np.moveaxis(patches, (1, 2), (0, 2 + spatial))
    patches = patches.reshape(groups, -1, (c_in // groups) * int(np.prod(kernel)))
    return patches, out_spatial


def conv(
    x: Array,
    weight: Array,
    bias: Array | None,
    strides: Sequence[int],
    padding: Padding,
    dilations: Sequence[int],
    groups: int,
) -> Array:
    """torch's convNd: `correlate` with bias [C_out] along the channels."""
    return correlate(x, weight, strides, padding, dilations, groups, bias)


@accumulates_in_float32
def conv_transpose(
    x: Array,
    weight: Array,
    bias: Array | None,
    strides: Sequence[int],
    padding: Padding,
    output_padding: Sequence[int],
    dilations: Sequence[int],
    groups: int,
) -> Array:
    """torch's conv_transposeNd of x [N, C_in, *D] with weight
    [C_in, C_out/g, *K]: the stride-1 correlation of x with stride − 1
    zeros between its elements, padded by dilation·(K − 1) − before and
    dilation·(K − 1) − after + output_padding, with the kernel flipped and
    its two channel axes swapped within each group."""
    spatial = x.ndim - 2
    n, c_in = x.shape[:2]
    kernel = weight.shape[2:]
    spread = np.zeros(
        (n, c_in, *((d - 1) * s + 1 for d, s in zip(x.shape[2:], strides))), x.dtype
    )
    spread[(slice(None), slice(None), *(slice(None, None, s) for s in strides))] = x
    per_in, per_out = c_in // groups, weight.shape[1]
    w = weight.reshape(groups, per_in, per_out, *kernel).swapaxes(1, 2)
    w = np.flip(
        w.reshape(groups * per_out, per_in, *kernel), tuple(range(2, 2 + spatial))
    )
    edges = [
        (d * (k - 1) - before, d * (k - 1) - after + extra)
        for k, d, (before, after), extra in zip(
            kernel, dilations, padding, output_padding
        )
    ]
    out = correlate(spread, w, [1] * spatial, edges, dilations, groups)
    return add_bias(out, bias)


def add_bias(out: Array, bias: Array | None) -> Array:
    if bias is None:
        return out
    return out + bias.astype(out.dtype).reshape(-1, *([1] * (out.ndim - 2)))
