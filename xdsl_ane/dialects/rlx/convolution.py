"""rlx convolutions: conv and conv_transpose, 1-D (`[N, C, W]`) and 2-D
(`[N, C, H, W]`), with torch's semantics (cross-correlation, grouped
channels, per-axis strides, padding, dilations)."""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import (
    operand_def,
    opt_operand_def,
    opt_prop_def,
    result_def,
)

from xdsl_ane.dialects.rlx.base import RlxOp, Value, rlx_op_definition
from xdsl_ane.dialects.typing import (
    I64Array,
    I64Attr,
    OpTypeError,
    fmt_shape,
    i64_attr,
    int_prop,
    ints_attr,
    ints_prop,
    require_float,
    require_same_element_type,
    tensor,
    tensor_of,
)

CONV_FORMAT = (
    "$input `,` $weight (`bias` $bias^)? attr-dict `:` "
    "functional-type(operands, results)"
)
"""`rlx.conv %x, %w bias %b {strides = array<i64: 2, 2>} : (...) -> ...`."""


@dataclass(frozen=True)
class ConvParameters:
    """The checked spatial properties of a convolution, defaults filled in:
    one entry per spatial axis, `padding` as (before, after) pairs."""

    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    dilations: tuple[int, ...]
    groups: int
    output_padding: tuple[int, ...]

    @property
    def flat_padding(self) -> tuple[int, ...]:
        """`padding` as the property holds it: before, after per axis."""
        return tuple(p for pair in self.padding for p in pair)


class ConvolutionOp(RlxOp, ABC):
    """What conv and conv_transpose share: input [N, C_in, *spatial] with 1
    or 2 spatial axes, a weight of the input's rank, an optional bias
    [C_out], and the spatial properties (defaults: strides 1, padding 0,
    dilations 1, groups 1)."""

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    strides = opt_prop_def(I64Array)
    padding = opt_prop_def(I64Array)
    dilations = opt_prop_def(I64Array)
    groups = opt_prop_def(I64Attr)
    result = result_def(TensorType)
    assembly_format = CONV_FORMAT

    @classmethod
    def parameters(
        cls, spatial: int, properties: Mapping[str, Attribute]
    ) -> ConvParameters:
        """The spatial properties for `spatial` axes, checked: each list has
        one entry per axis (padding two), strides, dilations and groups are
        ≥ 1, padding and output_padding ≥ 0."""
        values: dict[str, tuple[int, ...]] = {}
        for prop, default, length, least in (
            ("strides", 1, spatial, 1),
            ("padding", 0, 2 * spatial, 0),
            ("dilations", 1, spatial, 1),
            ("output_padding", 0, spatial, 0),
        ):
            given = ints_prop(properties, prop, [default] * length)
            assert given is not None
            if len(given) != length:
                raise OpTypeError(
                    cls.name,
                    f"property '{prop}' {list(given)} must have {length} entries "
                    f"for {spatial} spatial axes",
                )
            if any(v < least for v in given):
                raise OpTypeError(
                    cls.name, f"property '{prop}' {list(given)} must be >= {least}"
                )
            values[prop] = given
        groups = int_prop(properties, "groups", 1)
        if groups < 1:
            raise OpTypeError(cls.name, f"property 'groups' {groups} must be >= 1")
        pad = values["padding"]
        return ConvParameters(
            values["strides"],
            tuple((pad[2 * i], pad[2 * i + 1]) for i in range(spatial)),
            values["dilations"],
            groups,
            values["output_padding"],
        )

    @classmethod
    def channels(
        cls, xs: Sequence[int], ws: Sequence[int], groups: int
    ) -> tuple[int, int]:
        """(C_in, C_out), checked against the weight's layout and groups."""
        raise NotImplementedError

    @classmethod
    def spatial_out(
        cls,
        size: int,
        kernel: int,
        stride: int,
        padding: tuple[int, int],
        dilation: int,
        output_padding: int,
    ) -> int:
        raise NotImplementedError

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = tensor_of(cls.name, "input", operand_types[0])
        w = tensor_of(cls.name, "weight", operand_types[1])
        require_float(cls.name, "input", x)
        named = [("input", x), ("weight", w)]
        xs, ws = x.get_shape(), w.get_shape()
        if len(xs) not in (3, 4):
            raise OpTypeError(
                cls.name,
                f"operand 'input' {fmt_shape(xs)} must be [N, C, W] or [N, C, H, W]",
            )
        if len(ws) != len(xs):
            raise OpTypeError(
                cls.name,
                f"operand 'weight' {fmt_shape(ws)} must have the rank of operand "
                f"'input' {fmt_shape(xs)}",
            )
        params = cls.parameters(len(xs) - 2, properties)
        _, c_out = cls.channels(xs, ws, params.groups)
        if len(operand_types) > 2:
            b = tensor_of(cls.name, "bias", operand_types[2])
            named.append(("bias", b))
            if b.get_shape() != (c_out,):
                raise OpTypeError(
                    cls.name,
                    f"operand 'bias' {fmt_shape(b.get_shape())} must be [{c_out}] "
                    f"(C_out of operand 'weight' {fmt_shape(ws)})",
                )
        element = require_same_element_type(cls.name, named)
        out = []
        for i, (size, k) in enumerate(zip(xs[2:], ws[2:])):
            d = cls.spatial_out(
                size,
                k,
                params.strides[i],
                params.padding[i],
                params.dilations[i],
                params.output_padding[i],
            )
            if d <= 0:
                raise OpTypeError(
                    cls.name,
                    f"kernel {fmt_shape(ws[2:])} (dilations {list(params.dilations)}) "
                    f"does not fit the padded operand 'input' {fmt_shape(xs)}: "
                    f"spatial axis {i} would have size {d}",
                )
            out.append(d)
        return [tensor([xs[0], c_out, *out], element)]


def build_conv(
    op: ConvolutionOp,
    input: Value,
    weight: Value,
    bias: Value | None,
    properties: Mapping[str, Attribute | None],
) -> None:
    op.init_inferred([input, weight, [] if bias is None else [bias]], properties)


@rlx_op_definition
class ConvOp(ConvolutionOp):
    """Cross-correlation (torch's conv1d / conv2d) of input [N, C_in, *D]
    with weight [C_out, C_in/groups, *K] plus bias [C_out]:
    out[n, o, p] = bias[o] + Σ_{c, k} x_pad[n, g·C_in/groups + c,
    p·stride + k·dilation] · weight[o, c, k] for the group g of o,
    x_pad padded with zeros by `padding` (before, after per axis);
    D_out = ⌊(D + before + after − dilation·(K − 1) − 1) / stride⌋ + 1."""

    name = "rlx.conv"

    def __init__(
        self,
        input: Value,
        weight: Value,
        bias: Value | None = None,
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        groups: int | None = None,
    ):
        build_conv(
            self,
            input,
            weight,
            bias,
            {
                "strides": ints_attr(strides),
                "padding": ints_attr(padding),
                "dilations": ints_attr(dilations),
                "groups": i64_attr(groups),
            },
        )

    @classmethod
    def channels(cls, xs, ws, groups):
        c_in, c_out = xs[1], ws[0]
        if c_in % groups or c_out % groups:
            raise OpTypeError(
                cls.name,
                f"property 'groups' {groups} must divide C_in {c_in} of operand "
                f"'input' {fmt_shape(xs)} and C_out {c_out} of operand 'weight' "
                f"{fmt_shape(ws)}",
            )
        if ws[1] * groups != c_in:
            raise OpTypeError(
                cls.name,
                f"operand 'weight' {fmt_shape(ws)} must be [C_out, C_in/groups, ...] "
                f"= [{c_out}, {c_in // groups}, ...] for operand 'input' "
                f"{fmt_shape(xs)} and groups {groups}",
            )
        return c_in, c_out

    @classmethod
    def spatial_out(cls, size, kernel, stride, padding, dilation, output_padding):
        return (size + sum(padding) - dilation * (kernel - 1) - 1) // stride + 1


@rlx_op_definition
class ConvTransposeOp(ConvolutionOp):
    """Transposed convolution (torch's conv_transpose1d / conv_transpose2d),
    the gradient of rlx.conv with respect to its input, of input
    [N, C_in, *D] with weight [C_in, C_out/groups, *K] plus bias [C_out]:
    full[n, g·C_out/groups + o, p·stride + k·dilation] += x[n, i, p] ·
    weight[i, o, k] for each input channel i of group g; the result is full
    cropped by `padding` (before, after per axis) and extended at the end by
    `output_padding` (< stride or dilation, zeros beyond full) plus bias;
    D_out = (D − 1)·stride − before − after + dilation·(K − 1) +
    output_padding + 1."""

    name = "rlx.conv_transpose"
    output_padding = opt_prop_def(I64Array)

    def __init__(
        self,
        input: Value,
        weight: Value,
        bias: Value | None = None,
        *,
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        output_padding: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        groups: int | None = None,
    ):
        build_conv(
            self,
            input,
            weight,
            bias,
            {
                "strides": ints_attr(strides),
                "padding": ints_attr(padding),
                "output_padding": ints_attr(output_padding),
                "dilations": ints_attr(dilations),
                "groups": i64_attr(groups),
            },
        )

    @classmethod
    def parameters(cls, spatial, properties):
        params = super().parameters(spatial, properties)
        for i, (extra, s, d) in enumerate(
            zip(params.output_padding, params.strides, params.dilations)
        ):
            if extra >= max(s, d):
                # torch's rule: output_padding only picks one of the output
                # sizes that the strided conv maps to the same input size.
                raise OpTypeError(
                    cls.name,
                    f"property 'output_padding' {list(params.output_padding)} must be "
                    f"smaller than the stride or the dilation on spatial axis {i} "
                    f"(stride {s}, dilation {d})",
                )
        return params

    @classmethod
    def channels(cls, xs, ws, groups):
        c_in = xs[1]
        if c_in % groups:
            raise OpTypeError(
                cls.name,
                f"property 'groups' {groups} must divide C_in {c_in} of operand "
                f"'input' {fmt_shape(xs)}",
            )
        if ws[0] != c_in:
            raise OpTypeError(
                cls.name,
                f"operand 'weight' {fmt_shape(ws)} must be [C_in, C_out/groups, ...] "
                f"with C_in = {c_in} (operand 'input' {fmt_shape(xs)})",
            )
        return c_in, ws[1] * groups

    @classmethod
    def spatial_out(cls, size, kernel, stride, padding, dilation, output_padding):
        return (
            (size - 1) * stride
            - sum(padding)
            + dilation * (kernel - 1)
            + output_padding
            + 1
        )


def conv_parameters(op: ConvolutionOp) -> ConvParameters:
    """The spatial properties of a verified conv or conv_transpose."""
    rank = op.input.type.get_num_dims()  # type: ignore[attr-defined]
    return type(op).parameters(rank - 2, op.properties)


OPS = (
    ConvOp,
    ConvTransposeOp,
)
"""The ops of this family, as the rlx dialect lists them."""
