"""MIL's linear algebra: `matmul`, `linear` and `conv`.

Type rules from coremltools iOS15/iOS17 linear.py and conv.py. Where
coremltools' inference is wrong or crashes (a rank-1 `y` in matmul, a rank-1
`x` against a batched `y`) the verifier rejects the case rather than accept a
type coremltools would disagree with.
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    StringAttr,
    TensorType,
)
from xdsl.irdl import (
    operand_def,
    opt_operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)

from xdsl_ane.ane.cost import output_elements
from xdsl_ane.ane.rules import CONV_KERNEL, DILATED_CONV
from xdsl_ane.dialects.mil.base import (
    FLOAT,
    FLOAT_INT32,
    FUNCTIONAL,
    MilOp,
    TaggedOptionalOperandsOp,
    Value,
    is_compile_time_constant,
    mil_op_definition,
    require_element_type,
)
from xdsl_ane.dialects.mil.inputs import (
    MilInput,
    ParamValue,
    PerSpatialAxis,
    element_dtype,
)
from xdsl_ane.dialects.mil.traits import ImageOp
from xdsl_ane.dialects.typing import (
    I64Array,
    I64Attr,
    OpTypeError,
    bool_attr,
    bool_prop,
    choice,
    fmt_shape,
    i64_attr,
    int_prop,
    ints_attr,
    ints_prop,
    matmul_shape,
    require_rank,
    require_same_element_type,
    shape_of,
    str_attr,
    str_prop,
    tensor,
)


@mil_op_definition
class MatmulOp(MilOp):
    """numpy matmul of x and y on the last two axes, after swapping those axes
    of x (`transpose_x`) or y (`transpose_y`); batch axes broadcast. A rank-1
    x is a row vector (only against a rank-2 y); y has rank >= 2."""

    name = "mil.matmul"
    x = operand_def(TensorType)
    y = operand_def(TensorType)
    transpose_x = opt_prop_def(BoolAttr)
    transpose_y = opt_prop_def(BoolAttr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("y"),
        MilInput("transpose_x", False),
        MilInput("transpose_y", False),
    )

    def flops(self) -> int:
        x = shape_of(self.operands[0])
        k = (
            x[-2]
            if bool_prop(self.properties, "transpose_x") and len(x) >= 2
            else x[-1]
        )
        return 2 * output_elements(self) * k

    def __init__(
        self,
        x: Value,
        y: Value,
        transpose_x: bool | None = None,
        transpose_y: bool | None = None,
    ):
        self.init_mil(
            {"x": x, "y": y},
            {
                "transpose_x": bool_attr(transpose_x),
                "transpose_y": bool_attr(transpose_y),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = cls.tensor_operands(operand_types, properties)
        x, y = ops["x"], ops["y"]
        assert x is not None and y is not None
        require_element_type(cls.name, "x", x, FLOAT_INT32)
        element = require_same_element_type(cls.name, [("x", x), ("y", y)])
        xs, ys = list(x.get_shape()), list(y.get_shape())
        if len(ys) < 2:
            raise OpTypeError(
                cls.name, f"operand 'y' must have rank >= 2, got shape {fmt_shape(ys)}"
            )
        if len(xs) == 0 or (len(xs) == 1 and len(ys) != 2):
            raise OpTypeError(
                cls.name,
                f"operand 'x' {fmt_shape(xs)} must have rank >= 2, or rank 1 against "
                f"a rank-2 'y' (got {fmt_shape(ys)})",
            )
        transpose_x = bool_prop(properties, "transpose_x")
        transpose_y = bool_prop(properties, "transpose_y")
        if len(xs) == 1:  # a vector times a matrix
            if transpose_x:
                raise OpTypeError(
                    cls.name, "transpose_x is not allowed with a rank-1 operand 'x'"
                )
            k, n = (ys[1], ys[0]) if transpose_y else (ys[0], ys[1])
            if xs[0] != k:
                raise OpTypeError(
                    cls.name,
                    f"contraction dimensions differ: operand 'x' {fmt_shape(xs)} and "
                    f"operand 'y' {fmt_shape(ys)} (after transposes {fmt_shape(xs)} "
                    f"x {fmt_shape([k, n])})",
                )
            return [tensor([n], element)]
        shape = matmul_shape(
            cls.name, ("x", tuple(xs), transpose_x), ("y", tuple(ys), transpose_y)
        )
        return [tensor(shape, element)]


def zero_bias(op: LinearOp) -> ParamValue:
    """linear's absent bias: zeros [D_out] of weight's dtype."""
    return np.zeros(shape_of(op.weight)[0], element_dtype(op.weight))


@mil_op_definition
class LinearOp(TaggedOptionalOperandsOp):
    """x · weightᵀ + bias, with const weight [D_out, D_in] and bias [D_out];
    x is [*D, D_in] of rank 1 to 3. weight and bias may have a dtype other
    than x's (iOS17)."""

    name = "mil.linear"
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("weight"),
        MilInput("bias", zero_bias),
    )
    CONST_OPERANDS: ClassVar = ("weight", "bias")

    def flops(self) -> int:
        return 2 * output_elements(self) * shape_of(self.operands[0])[-1]

    def __init__(self, x: Value, weight: Value, bias: Value | None = None):
        self.init_mil({"x": x, "weight": weight, "bias": bias})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = cls.tensor_operands(operand_types, properties)
        x, weight, bias = ops["x"], ops["weight"], ops["bias"]
        assert x is not None and weight is not None
        require_element_type(cls.name, "x", x, FLOAT_INT32)
        require_element_type(cls.name, "weight", weight, FLOAT_INT32)
        xs = x.get_shape()
        if not 1 <= len(xs) <= 3:
            raise OpTypeError(
                cls.name,
                f"operand 'x' must have rank 1 to 3, got shape {fmt_shape(xs)}",
            )
        d_out, d_in = require_rank(cls.name, "weight", weight, 2)
        if xs[-1] != d_in:
            raise OpTypeError(
                cls.name,
                f"last dimension of operand 'x' {fmt_shape(xs)} does not match "
                f"operand 'weight' {fmt_shape(weight.get_shape())} (D_in {d_in})",
            )
        if bias is not None:
            require_same_element_type(cls.name, [("weight", weight), ("bias", bias)])
            if bias.get_shape() != (d_out,):
                raise OpTypeError(
                    cls.name,
                    f"operand 'bias' {fmt_shape(bias.get_shape())} must have shape "
                    f"[{d_out}] (D_out of weight {fmt_shape(weight.get_shape())})",
                )
        return [tensor([*xs[:-1], d_out], x.element_type)]


CONV_PAD_TYPES = ("valid", "same", "same_lower", "custom")


def check_window_lengths(
    op_name: str,
    spatial: int,
    per_axis: Sequence[tuple[str, Sequence[int]]],
    pad: Sequence[int],
) -> None:
    """Each per-axis property of a conv or pooling has one entry per spatial
    axis, and `pad` two (before, after)."""
    for prop, values, length in (
        *((prop, values, spatial) for prop, values in per_axis),
        ("pad", pad, 2 * spatial),
    ):
        if len(values) != length:
            raise OpTypeError(
                op_name,
                f"property '{prop}' {list(values)} must have {length} entries for "
                f"{spatial} spatial axes",
            )


def check_pad(op_name: str, pad_type: str, pad: Sequence[int]) -> None:
    """`pad` is non-negative, and non-zero only with pad_type "custom"."""
    if any(p < 0 for p in pad):
        raise OpTypeError(op_name, f"property 'pad' {list(pad)} must be >= 0")
    if pad_type != "custom" and any(pad):
        raise OpTypeError(
            op_name, f"property 'pad' {list(pad)} requires pad_type \"custom\""
        )


def conv_padding(
    pad_type: str,
    input_shape: Sequence[int],
    kernel_shape: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pad: Sequence[int],
) -> list[tuple[int, int]]:
    """The (before, after) padding of each spatial axis of a MIL conv.
    "same" pads so that out = ceil(in / stride), the odd element after
    (bottom/right), "same_lower" before (top/left)."""
    padding: list[tuple[int, int]] = []
    for i, (size, k, s, d) in enumerate(
        zip(input_shape, kernel_shape, strides, dilations)
    ):
        effective = (k - 1) * d + 1
        if pad_type in ("same", "same_lower"):
            total = max(0, s * math.ceil(size / s) - size + effective - s)
            small, large = total // 2, total - total // 2
            padding.append((small, large) if pad_type == "same" else (large, small))
        elif pad_type == "custom":
            padding.append((pad[2 * i], pad[2 * i + 1]))
        else:
            padding.append((0, 0))
    return padding


@dataclass(frozen=True)
class ConvOperands:
    """What `ConvolutionOp.conv_operands` checked: x, weight and bias with
    their shapes and the spatial properties with MIL's defaults."""

    x: TensorType
    weight: TensorType
    bias: TensorType | None
    xs: tuple[int, ...]
    ws: tuple[int, ...]
    pad_type: str
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pad: tuple[int, ...]
    groups: int


class ConvolutionOp(TaggedOptionalOperandsOp, ABC):
    """mil.conv and mil.conv_transpose: the same operands (x, weight, bias)
    and spatial properties, checked the same way; each op states its pad
    types (`PAD_TYPES`), its weight layout and its output shape."""

    PAD_TYPES: ClassVar[tuple[str, ...]]

    traits = traits_def(ImageOp())
    ANE_RULES: ClassVar = (DILATED_CONV, CONV_KERNEL)

    @classmethod
    def spatial_parameters(
        cls, rank: int, properties
    ) -> tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...], int]:
        """pad_type, strides, dilations, pad and groups with MIL's defaults,
        checked against the number of spatial axes."""
        spatial = rank - 2
        pad_type = choice(
            cls.name,
            "pad_type",
            str_prop(properties, "pad_type", cls.input_default("pad_type")),
            cls.PAD_TYPES,
        )
        strides, dilations, pad = (
            ints_prop(properties, name, cls.spatial_input_default(name, spatial))
            for name in ("strides", "dilations", "pad")
        )
        groups = int_prop(properties, "groups", cls.input_default("groups"))
        assert strides is not None and dilations is not None and pad is not None
        check_window_lengths(
            cls.name, spatial, (("strides", strides), ("dilations", dilations)), pad
        )
        if any(v < 1 for v in (*strides, *dilations)) or groups < 1:
            raise OpTypeError(cls.name, "strides, dilations and groups must be >= 1")
        check_pad(cls.name, pad_type, pad)
        return pad_type, strides, dilations, pad, groups

    @classmethod
    def conv_operands(cls, operand_types, properties) -> ConvOperands:
        """x and weight as float tensors of the same rank with 1 to 3 spatial
        axes, and the spatial properties checked against that rank."""
        ops = cls.tensor_operands(operand_types, properties)
        x, weight, bias = ops["x"], ops["weight"], ops["bias"]
        assert x is not None and weight is not None
        require_element_type(cls.name, "x", x, FLOAT)
        require_element_type(cls.name, "weight", weight, FLOAT)
        xs, ws = x.get_shape(), weight.get_shape()
        if not 3 <= len(xs) <= 5:
            raise OpTypeError(
                cls.name,
                f"operand 'x' must be [N, C_in, *spatial] with 1 to 3 spatial axes, "
                f"got shape {fmt_shape(xs)}",
            )
        if len(ws) != len(xs):
            raise OpTypeError(
                cls.name,
                f"operand 'weight' {fmt_shape(ws)} must have the rank of operand 'x' "
                f"{fmt_shape(xs)}",
            )
        pad_type, strides, dilations, pad, groups = cls.spatial_parameters(
            len(xs), properties
        )
        return ConvOperands(
            x, weight, bias, xs, ws, pad_type, strides, dilations, pad, groups
        )

    @classmethod
    def require_bias(
        cls, weight: TensorType, bias: TensorType | None, c_out: int, why: str
    ) -> None:
        """bias, when present, is [C_out] of weight's element type; `why`
        says where C_out comes from."""
        if bias is None:
            return
        require_same_element_type(cls.name, [("weight", weight), ("bias", bias)])
        if bias.get_shape() != (c_out,):
            raise OpTypeError(
                cls.name,
                f"operand 'bias' {fmt_shape(bias.get_shape())} must have shape "
                f"[{c_out}] ({why})",
            )


@mil_op_definition
class ConvOp(ConvolutionOp):
    """N-d convolution (1 to 3 spatial axes) of x [N, C_in, *d_in] with
    weight [C_out, C_in/groups, *K], plus bias [C_out]:
    d_out = floor((d_in + pad_before + pad_after - (K-1)·dilation - 1) / stride) + 1.
    Absent properties take MIL's defaults: strides and dilations 1,
    pad_type "valid", pad 0, groups 1."""

    name = "mil.conv"
    PAD_TYPES: ClassVar = CONV_PAD_TYPES
    x = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    strides = opt_prop_def(I64Array)
    pad_type = opt_prop_def(StringAttr)
    pad = opt_prop_def(I64Array)
    dilations = opt_prop_def(I64Array)
    groups = opt_prop_def(I64Attr)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("weight"),
        MilInput("bias"),
        MilInput("strides", PerSpatialAxis(1)),
        MilInput("pad_type", "valid"),
        MilInput("pad", PerSpatialAxis(0, per_axis=2)),
        MilInput("dilations", PerSpatialAxis(1)),
        MilInput("groups", 1),
    )

    def flops(self) -> int:
        # the weight [Cout, Cin/groups, kh, kw] less its first axis
        return 2 * output_elements(self) * math.prod(shape_of(self.operands[1])[1:])

    def __init__(
        self,
        x: Value,
        weight: Value,
        bias: Value | None = None,
        *,
        strides: Sequence[int] | None = None,
        pad_type: str | None = None,
        pad: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        groups: int | None = None,
    ):
        self.init_mil(
            {"x": x, "weight": weight, "bias": bias},
            {
                "strides": ints_attr(strides),
                "pad_type": str_attr(pad_type),
                "pad": ints_attr(pad),
                "dilations": ints_attr(dilations),
                "groups": i64_attr(groups),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        c = cls.conv_operands(operand_types, properties)
        xs, ws, groups = c.xs, c.ws, c.groups
        c_in, c_out = xs[1], ws[0]
        if c_in % groups or c_out % groups:
            raise OpTypeError(
                cls.name,
                f"C_in {c_in} of operand 'x' {fmt_shape(xs)} and C_out {c_out} of "
                f"operand 'weight' {fmt_shape(ws)} must be divisible by groups {groups}",
            )
        if ws[1] * groups != c_in:
            raise OpTypeError(
                cls.name,
                f"operand 'weight' {fmt_shape(ws)} must be [C_out, C_in/groups, ...] "
                f"with C_in/groups = {c_in // groups} (operand 'x' {fmt_shape(xs)}, "
                f"groups {groups})",
            )
        cls.require_bias(c.weight, c.bias, c_out, f"C_out of weight {fmt_shape(ws)}")
        spatial_out: list[int] = []
        padding = conv_padding(
            c.pad_type, xs[2:], ws[2:], c.strides, c.dilations, c.pad
        )
        for size, k, s, d, (before, after) in zip(
            xs[2:], ws[2:], c.strides, c.dilations, padding
        ):
            out = (size + before + after - (k - 1) * d - 1) // s + 1
            if out <= 0:
                raise OpTypeError(
                    cls.name,
                    f"kernel {fmt_shape(ws[2:])} (dilations {list(c.dilations)}) "
                    f"does not fit the padded input of operand 'x' {fmt_shape(xs)}",
                )
            spatial_out.append(out)
        return [tensor([xs[0], c_out, *spatial_out], c.x.element_type)]

    def verify_(self) -> None:
        super().verify_()
        dilations = ints_prop(self.properties, "dilations")
        if dilations and any(d > 1 for d in dilations):
            if not is_compile_time_constant(self.weight):
                raise OpTypeError(
                    self.name,
                    "operand 'weight' must be a compile-time constant when "
                    "dilations are > 1",
                )


OPS = (
    MatmulOp,
    LinearOp,
    ConvOp,
)
"""The ops of this family, as the mil dialect lists them."""
