"""rlx resampling: upsample (nearest, bilinear, bicubic to a static size),
pad (constant, reflect, replicate) and pixel_shuffle / pixel_unshuffle (an
image's channels to and from f×f spatial blocks), with torch's semantics
(`F.interpolate`, `F.pad`, `F.pixel_shuffle`, `F.pixel_unshuffle`); the
numpy of all is `xdsl_ane.interpreter.resampling`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import BoolAttr, StringAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import operand_def, opt_prop_def, prop_def, result_def

from xdsl_ane.dialects.rlx.base import FUNCTIONAL, RlxOp, Value, rlx_op_definition
from xdsl_ane.dialects.typing import (
    F32Attr,
    I64Array,
    I64Attr,
    OpTypeError,
    bool_attr,
    bool_prop,
    choice,
    f32_attr,
    fmt_shape,
    i64_attr,
    int_prop,
    ints_attr,
    ints_prop,
    require_float,
    str_attr,
    str_prop,
    tensor,
    tensor_of,
)

UPSAMPLE_MODES = ("nearest", "bilinear", "bicubic")
PAD_MODES = ("constant", "reflect", "replicate")


def upsample_parameters(
    op_name: str, properties: Mapping[str, Attribute], input: TensorType
) -> tuple[str, tuple[int, ...], bool]:
    """The checked (mode, size, align_corners) of an upsample of `input`
    [N, C, (H,) W]: one positive size per spatial axis; align_corners only
    with the interpolating modes, as torch allows it."""
    shape = input.get_shape()
    if len(shape) not in (3, 4):
        raise OpTypeError(
            op_name,
            f"operand 'input' must be [N, C, W] or [N, C, H, W], got shape "
            f"{fmt_shape(shape)}",
        )
    mode = choice(op_name, "mode", str_prop(properties, "mode"), UPSAMPLE_MODES)
    size = ints_prop(properties, "size")
    assert size is not None
    spatial = len(shape) - 2
    if len(size) != spatial or any(s < 1 for s in size):
        raise OpTypeError(
            op_name,
            f"property 'size' {list(size)} must be {spatial} positive sizes, one per "
            f"spatial axis of operand 'input' {fmt_shape(shape)}",
        )
    align_corners = bool_prop(properties, "align_corners")
    if align_corners and mode == "nearest":
        raise OpTypeError(
            op_name,
            'property \'align_corners\' applies to modes "bilinear" and "bicubic" '
            'only, not "nearest"',
        )
    return mode, size, align_corners


@rlx_op_definition
class UpsampleOp(RlxOp):
    """Resamples the spatial axes of input [N, C, (H,) W] to `size`, as
    torch's `F.interpolate(x, size, mode, align_corners)`. Per axis of
    input size n and output size m, output index d reads source position
    s(d) = d · (n − 1)/(m − 1) with align_corners (0 when m = 1), else
    (d + ½) · n/m − ½:

    - "nearest": x[min(⌊d · n/m⌋, n − 1)] (torch's "nearest", not
      "nearest-exact");
    - "bilinear": linear between x[⌊s⌋] and x[⌊s⌋ + 1] with weight s − ⌊s⌋,
      s clamped at 0 below (on a 1-D input: linear along W);
    - "bicubic": Keys' cubic convolution (A = −0.75) over x[⌊s⌋ − 1 .. ⌊s⌋ + 2],
      indices clamped to [0, n − 1].

    Both spatial axes are resampled independently (separably)."""

    name = "rlx.upsample"
    input = operand_def(TensorType)
    mode = prop_def(StringAttr)
    size = prop_def(I64Array)
    align_corners = opt_prop_def(BoolAttr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    def __init__(
        self,
        input: Value,
        mode: str,
        size: Sequence[int],
        align_corners: bool | None = None,
    ):
        self.init_inferred(
            [input],
            {
                "mode": str_attr(mode),
                "size": ints_attr(size),
                "align_corners": bool_attr(align_corners),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", t)
        _, size, _ = upsample_parameters(cls.name, properties, t)
        return [tensor([*t.get_shape()[:2], *size], t.element_type)]


def pad_parameters(
    op_name: str, properties: Mapping[str, Attribute], input: TensorType
) -> tuple[tuple[tuple[int, int], ...], str, float]:
    """The checked ((before, after) per axis, mode, value) of a pad of
    `input`: a reflection reads inside the axis, so it pads less than the
    axis's size on each side (torch's rule); replicate needs a non-empty
    axis; `value` applies to mode "constant" only."""
    shape = input.get_shape()
    pads = ints_prop(properties, "pads")
    assert pads is not None
    if len(pads) != 2 * len(shape):
        raise OpTypeError(
            op_name,
            f"property 'pads' {list(pads)} must have {2 * len(shape)} entries (before, "
            f"after per axis) for operand 'input' {fmt_shape(shape)}",
        )
    if any(p < 0 for p in pads):
        raise OpTypeError(op_name, f"property 'pads' {list(pads)} must be >= 0")
    mode = choice(op_name, "mode", str_prop(properties, "mode", "constant"), PAD_MODES)
    pairs = tuple((pads[2 * i], pads[2 * i + 1]) for i in range(len(shape)))
    if mode == "reflect":
        for axis, ((before, after), n) in enumerate(zip(pairs, shape)):
            if max(before, after) >= n and (before or after):
                raise OpTypeError(
                    op_name,
                    f'mode "reflect" pads axis {axis} of size {n} by ({before}, '
                    f"{after}); each side must be less than the size",
                )
    value = properties.get("value")
    if value is not None and mode != "constant":
        raise OpTypeError(
            op_name, f'property \'value\' applies to mode "constant" only, not "{mode}"'
        )
    return pairs, mode, 0.0 if value is None else value.value.data


@rlx_op_definition
class PadOp(RlxOp):
    """Pads each axis of input by `pads` (before, after per axis, ≥ 0), as
    torch's `F.pad`: mode "constant" (default) fills `value` (default 0.0);
    "reflect" mirrors about the edge element, x[−i] = x[i]; "replicate"
    repeats the edge element. Result size per axis: n + before + after."""

    name = "rlx.pad"
    input = operand_def(TensorType)
    pads = prop_def(I64Array)
    mode = opt_prop_def(StringAttr)
    value = opt_prop_def(F32Attr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    def __init__(
        self,
        input: Value,
        pads: Sequence[int],
        mode: str | None = None,
        value: float | None = None,
    ):
        self.init_inferred(
            [input],
            {
                "pads": ints_attr(pads),
                "mode": str_attr(mode),
                "value": f32_attr(value),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", t)
        pairs, _, _ = pad_parameters(cls.name, properties, t)
        shape = [n + b + a for n, (b, a) in zip(t.get_shape(), pairs)]
        return [tensor(shape, t.element_type)]


def shuffle_parameters(
    op_name: str, name: str, properties: Mapping[str, Attribute], input: TensorType
) -> tuple[tuple[int, int, int, int], int]:
    """The [N, C, H, W] of a pixel_shuffle's or pixel_unshuffle's float
    input and its factor (`name`, ≥ 1)."""
    require_float(op_name, "input", input)
    shape = input.get_shape()
    if len(shape) != 4:
        raise OpTypeError(
            op_name,
            f"operand 'input' must be [N, C, H, W], got shape {fmt_shape(shape)}",
        )
    factor = int_prop(properties, name)
    if factor < 1:
        raise OpTypeError(op_name, f"property '{name}' value {factor} must be ≥ 1")
    n, c, h, w = shape
    return (n, c, h, w), factor


@rlx_op_definition
class PixelShuffleOp(RlxOp):
    """Moves channels into space: input [N, C·r², H, W] (f16 or f32) to
    [N, C, H·r, W·r], out[n, c, h·r + i, w·r + j] = input[n, c·r² + i·r + j,
    h, w] with r = `upscale_factor` (≥ 1; the channels a multiple of r²),
    as torch's `F.pixel_shuffle` (sub-pixel convolution's upsampling)."""

    name = "rlx.pixel_shuffle"
    input = operand_def(TensorType)
    upscale_factor = prop_def(I64Attr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, upscale_factor: int):
        self.init_inferred([input], {"upscale_factor": i64_attr(upscale_factor)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        (n, c, h, w), r = shuffle_parameters(cls.name, "upscale_factor", properties, t)
        if c % (r * r):
            raise OpTypeError(
                cls.name,
                f"operand 'input' {fmt_shape(t.get_shape())} has {c} channels, not "
                f"a multiple of upscale_factor² = {r * r}",
            )
        return [tensor((n, c // (r * r), h * r, w * r), t.element_type)]


@rlx_op_definition
class PixelUnshuffleOp(RlxOp):
    """The inverse of rlx.pixel_shuffle: input [N, C, H·r, W·r] (f16 or
    f32) to [N, C·r², H, W], out[n, c·r² + i·r + j, h, w] = input[n, c,
    h·r + i, w·r + j] with r = `downscale_factor` (≥ 1; H and W multiples
    of r), as torch's `F.pixel_unshuffle`."""

    name = "rlx.pixel_unshuffle"
    input = operand_def(TensorType)
    downscale_factor = prop_def(I64Attr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, downscale_factor: int):
        self.init_inferred([input], {"downscale_factor": i64_attr(downscale_factor)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        (n, c, h, w), r = shuffle_parameters(
            cls.name, "downscale_factor", properties, t
        )
        if h % r or w % r:
            raise OpTypeError(
                cls.name,
                f"operand 'input' {fmt_shape(t.get_shape())}: H and W must be "
                f"multiples of downscale_factor {r}",
            )
        return [tensor((n, c * r * r, h // r, w // r), t.element_type)]


OPS = (
    UpsampleOp,
    PadOp,
    PixelShuffleOp,
    PixelUnshuffleOp,
)
"""The ops of this family, as the rlx dialect lists them."""
