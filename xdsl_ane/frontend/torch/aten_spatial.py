"""ATen's sampling and patch ops to rlx: `grid_sampler_2d`
(F.grid_sample), `im2col` / `col2im` (F.unfold, F.fold) and
`pixel_shuffle` / `pixel_unshuffle` (rlx's ops of those names).

grid_sample reads runtime values at runtime positions, which MIL does only
with gather_along_axis (not an ANE op). Bilinear interpolation is instead a
sum over every input position q of x[q] · w(p, q) with the weights computed
elementwise from the grid, w = relu(1 − |ix − qx|) · relu(1 − |iy − qy|),
which is torch's bilinear weight where q is one of the four taps and 0
elsewhere (zeros padding drops taps outside; border padding clamps the
coordinates first); nearest is the tap where round(ix) = qx and round(iy)
= qy. Separable: x · Wxᵀ (a matmul over the width), times Wy and summed
over the height. A constant grid makes the weights constant: one matmul by
the sampling matrix.

unfold is a grouped conv whose kernel is the identity over each window;
fold the conv_transpose with that kernel (which sums overlapping windows).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import element_type_of, is_float, shape_of
from xdsl_ane.frontend.torch.aten import narrow, reshape, scalar, translates
from xdsl_ane.frontend.torch.translate import Const, TranslationError, Translator

aten = torch.ops.aten

INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def unnormalized(
    tr: Translator, g: SSAValue, size: int, align_corners: bool, border: bool
) -> SSAValue:
    """Grid coordinates in [−1, 1] as input positions: (g + 1)/2 · (size − 1)
    with align_corners, ((g + 1) · size − 1)/2 without; clamped to
    [0, size − 1] for border padding."""
    if align_corners:
        a, b = (size - 1) / 2, (size - 1) / 2
    else:
        a, b = size / 2, (size - 1) / 2
    i = rlx.AddOp(rlx.MulOp(g, scalar(tr, a, g)).result, scalar(tr, b, g)).result
    if border:
        i = rlx.ClampOp(i, 0.0, float(size - 1)).result
    return i


def tap_weights(tr: Translator, i: SSAValue, size: int, mode: str) -> SSAValue:
    """The weight of each input position q < size (axis 1) for coordinates
    i [N, 1, P]: relu(1 − |i − q|) (bilinear), or whether q is i rounded
    half to even (nearest: |i − q| < ½, or = ½ at an even q)."""
    element = element_type_of(i)
    q = tr.value(Const(torch.arange(size).float().reshape(1, size, 1), "q"), element)
    distance = rlx.AbsOp(rlx.SubOp(i, q).result).result
    one, zero = scalar(tr, 1.0, distance), scalar(tr, 0.0, distance)
    if mode == "bilinear":
        return rlx.ReluOp(rlx.SubOp(one, distance).result).result
    half = scalar(tr, 0.5, distance)
    inside = rlx.CompareOp(distance, half, "lt").result
    tie = rlx.CompareOp(distance, half, "eq").result
    even = Const((torch.arange(size) % 2 == 0).reshape(1, size, 1), "even")
    at_tie = rlx.WhereOp(tr.value(even), one, zero).result
    at_tie = rlx.WhereOp(tie, at_tie, zero).result
    return rlx.WhereOp(inside, one, at_tie).result


@translates(aten.grid_sampler_2d.default)
def grid_sampler_2d(
    tr: Translator, node, x, grid, interpolation_mode, padding_mode, align_corners
):
    """out[n, c, p] = Σ_{qy, qx} x[n, c, qy, qx] · wy(p, qy) · wx(p, qx) for
    the output positions p of grid [N, Ho, Wo, 2] (x then y)."""
    mode = INTERPOLATION[int(interpolation_mode)]
    padding = PADDING[int(padding_mode)]
    if mode == "bicubic" or padding == "reflection":
        raise TranslationError(
            f"grid_sample with mode {mode!r} and padding {padding!r}: only bilinear "
            "and nearest, with zeros or border padding, are supported"
        )
    element = tr.result_element(node)
    if isinstance(grid, Const):
        return sampled_by_constant_grid(tr, node, x, grid, mode, padding, align_corners)
    x = tr.value(x, element)
    grid = tr.value(grid, element)
    n, c, h, w = shape_of(x)
    _, ho, wo, _ = shape_of(grid)
    p = ho * wo
    border = padding == "border"
    gx = reshape(narrow(grid, 3, 0, 1), (n, 1, p))
    gy = reshape(narrow(grid, 3, 1, 1), (n, 1, p))
    ix = unnormalized(tr, gx, w, bool(align_corners), border)
    iy = unnormalized(tr, gy, h, bool(align_corners), border)
    wx = tap_weights(tr, ix, w, mode)  # [N, W, P]
    wy = tap_weights(tr, iy, h, mode)  # [N, H, P]
    rows = rlx.MatmulOp(x, reshape(wx, (n, 1, w, p))).result  # [N, C, H, P]
    weighted = rlx.MulOp(rows, reshape(wy, (n, 1, h, p))).result
    out = rlx.ReduceSumOp(weighted, [2], False).result  # [N, C, P]
    return reshape(out, (n, c, ho, wo))


def sampling_matrix(
    grid: np.ndarray, h: int, w: int, mode: str, padding: str, align_corners: bool
) -> np.ndarray:
    """[N, P, H·W]: the weights of a constant grid, by torch's own
    grid_sample of the one-hot images (exact: each output is a weighted sum
    of the input)."""
    n = grid.shape[0]
    basis = torch.eye(h * w, dtype=torch.float64).reshape(h * w, 1, h, w)
    rows = []
    for k in range(n):
        g = torch.from_numpy(grid[k : k + 1]).double().expand(h * w, -1, -1, -1)
        sampled = torch.nn.functional.grid_sample(
            basis, g, mode, padding, align_corners=align_corners
        )
        rows.append(sampled.reshape(h * w, -1).T)
    return torch.stack(rows).float().numpy()


def sampled_by_constant_grid(tr, node, x, grid, mode, padding, align_corners):
    """out [N, C, P] = x [N, C, H·W] · Mᵀ, M the constant sampling matrix."""
    element = tr.result_element(node)
    x = tr.value(x, element)
    n, c, h, w = shape_of(x)
    _, ho, wo, _ = grid.value.shape
    matrix = sampling_matrix(
        grid.value.float().numpy(), h, w, mode, padding, bool(align_corners)
    )
    if n == 1:
        matrix = matrix[0]
    m = tr.value(Const(torch.from_numpy(matrix), f"{node.name}.sampling"), element)
    flat = reshape(x, (n, c, h * w))
    out = rlx.MatmulOp(flat, m, transpose_rhs=True).result
    return reshape(out, (n, c, ho, wo))


# --- unfold and fold ---------------------------------------------------------------


def identity_kernel(channels: int, kernel: Sequence[int], element, tr, name):
    """[C·kh·kw, 1, kh, kw]: output channel c·K + k of a conv grouped by
    channel reads tap k of channel c."""
    kh, kw = kernel
    taps = np.eye(kh * kw, dtype=np.float32).reshape(kh * kw, 1, kh, kw)
    weight = np.tile(taps, (channels, 1, 1, 1))
    return tr.value(Const(torch.from_numpy(weight), name), element)


def pairs(values) -> list[int]:
    values = [int(v) for v in values]
    return values * 2 if len(values) == 1 else values


@translates(aten.im2col.default)
def im2col(tr: Translator, node, x, kernel_size, dilation, padding, stride):
    """F.unfold: [N, C, H, W] -> [N, C·kh·kw, L], a conv grouped by channel
    with the identity kernel, its spatial axes flattened."""
    element = tr.result_element(node)
    x = tr.value(x, element)
    unbatched = len(shape_of(x)) == 3
    if unbatched:
        x = reshape(x, (1, *shape_of(x)))
    c = shape_of(x)[1]
    kernel, pads = pairs(kernel_size), pairs(padding)
    weight = identity_kernel(c, kernel, element, tr, f"unfold{kernel}")
    y = rlx.ConvOp(
        x,
        weight,
        None,
        strides=pairs(stride),
        padding=[p for p in pads for p in (p, p)] if any(pads) else None,
        dilations=pairs(dilation),
        groups=c if c > 1 else None,
    ).result
    return reshape(y, tr.result_shape(node))


@translates(aten.col2im.default)
def col2im(
    tr: Translator, node, x, output_size, kernel_size, dilation, padding, stride
):
    """F.fold: [N, C·kh·kw, L] -> [N, C, H, W], the conv_transpose with the
    identity kernel over the L blocks viewed as [Lh, Lw] (overlaps add up);
    `output_padding` fills the rows and columns no block reaches."""
    element = tr.result_element(node)
    x = tr.value(x, element)
    out_shape = tr.result_shape(node)
    unbatched = len(out_shape) == 3
    shape = shape_of(x) if not unbatched else (1, *shape_of(x))
    kernel, pads = pairs(kernel_size), pairs(padding)
    dilations, strides = pairs(dilation), pairs(stride)
    size = pairs(output_size)
    blocks = [
        (size[a] + 2 * pads[a] - dilations[a] * (kernel[a] - 1) - 1) // strides[a] + 1
        for a in range(2)
    ]
    c = shape[1] // (kernel[0] * kernel[1])
    x = reshape(x, (shape[0], shape[1], *blocks))
    reached = [
        (blocks[a] - 1) * strides[a] - 2 * pads[a] + dilations[a] * (kernel[a] - 1) + 1
        for a in range(2)
    ]
    extra = [size[a] - reached[a] for a in range(2)]
    weight = identity_kernel(c, kernel, element, tr, f"fold{kernel}")
    y = rlx.ConvTransposeOp(
        x,
        weight,
        None,
        strides=strides,
        padding=[p for p in pads for p in (p, p)] if any(pads) else None,
        dilations=dilations,
        groups=c if c > 1 else None,
        output_padding=extra if any(extra) else None,
    ).result
    return reshape(y, out_shape)


# --- pixel shuffle ---------------------------------------------------------------------


def as_images(tr: Translator, node, x) -> tuple[SSAValue, int, int, int, int]:
    """x [*, C, H, W] as [N, C, H, W] (the batch axes merged, or a batch of
    1), with N, C, H and W."""
    x = tr.value(x, tr.result_element(node))
    *batch, channels, h, w = shape_of(x)
    n = int(np.prod(batch, dtype=np.int64))
    if len(batch) != 1:
        x = reshape(x, (n, channels, h, w))
    return x, n, channels, h, w


def interleaved(x: SSAValue, outer: int, r: int, h: int, w: int) -> SSAValue:
    """[outer·r, h, w] viewed as [outer, r, h, w] with its r axis moved
    inside the last: [outer, h, w·r], out[o, y, x·r + j] = in[o·r + j, y, x]."""
    moved = rlx.TransposeOp(reshape(x, (outer, r, h, w)), (0, 2, 3, 1)).result
    return reshape(moved, (outer, h, w * r))


def deinterleaved(x: SSAValue, outer: int, r: int, h: int, w: int) -> SSAValue:
    """The inverse of `interleaved`: [outer, h, w·r] -> [outer·r, h, w]."""
    moved = rlx.TransposeOp(reshape(x, (outer, h, w, r)), (0, 3, 1, 2)).result
    return reshape(moved, (outer * r, h, w))


@translates(aten.pixel_shuffle.default)
def pixel_shuffle(tr: Translator, node, x, upscale_factor):
    """[*, C·r², H, W] -> [*, C, H·r, W·r], out[c, h·r + i, w·r + j] =
    in[c·r² + i·r + j, h, w]: one rlx.pixel_shuffle (MIL's op of that name)
    on the batch axes merged. rlx's takes floats; an integer or bool input
    is torch's rank-6 permutation as two rank-4 transposes, the columns
    (j) interleaved, then the rows (i)."""
    x, n, channels, h, w = as_images(tr, node, x)
    r = int(upscale_factor)
    if is_float(element_type_of(x)):
        return reshape(rlx.PixelShuffleOp(x, r).result, tr.result_shape(node))
    outer = n * channels // (r * r)
    columns = interleaved(x, outer * r, r, h, w)  # [outer·r, H, W·r]
    rows = reshape(columns, (outer, r, h, w * r))
    rows = rlx.TransposeOp(rows, (0, 2, 1, 3)).result  # [outer, H, r, W·r]
    return reshape(rows, tr.result_shape(node))


@translates(aten.pixel_unshuffle.default)
def pixel_unshuffle(tr: Translator, node, x, downscale_factor):
    """The inverse of pixel_shuffle: [*, C, H·r, W·r] -> [*, C·r², H, W],
    one rlx.pixel_unshuffle for floats, else two rank-4 transposes."""
    x, n, channels, height, width = as_images(tr, node, x)
    r = int(downscale_factor)
    if is_float(element_type_of(x)):
        return reshape(rlx.PixelUnshuffleOp(x, r).result, tr.result_shape(node))
    h, w = height // r, width // r
    outer = n * channels
    rows = rlx.TransposeOp(reshape(x, (outer, h, r, width)), (0, 2, 1, 3)).result
    columns = deinterleaved(rows, outer * r, r, h, w)  # [outer·r², H, W]
    return reshape(columns, tr.result_shape(node))
