"""MIL's resampling and padding ops: upsample_nearest_neighbor,
upsample_bilinear (iOS15 image_resizing, iOS16 adds half_pixel_centers)
and pad (iOS15 tensor_operation).

MIL has no bicubic resampling in any opset up to iOS18 (resize and resample
are linear or nearest), so convert-rlx-to-mil writes bicubic as matmuls with
constant interpolation matrices. The scale factors here are integers: MIL
also accepts fp32 ones, whose sample grid the runtime recomputes from the
rounded output size, which we never emit.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import BoolAttr, StringAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import operand_def, opt_prop_def, prop_def, result_def, traits_def

from xdsl_ane.ane.rules import UPSAMPLE
from xdsl_ane.dialects.mil.base import (
    FLOAT,
    FUNCTIONAL,
    MilOp,
    Value,
    mil_op_definition,
    require_element_type,
)
from xdsl_ane.dialects.mil.inputs import LIKE_X, MilInput
from xdsl_ane.dialects.mil.traits import ImageLink, ImageOp
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
    str_attr,
    str_prop,
    tensor,
)


class UpsampleOp(MilOp, ABC):
    """Upsampling of the last two axes of x (rank ≥ 3, fp16 or fp32) by
    integer scale factors (default 1): H·scale_factor_height,
    W·scale_factor_width."""

    x = operand_def(TensorType)
    scale_factor_height = opt_prop_def(I64Attr)
    scale_factor_width = opt_prop_def(I64Attr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    traits = traits_def(ImageOp())
    ANE_RULES: ClassVar = (UPSAMPLE,)

    @classmethod
    def scale_factors(cls, properties: Mapping[str, Attribute]) -> tuple[int, int]:
        """(height, width) scale factors with MIL's default 1, checked ≥ 1."""
        scales = tuple(
            int_prop(properties, name, cls.input_default(name))
            for name in ("scale_factor_height", "scale_factor_width")
        )
        if any(s < 1 for s in scales):
            raise OpTypeError(
                cls.name, f"scale factors {list(scales)} must be integers >= 1"
            )
        return scales

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, FLOAT)
        shape = x.get_shape()
        if len(shape) < 3:
            raise OpTypeError(
                cls.name,
                f"operand 'x' must have rank >= 3, got shape {fmt_shape(shape)}",
            )
        height, width = cls.scale_factors(properties)
        return [
            tensor([*shape[:-2], shape[-2] * height, shape[-1] * width], x.element_type)
        ]


@mil_op_definition
class UpsampleNearestNeighborOp(UpsampleOp):
    """Nearest-neighbour upsampling of the last two axes by integer scale
    factors: y[..., i, j] = x[..., ⌊i / scale_factor_height⌋,
    ⌊j / scale_factor_width⌋]."""

    name = "mil.upsample_nearest_neighbor"
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("scale_factor_height", 1),
        MilInput("scale_factor_width", 1),
    )

    def __init__(self, x: Value, scale_factor_height: int, scale_factor_width: int):
        self.init_mil(
            {"x": x},
            {
                "scale_factor_height": i64_attr(scale_factor_height),
                "scale_factor_width": i64_attr(scale_factor_width),
            },
        )


@mil_op_definition
class UpsampleBilinearOp(UpsampleOp):
    """Bilinear upsampling of the last two axes by integer scale factors.
    Per axis of n inputs and m outputs, output d samples grid point
    d·(n − 1)/(m − 1) with align_corners (MIL's default true),
    (d + ½)·n/m − ½ with half_pixel_centers (default: not align_corners),
    else d·n/m, clamped to [0, n − 1], linear between its two neighbours."""

    name = "mil.upsample_bilinear"
    align_corners = opt_prop_def(BoolAttr)
    half_pixel_centers = opt_prop_def(BoolAttr)
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("scale_factor_height", 1),
        MilInput("scale_factor_width", 1),
        MilInput("align_corners", True),
        MilInput("half_pixel_centers"),
    )

    def __init__(
        self,
        x: Value,
        scale_factor_height: int,
        scale_factor_width: int,
        align_corners: bool | None = None,
        half_pixel_centers: bool | None = None,
    ):
        self.init_mil(
            {"x": x},
            {
                "scale_factor_height": i64_attr(scale_factor_height),
                "scale_factor_width": i64_attr(scale_factor_width),
                "align_corners": bool_attr(align_corners),
                "half_pixel_centers": bool_attr(half_pixel_centers),
            },
        )

    @classmethod
    def grid(cls, properties: Mapping[str, Attribute]) -> tuple[bool, bool]:
        """(align_corners, half_pixel_centers) with MIL's defaults; both true
        names two grids at once."""
        align_corners = bool_prop(
            properties, "align_corners", cls.input_default("align_corners")
        )
        half_pixel = bool_prop(properties, "half_pixel_centers", not align_corners)
        if align_corners and half_pixel:
            raise OpTypeError(
                cls.name,
                "properties 'align_corners' and 'half_pixel_centers' cannot both "
                "be true",
            )
        return align_corners, half_pixel

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        cls.grid(properties)
        return super().infer_result_types(operand_types, properties)


PAD_MODES = ("constant", "reflect", "replicate")


@mil_op_definition
class PadOp(MilOp):
    """Pads the last len(pad)/2 axes of x (fp16 or fp32): `pad` holds
    (before, after) per padded axis, ≥ 0. `mode` "constant" (default)
    fills `constant_val` (default 0.0); "reflect" mirrors about the edge
    element (each side at most D − 1); "replicate" repeats it (at most D)."""

    name = "mil.pad"
    x = operand_def(TensorType)
    pad = prop_def(I64Array)
    mode = opt_prop_def(StringAttr)
    constant_val = opt_prop_def(F32Attr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("pad"),
        MilInput("mode", "constant"),
        MilInput("constant_val", 0.0, LIKE_X),
    )

    traits = traits_def(ImageLink())

    def __init__(
        self,
        x: Value,
        pad: Sequence[int],
        mode: str | None = None,
        constant_val: float | None = None,
    ):
        self.init_mil(
            {"x": x},
            {
                "pad": ints_attr(pad),
                "mode": str_attr(mode),
                "constant_val": f32_attr(constant_val),
            },
        )

    @classmethod
    def pairs(
        cls, properties: Mapping[str, Attribute], x: TensorType
    ) -> tuple[tuple[int, int], ...]:
        """The checked (before, after) of each of the last len(pad)/2 axes."""
        shape = x.get_shape()
        pad = ints_prop(properties, "pad")
        assert pad is not None
        if len(pad) % 2 or len(pad) > 2 * len(shape):
            raise OpTypeError(
                cls.name,
                f"property 'pad' {list(pad)} must have an even number of entries, at "
                f"most {2 * len(shape)} for operand 'x' {fmt_shape(shape)}",
            )
        if any(p < 0 for p in pad):
            raise OpTypeError(cls.name, f"property 'pad' {list(pad)} must be >= 0")
        mode = choice(
            cls.name,
            "mode",
            str_prop(properties, "mode", cls.input_default("mode")),
            PAD_MODES,
        )
        pairs = tuple((pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2))
        limit = {"reflect": 1, "replicate": 0}.get(mode)
        if limit is not None:
            for (before, after), n in zip(pairs, shape[len(shape) - len(pairs) :]):
                if max(before, after) > n - limit:
                    raise OpTypeError(
                        cls.name,
                        f'mode "{mode}" pads ({before}, {after}) on an axis of size '
                        f"{n}; at most {n - limit} per side",
                    )
        return pairs

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, FLOAT)
        pairs = cls.pairs(properties, x)
        shape = list(x.get_shape())
        for i, (before, after) in enumerate(pairs):
            shape[len(shape) - len(pairs) + i] += before + after
        return [tensor(shape, x.element_type)]


OPS = (
    UpsampleNearestNeighborOp,
    UpsampleBilinearOp,
    PadOp,
)
"""The ops of this family, as the mil dialect lists them."""
