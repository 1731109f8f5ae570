"""MIL's transposed convolution, `conv_transpose` (iOS17's: weight and bias
need not be constants and may have another float dtype than x).

Type rules from coremltools 9.0 iOS15/iOS17 conv.py; `conv` itself is in
linear.py with matmul and linear."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.irdl import operand_def, opt_operand_def, opt_prop_def, result_def

from xdsl_ane.ane.cost import elements
from xdsl_ane.dialects.mil.base import Value, mil_op_definition
from xdsl_ane.dialects.mil.inputs import MilInput, PerSpatialAxis
from xdsl_ane.dialects.mil.linear import ConvolutionOp
from xdsl_ane.dialects.typing import (
    I64Array,
    I64Attr,
    OpTypeError,
    fmt_shape,
    i64_attr,
    ints_attr,
    ints_prop,
    shape_of,
    str_attr,
    tensor,
)

CONV_TRANSPOSE_PAD_TYPES = ("valid", "same", "custom")


def conv_transpose_crop(
    pad_type: str,
    input_shape: Sequence[int],
    kernel_shape: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pad: Sequence[int],
) -> list[tuple[int, int]]:
    """How much of the full transposed convolution, of size
    (D − 1)·stride + (K − 1)·dilation + 1 per spatial axis, each end of
    the output drops: `pad` ("custom"), nothing ("valid"), or for "same"
    what leaves D·stride, the smaller half at the start (a negative amount
    appends zeros)."""
    crop: list[tuple[int, int]] = []
    for i, (size, k, s, d) in enumerate(
        zip(input_shape, kernel_shape, strides, dilations)
    ):
        if pad_type == "custom":
            crop.append((pad[2 * i], pad[2 * i + 1]))
        elif pad_type == "same":
            total = (size - 1) * s + (k - 1) * d + 1 - size * s
            crop.append((total // 2, total - total // 2))
        else:
            crop.append((0, 0))
    return crop


@mil_op_definition
class ConvTransposeOp(ConvolutionOp):
    """Transposed convolution of x [N, C_in, *D] (1 to 3 spatial axes) with
    weight [C_in, C_out/groups, *K] plus bias [C_out]: each x[n, i, p]
    adds x · weight[i, o, k] at output position p·stride + k·dilation of
    channel g·C_out/groups + o for i's group g, and the output drops `pad`
    (before, after per axis): D_out = (D − 1)·stride + (K − 1)·dilation + 1
    − before − after ("custom"), without the pads ("valid"), D·stride
    ("same"). `output_shape`, when given, must be that shape (MIL leaves
    the placement of any other size open). Absent properties take MIL's
    defaults: strides and dilations 1, pad_type "valid", pad 0, groups 1."""

    name = "mil.conv_transpose"
    PAD_TYPES: ClassVar = CONV_TRANSPOSE_PAD_TYPES
    OPSET: ClassVar[str] = "iOS15"
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    pad = opt_prop_def(I64Array)
    output_shape = opt_prop_def(I64Array)
    pad_type = opt_prop_def(StringAttr)
    strides = opt_prop_def(I64Array)
    dilations = opt_prop_def(I64Array)
    groups = opt_prop_def(I64Attr)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("weight"),
        MilInput("bias"),
        MilInput("pad", PerSpatialAxis(0, per_axis=2)),
        MilInput("output_shape"),
        MilInput("pad_type", "valid"),
        MilInput("strides", PerSpatialAxis(1)),
        MilInput("dilations", PerSpatialAxis(1)),
        MilInput("groups", 1),
    )

    def flops(self) -> int:
        # each input element times the weight [Cin, Cout/groups, kh, kw] less its first axis
        weight = shape_of(self.operands[1])
        return 2 * elements(self.operands[0].type) * math.prod(weight[1:])

    def __init__(
        self,
        x: Value,
        weight: Value,
        bias: Value | None = None,
        *,
        pad: Sequence[int] | None = None,
        output_shape: Sequence[int] | None = None,
        pad_type: str | None = None,
        strides: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        groups: int | None = None,
    ):
        self.init_mil(
            {"x": x, "weight": weight, "bias": bias},
            {
                "pad": ints_attr(pad),
                "output_shape": ints_attr(output_shape),
                "pad_type": str_attr(pad_type),
                "strides": ints_attr(strides),
                "dilations": ints_attr(dilations),
                "groups": i64_attr(groups),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        c = cls.conv_operands(operand_types, properties)
        xs, ws, groups, pad = c.xs, c.ws, c.groups, c.pad
        c_in = xs[1]
        if c_in % groups:
            raise OpTypeError(
                cls.name,
                f"C_in {c_in} of operand 'x' {fmt_shape(xs)} must be divisible by "
                f"groups {groups}",
            )
        if ws[0] != c_in:
            raise OpTypeError(
                cls.name,
                f"operand 'weight' {fmt_shape(ws)} must be [C_in, C_out/groups, ...] "
                f"with C_in = {c_in} (operand 'x' {fmt_shape(xs)})",
            )
        c_out = ws[1] * groups
        cls.require_bias(
            c.weight, c.bias, c_out, f"C_out of weight {fmt_shape(ws)}, groups {groups}"
        )
        crop = conv_transpose_crop(
            c.pad_type, xs[2:], ws[2:], c.strides, c.dilations, pad
        )
        spatial_out = []
        for size, k, s, d, (before, after) in zip(
            xs[2:], ws[2:], c.strides, c.dilations, crop
        ):
            out = (size - 1) * s + (k - 1) * d + 1 - before - after
            if out <= 0:
                raise OpTypeError(
                    cls.name,
                    f"property 'pad' {list(pad)} leaves no output for operand 'x' "
                    f"{fmt_shape(xs)} and kernel {fmt_shape(ws[2:])}",
                )
            spatial_out.append(out)
        shape = (xs[0], c_out, *spatial_out)
        given = ints_prop(properties, "output_shape")
        if given is not None and tuple(given) != shape:
            raise OpTypeError(
                cls.name,
                f"property 'output_shape' {list(given)} must be {list(shape)}, the "
                "shape the padding gives (MIL leaves another size's placement open)",
            )
        return [tensor(shape, c.x.element_type)]


OPS = (ConvTransposeOp,)
"""The ops of this family, as the mil dialect lists them."""
