"""MIL's affine quantization: `quantize`, `dequantize` (iOS17) and
`constexpr_affine_dequantize` (iOS16).

`scale` and `zero_point` are tensor inputs in MIL, so they are operands here:
const scalars (per-tensor) or const vectors along `axis` (per-channel).
Type rules from coremltools iOS17 quantization_ops.py and iOS16
constexpr_ops.py; of MIL's int8/uint8 we support int8.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import StringAttr, TensorType, f32, i8
from xdsl.irdl import (
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from xdsl_ane.dialects.mil.base import (
    FLOAT,
    FUNCTIONAL,
    MilOp,
    TaggedOptionalOperandsOp,
    Value,
    mil_op_definition,
    operand_axis,
    require_element_type,
)
from xdsl_ane.dialects.typing import (
    I64Attr,
    OpTypeError,
    choice,
    fmt_shape,
    i64_attr,
    int_prop,
    require_same_element_type,
    str_prop,
    tensor,
)


def check_quantization_parameters(
    op_name: str,
    data: tuple[str, TensorType],
    scale: TensorType,
    zero_point: TensorType | None,
    axis: int | None,
    *,
    axis_required: bool = False,
) -> None:
    """scale and zero_point are scalars (per-tensor) or vectors of the size of
    the data's `axis` (per-channel). quantize and dequantize take `axis` only
    with vectors; constexpr_affine_dequantize always takes it."""
    data_name, data_type = data
    shape = data_type.get_shape()
    params = [("scale", scale)]
    if zero_point is not None:
        params.append(("zero_point", zero_point))
    for name, t in params:
        if len(t.get_shape()) > 1:
            raise OpTypeError(
                op_name,
                f"operand '{name}' {fmt_shape(t.get_shape())} must be a scalar or a "
                "vector",
            )
    ranks = {len(t.get_shape()) for _, t in params}
    if len(ranks) > 1 and not axis_required:
        shapes = " and ".join(f"'{n}' {fmt_shape(t.get_shape())}" for n, t in params)
        raise OpTypeError(
            op_name, f"operands {shapes} must both be scalars or both be vectors"
        )
    vector = 1 in ranks
    if axis is None:
        if vector or axis_required:
            raise OpTypeError(
                op_name,
                f"property 'axis' is required with operand 'scale' "
                f"{fmt_shape(scale.get_shape())} (per-channel parameters)",
            )
        return
    if not vector and not axis_required:
        raise OpTypeError(
            op_name,
            f"property 'axis' is only allowed with vector (per-channel) operand "
            f"'scale', got {fmt_shape(scale.get_shape())}",
        )
    axis = operand_axis(op_name, "axis", axis, (data_name, shape))
    for name, t in params:
        if t.get_shape() not in ((), (shape[axis],)):
            raise OpTypeError(
                op_name,
                f"operand '{name}' {fmt_shape(t.get_shape())} must be a scalar or have "
                f"shape [{shape[axis]}] (axis {axis} of operand '{data_name}' "
                f"{fmt_shape(shape)})",
            )


def optional_axis(properties) -> int | None:
    return int_prop(properties, "axis") if "axis" in properties else None


QUANTIZED_DTYPES = {"int8": i8}


@mil_op_definition
class QuantizeOp(TaggedOptionalOperandsOp):
    """clip(round(input / scale) + zero_point) to `output_dtype` ("int8");
    scale has input's dtype, zero_point (default 0) is int8."""

    name = "mil.quantize"
    input = operand_def(TensorType)
    zero_point = opt_operand_def(TensorType)
    scale = operand_def(TensorType)
    axis = opt_prop_def(I64Attr)
    output_dtype = prop_def(StringAttr)
    result = result_def(TensorType)
    CONST_OPERANDS: ClassVar = ("zero_point", "scale")

    def __init__(
        self,
        input: Value,
        scale: Value,
        zero_point: Value | None = None,
        axis: int | None = None,
        output_dtype: str = "int8",
    ):
        self.init_mil(
            {"input": input, "zero_point": zero_point, "scale": scale},
            {"axis": i64_attr(axis), "output_dtype": StringAttr(output_dtype)},
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = cls.tensor_operands(operand_types, properties)
        data, scale, zero_point = ops["input"], ops["scale"], ops["zero_point"]
        assert data is not None and scale is not None
        require_element_type(cls.name, "input", data, FLOAT)
        require_same_element_type(cls.name, [("input", data), ("scale", scale)])
        dtype = choice(
            cls.name,
            "output_dtype",
            str_prop(properties, "output_dtype"),
            list(QUANTIZED_DTYPES),
        )
        if zero_point is not None:
            require_element_type(cls.name, "zero_point", zero_point, (i8,))
        check_quantization_parameters(
            cls.name,
            ("input", data),
            scale,
            zero_point,
            optional_axis(properties),
        )
        return [tensor(data.get_shape(), QUANTIZED_DTYPES[dtype])]


@mil_op_definition
class DequantizeOp(TaggedOptionalOperandsOp):
    """scale · (input − zero_point) for int8 input; the result has scale's
    dtype (fp16 or fp32); zero_point defaults to 0."""

    name = "mil.dequantize"
    input = operand_def(TensorType)
    zero_point = opt_operand_def(TensorType)
    scale = operand_def(TensorType)
    axis = opt_prop_def(I64Attr)
    result = result_def(TensorType)
    CONST_OPERANDS: ClassVar = ("zero_point", "scale")

    def __init__(
        self,
        input: Value,
        scale: Value,
        zero_point: Value | None = None,
        axis: int | None = None,
    ):
        self.init_mil(
            {"input": input, "zero_point": zero_point, "scale": scale},
            {"axis": i64_attr(axis)},
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = cls.tensor_operands(operand_types, properties)
        data, scale, zero_point = ops["input"], ops["scale"], ops["zero_point"]
        assert data is not None and scale is not None
        require_element_type(cls.name, "input", data, (i8,))
        require_element_type(cls.name, "scale", scale, FLOAT)
        if zero_point is not None:
            require_same_element_type(
                cls.name, [("input", data), ("zero_point", zero_point)]
            )
        check_quantization_parameters(
            cls.name,
            ("input", data),
            scale,
            zero_point,
            optional_axis(properties),
        )
        return [tensor(data.get_shape(), scale.element_type)]


@mil_op_definition
class ConstexprAffineDequantizeOp(MilOp):
    """A compile-time constant scale · (quantized_data − zero_point) of int8
    data; zero_point is int8 or fp32, the result has scale's dtype. All inputs
    are consts and `axis` is required even for scalar parameters."""

    name = "mil.constexpr_affine_dequantize"
    quantized_data = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    scale = operand_def(TensorType)
    axis = prop_def(I64Attr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    CONST_OPERANDS: ClassVar = ("quantized_data", "zero_point", "scale")

    def __init__(
        self, quantized_data: Value, zero_point: Value, scale: Value, axis: int
    ):
        self.init_mil(
            {
                "quantized_data": quantized_data,
                "zero_point": zero_point,
                "scale": scale,
            },
            {"axis": i64_attr(axis)},
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = cls.tensor_operands(operand_types, properties)
        data, scale, zero_point = ops["quantized_data"], ops["scale"], ops["zero_point"]
        assert data is not None and scale is not None and zero_point is not None
        require_element_type(cls.name, "quantized_data", data, (i8,))
        require_element_type(cls.name, "zero_point", zero_point, (i8, f32))
        require_element_type(cls.name, "scale", scale, FLOAT)
        check_quantization_parameters(
            cls.name,
            ("quantized_data", data),
            scale,
            zero_point,
            int_prop(properties, "axis"),
            axis_required=True,
        )
        return [tensor(data.get_shape(), scale.element_type)]
