"""rlx affine int8 quantization: rlx.quantize (float -> i8) and
rlx.dequantize (i8 -> f16 or f32), with a scale per tensor or a `scales`
operand per channel or per block."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import TensorType, f32, i8
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from xdsl_ane.dialects.rlx.base import RlxOp, Value, rlx_op_definition
from xdsl_ane.dialects.typing import (
    F32Attr,
    I64Attr,
    OpTypeError,
    element_name,
    f32_attr,
    float_prop,
    fmt_shape,
    i64_attr,
    int_prop,
    is_float,
    require_float,
    tensor,
    tensor_of,
)

QUANTIZATION_FORMAT = (
    "$input (`scales` $scales^)? attr-dict `:` functional-type(operands, results)"
)


@rlx_op_definition
class QuantizeOp(RlxOp):
    """q = clamp(round(x / scale) + zero_point, −128, 127) as i8 (round half to
    even). The scale is the property `scale` (per tensor) or the operand
    `scales`, a float tensor of x's rank repeated over blocks of
    x.shape[i] / scales.shape[i] along each axis: per channel ([C, 1]) or
    per block of input channels ([C, I / b]). `zero_point` is one int8 for
    the tensor."""

    name = "rlx.quantize"
    input = operand_def(TensorType)
    scales = opt_operand_def(TensorType)
    result = result_def(TensorType)
    scale = opt_prop_def(F32Attr)
    zero_point = prop_def(I64Attr)
    assembly_format = QUANTIZATION_FORMAT

    def __init__(
        self,
        input: Value,
        scale: float | None = None,
        zero_point: int = 0,
        scales: Value | None = None,
    ):
        self.init_inferred(
            [input, [] if scales is None else [scales]],
            {
                "scale": None if scale is None else f32_attr(scale),
                "zero_point": i64_attr(zero_point),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", t)
        check_quantization(cls.name, properties, t, operand_types[1:])
        return [tensor(t.get_shape(), i8)]


def check_quantization(
    op_name: str,
    properties: Mapping[str, Attribute],
    data: TensorType,
    scales: Sequence[Attribute] = (),
) -> None:
    """One of `scale` (positive, finite) and `scales` (a float tensor of the
    data's rank whose every dimension divides the data's); zero_point int8."""
    scale = float_prop(properties, "scale")
    if (scale is None) == (not scales):
        raise OpTypeError(
            op_name,
            "exactly one of the property 'scale' (per tensor) and the operand "
            "'scales' (per channel or block) is required",
        )
    if scale is not None and (not scale > 0 or not math.isfinite(scale)):
        raise OpTypeError(op_name, f"scale {scale} must be a positive finite number")
    if scales:
        st = tensor_of(op_name, "scales", scales[0])
        require_float(op_name, "scales", st)
        shape, blocks = data.get_shape(), st.get_shape()
        if len(blocks) != len(shape) or any(
            b == 0 or d % b for d, b in zip(shape, blocks)
        ):
            raise OpTypeError(
                op_name,
                f"operand 'scales' {fmt_shape(blocks)} must have the rank of the "
                f"data {fmt_shape(shape)} and dimensions that divide it",
            )
    zp = int_prop(properties, "zero_point")
    if not -128 <= zp <= 127:
        raise OpTypeError(op_name, f"zero_point {zp} is outside the int8 range")


@rlx_op_definition
class DequantizeOp(RlxOp):
    """x = (q − zero_point) · scale; the result type picks f16 or f32. The
    scale is per tensor (`scale`) or per block (`scales`), as for
    rlx.quantize."""

    name = "rlx.dequantize"
    input = operand_def(TensorType)
    scales = opt_operand_def(TensorType)
    result = result_def(TensorType)
    scale = opt_prop_def(F32Attr)
    zero_point = prop_def(I64Attr)
    assembly_format = QUANTIZATION_FORMAT

    def __init__(
        self,
        input: Value,
        scale: float | None = None,
        zero_point: int = 0,
        element_type: Attribute | None = None,
        scales: Value | None = None,
    ):
        t = SSAValue.get(input).type
        assert isinstance(t, TensorType)
        RlxOp.__init__(
            self,
            operands=[input, [] if scales is None else [scales]],
            result_types=[tensor(t.get_shape(), element_type or f32)],
            properties={"zero_point": i64_attr(zero_point)}
            | ({} if scale is None else {"scale": f32_attr(scale)}),
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        raise NotImplementedError

    def verify_(self) -> None:
        t = tensor_of(self.name, "input", self.input.type)
        if t.element_type != i8:
            raise OpTypeError(
                self.name,
                f"operand 'input' must be i8, got {element_name(t.element_type)}",
            )
        scales = [] if self.scales is None else [self.scales.type]
        check_quantization(self.name, self.properties, t, scales)
        r = tensor_of(self.name, "result", self.result.type, what="result")
        if not is_float(r.element_type) or r.get_shape() != t.get_shape():
            raise OpTypeError(
                self.name,
                f"result type {r} must be an f16 or f32 tensor of shape "
                f"{fmt_shape(t.get_shape())}",
            )


OPS = (
    QuantizeOp,
    DequantizeOp,
)
"""The ops of this family, as the rlx dialect lists them."""
