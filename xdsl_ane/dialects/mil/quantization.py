"""MIL's affine quantization: `quantize`, `dequantize` (iOS17),
`constexpr_affine_dequantize` (iOS16), and the compressed weights of iOS18:
`constexpr_blockwise_shift_scale` (int8/int4 data with per-block scales)
and `constexpr_lut_to_dense` (palettized: indices into lookup tables).

`scale` and `zero_point` are tensor inputs in MIL, so they are operands here:
const scalars (per-tensor) or const vectors along `axis` (per-channel).
Type rules from coremltools iOS17 quantization_ops.py and iOS16
constexpr_ops.py; of MIL's int8/uint8 we support int8.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    IntegerType,
    StringAttr,
    TensorType,
    f16,
    f32,
    i8,
)
from xdsl.ir import Operation, SSAValue
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
from xdsl_ane.dialects.mil.inputs import MilInput
from xdsl_ane.dialects.typing import (
    STORAGE_ELEMENT_TYPES,
    I64Attr,
    OpTypeError,
    choice,
    element_name,
    fmt_shape,
    i64_attr,
    int_prop,
    require_same_element_type,
    str_prop,
    tensor,
    tensor_of,
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
    MIL_INPUTS: ClassVar = (
        MilInput("input"),
        MilInput("zero_point"),
        MilInput("scale"),
        MilInput("axis"),
        MilInput("output_dtype"),
    )
    OPSET: ClassVar = "iOS17"
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
    MIL_INPUTS: ClassVar = (
        MilInput("input"),
        MilInput("zero_point"),
        MilInput("scale"),
        MilInput("axis"),
    )
    OPSET: ClassVar = "iOS17"
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
    MIL_INPUTS: ClassVar = (
        MilInput("quantized_data"),
        MilInput("zero_point"),
        MilInput("scale"),
        MilInput("axis"),
    )
    OPSET: ClassVar = "iOS16"
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


# --- iOS18 compressed weights (coremltools iOS18/compression.py) -----------------

INT4 = STORAGE_ELEMENT_TYPES["i4"]
UINT4 = STORAGE_ELEMENT_TYPES["ui4"]
UINT8 = STORAGE_ELEMENT_TYPES["ui8"]
SHIFT_SCALE_DATA = (INT4, UINT4, i8, UINT8, f16, f32)
"""constexpr_blockwise_shift_scale's SrcT (and OffsetT)."""
LUT_INDICES = tuple(STORAGE_ELEMENT_TYPES[f"ui{w}"] for w in (1, 2, 3, 4, 6, 8))
"""constexpr_lut_to_dense's IndicesT: uint1, uint2, uint3, uint4, uint6, uint8."""
LUT_VALUES = (i8, UINT8, f16, f32)


def storage_operands(
    op_type: type[MilOp], operand_types, properties
) -> dict[str, TensorType | None]:
    """`tensor_operands` accepting the element types of compressed data."""
    named = op_type.named_operand_types(operand_types, properties)
    out: dict[str, TensorType | None] = {}
    for name, t in named.items():
        assert not isinstance(t, list)
        out[name] = (
            None if t is None else tensor_of(op_type.name, name, t, storage=True)
        )
    return out


def block_sizes(
    op_name: str, data: tuple[str, TensorType], params: tuple[str, TensorType]
) -> tuple[int, ...]:
    """The block size along each axis, data.shape[i] / params.shape[i]: the
    parameter has data's rank and each of its dimensions divides data's."""
    (data_name, data_type), (param_name, param_type) = data, params
    shape, param_shape = data_type.get_shape(), param_type.get_shape()
    if len(param_shape) != len(shape):
        raise OpTypeError(
            op_name,
            f"operand '{param_name}' {fmt_shape(param_shape)} must have the rank of "
            f"operand '{data_name}' {fmt_shape(shape)}",
        )
    for axis, (d, p) in enumerate(zip(shape, param_shape)):
        if p == 0 or d % p:
            raise OpTypeError(
                op_name,
                f"operand '{param_name}' {fmt_shape(param_shape)}: dimension {axis} "
                f"({p}) does not divide that of operand '{data_name}' "
                f"{fmt_shape(shape)} ({d})",
            )
    return tuple(d // p for d, p in zip(shape, param_shape))


@mil_op_definition
class ConstexprBlockwiseShiftScaleOp(TaggedOptionalOperandsOp):
    """A compile-time constant scale · (data − offset), `scale` and `offset`
    repeated block-wise to data's shape: block size data.shape[i] /
    scale.shape[i] along each axis (1 per channel along an axis of full
    size, the whole axis where scale has size 1). data is int4, uint4, int8,
    uint8, fp16 or fp32; scale fp16 or fp32 (the result's dtype); offset,
    optional, has scale's shape and a float dtype or data's."""

    name = "mil.constexpr_blockwise_shift_scale"
    data = operand_def(TensorType)
    scale = operand_def(TensorType)
    offset = opt_operand_def(TensorType)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (MilInput("data"), MilInput("scale"), MilInput("offset"))
    OPSET: ClassVar = "iOS18"
    CONST_OPERANDS: ClassVar = ("data", "scale", "offset")

    def __init__(self, data: Value, scale: Value, offset: Value | None = None):
        self.init_mil({"data": data, "scale": scale, "offset": offset})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = storage_operands(cls, operand_types, properties)
        data, scale, offset = ops["data"], ops["scale"], ops["offset"]
        assert data is not None and scale is not None
        require_element_type(cls.name, "data", data, SHIFT_SCALE_DATA)
        require_element_type(cls.name, "scale", scale, FLOAT)
        if not data.get_shape():
            raise OpTypeError(cls.name, "operand 'data' must have rank 1 or more")
        block_sizes(cls.name, ("data", data), ("scale", scale))
        if offset is not None:
            require_element_type(cls.name, "offset", offset, SHIFT_SCALE_DATA)
            if offset.get_shape() != scale.get_shape():
                raise OpTypeError(
                    cls.name,
                    f"operand 'offset' {fmt_shape(offset.get_shape())} must have the "
                    f"shape of operand 'scale' {fmt_shape(scale.get_shape())}",
                )
            if offset.element_type not in FLOAT and offset.element_type != (
                data.element_type
            ):
                raise OpTypeError(
                    cls.name,
                    f"operand 'offset' has element type "
                    f"{element_name(offset.element_type)}: a float type or that of "
                    f"operand 'data' ({element_name(data.element_type)})",
                )
        return [tensor(data.get_shape(), scale.element_type)]


def index_bits(element_type) -> int:
    assert isinstance(element_type, IntegerType)
    return element_type.width.data


@mil_op_definition
class ConstexprLutToDenseOp(MilOp):
    """A compile-time constant looked up from palettes: `lut` has shape
    [G0, ..., Gk-1, 2^nbits, V] for `indices` of rank k and dtype
    uint{nbits}; each Gi divides indices.shape[i], and element x takes
    lut[x0 / (shape0 / G0), ..., indices[x], :] — one palette per block of
    indices.shape[i] / Gi along each axis. With a vector size V > 1 each
    index stands for V consecutive elements along `vector_axis`
    (required then), whose length is multiplied by V."""

    name = "mil.constexpr_lut_to_dense"
    indices = operand_def(TensorType)
    lut = operand_def(TensorType)
    vector_axis = opt_prop_def(I64Attr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    MIL_INPUTS: ClassVar = (
        MilInput("indices"),
        MilInput("lut"),
        MilInput("vector_axis"),
    )
    OPSET: ClassVar = "iOS18"
    """The iOS18 form; iOS16 has an op of this name with other inputs."""
    CONST_OPERANDS: ClassVar = ("indices", "lut")

    def __init__(self, indices: Value, lut: Value, vector_axis: int | None = None):
        self.init_mil(
            {"indices": indices, "lut": lut}, {"vector_axis": i64_attr(vector_axis)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = storage_operands(cls, operand_types, properties)
        indices, lut = ops["indices"], ops["lut"]
        assert indices is not None and lut is not None
        require_element_type(cls.name, "indices", indices, LUT_INDICES)
        require_element_type(cls.name, "lut", lut, LUT_VALUES)
        shape, lut_shape = indices.get_shape(), lut.get_shape()
        if not shape:
            raise OpTypeError(cls.name, "operand 'indices' must have rank 1 or more")
        if len(lut_shape) != len(shape) + 2:
            raise OpTypeError(
                cls.name,
                f"operand 'lut' {fmt_shape(lut_shape)} must have rank "
                f"{len(shape) + 2} (that of operand 'indices' {fmt_shape(shape)} "
                "plus palette and vector dimensions)",
            )
        palettes = tensor(lut_shape[:-2], lut.element_type)
        block_sizes(cls.name, ("indices", indices), ("lut", palettes))
        bits = index_bits(indices.element_type)
        if lut_shape[-2] != 2**bits:
            raise OpTypeError(
                cls.name,
                f"operand 'lut' {fmt_shape(lut_shape)} has {lut_shape[-2]} entries per "
                f"palette; uint{bits} indices need {2**bits}",
            )
        vector_size = lut_shape[-1]
        axis = optional_axis_named(properties, "vector_axis")
        result = list(shape)
        if axis is not None:
            axis = operand_axis(cls.name, "vector_axis", axis, ("indices", shape))
            result[axis] *= vector_size
        elif vector_size != 1:
            raise OpTypeError(
                cls.name,
                f"property 'vector_axis' is required with vector size {vector_size} "
                f"(operand 'lut' {fmt_shape(lut_shape)})",
            )
        return [tensor(result, lut.element_type)]


def optional_axis_named(properties, name: str) -> int | None:
    return int_prop(properties, name) if name in properties else None


OPS = (
    QuantizeOp,
    DequantizeOp,
    ConstexprAffineDequantizeOp,
    ConstexprBlockwiseShiftScaleOp,
    ConstexprLutToDenseOp,
)
"""The ops of this family, as the mil dialect lists them."""


def int8_weight(value: SSAValue) -> bool:
    """Whether `value` is a weight its constexpr op expands from int8 data
    (W8A8's weights; LUT indices are unsigned)."""
    owner = value.owner
    if not isinstance(owner, Operation) or not owner.name.startswith("mil.constexpr_"):
        return False
    return getattr(owner.operands[0].type, "element_type", None) == i8
