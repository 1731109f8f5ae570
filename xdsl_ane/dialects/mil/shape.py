"""MIL's shape ops: `reshape transpose slice_by_size concat tile expand_dims
squeeze split`, and `pixel_shuffle` / `pixel_unshuffle` (an image's channels
to and from its spatial axes).

Type rules from coremltools iOS15 tensor_operation.py and iOS17
tensor_transformation.py (reshape, transpose, slice_by_size, expand_dims and
squeeze accept int8 from iOS17 on; tile and split do not; pixel_shuffle is
iOS15's, pixel_unshuffle iOS16's, both fp16 and fp32 only).
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import BoolAttr, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)

from xdsl_ane.dialects.mil.base import (
    ANY_TYPE,
    FLOAT,
    FLOAT_INT32_BOOL,
    FUNCTIONAL,
    MilCanonicalization,
    MilOp,
    Value,
    mil_op_definition,
    operand_axes,
    operand_axis,
    require_element_type,
)
from xdsl_ane.dialects.mil.inputs import UINT32, MilInput
from xdsl_ane.dialects.mil.traits import ImageOp, RearrangesElements
from xdsl_ane.dialects.typing import (
    I64Array,
    I64Attr,
    OpTypeError,
    Shape,
    bool_attr,
    bool_prop,
    concatenated_shape,
    fmt_shape,
    i64_attr,
    int_prop,
    ints_attr,
    ints_prop,
    product,
    require_same_element_type,
    tensor,
    tensor_of,
)


def reshape_target(op_name: str, x_shape: Shape, shape: Sequence[int]) -> Shape:
    """MIL (iOS17) reshape: a 0 in `shape` copies the dimension of x at the
    same position counted from the right (1 past x's rank), one -1 takes the
    remaining element count."""
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        raise OpTypeError(
            op_name,
            f"property 'shape' {list(shape)} may hold one -1 and no other negative "
            "entries",
        )
    out = list(shape)
    for i in range(1, len(out) + 1):
        if out[-i] == 0:
            out[-i] = x_shape[-i] if i <= len(x_shape) else 1
    if -1 in out:
        known = product(d for d in out if d != -1)
        if known == 0 or product(x_shape) % known:
            raise OpTypeError(
                op_name,
                f"property 'shape' {list(shape)} cannot hold the elements of operand "
                f"'x' {fmt_shape(x_shape)}",
            )
        out[out.index(-1)] = product(x_shape) // known
    if product(out) != product(x_shape):
        raise OpTypeError(
            op_name,
            f"property 'shape' {list(shape)} (= {fmt_shape(out)}) has a different "
            f"element count than operand 'x' {fmt_shape(x_shape)}",
        )
    return tuple(out)


class ShapeOp(MilOp, ABC):
    """Base of the single-input ops below; operand 'x' is checked against
    `domain`. Each rearranges x's elements."""

    traits = traits_def(RearrangesElements())
    DOMAIN: ClassVar[tuple[Attribute, ...]] = ANY_TYPE

    @classmethod
    def input_tensor(cls, operand_types, properties) -> TensorType:
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, cls.DOMAIN)
        return x


class ReshapeCanonicalization(MilCanonicalization):
    """reshape∘reshape, identity reshapes and reshapes of weight consts."""


class TransposeCanonicalization(MilCanonicalization):
    """transpose∘transpose, identity transposes and transposes of weight
    consts."""


class ConcatCanonicalization(MilCanonicalization):
    """A concat of reshapes joined in the sources' view."""


@mil_op_definition
class ReshapeOp(ShapeOp):
    """The elements of x in row-major order with shape `shape`; `shape` may
    hold 0 (copy x's dimension, aligned from the right) and one -1."""

    name = "mil.reshape"
    x = operand_def(TensorType)
    shape = prop_def(I64Array)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("shape"))
    assembly_format = FUNCTIONAL
    traits = traits_def(ReshapeCanonicalization())

    def __init__(self, x: Value, shape: Sequence[int]):
        self.init_mil({"x": x}, {"shape": ints_attr(shape)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.input_tensor(operand_types, properties)
        shape = ints_prop(properties, "shape")
        assert shape is not None
        return [tensor(reshape_target(cls.name, x.get_shape(), shape), x.element_type)]


@mil_op_definition
class TransposeOp(ShapeOp):
    """Permutes the axes of x: result axis i is x's axis perm[i]."""

    name = "mil.transpose"
    x = operand_def(TensorType)
    perm = prop_def(I64Array)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("perm"))
    assembly_format = FUNCTIONAL
    traits = traits_def(TransposeCanonicalization())

    def __init__(self, x: Value, perm: Sequence[int]):
        self.init_mil({"x": x}, {"perm": ints_attr(perm)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.input_tensor(operand_types, properties)
        shape = x.get_shape()
        perm = ints_prop(properties, "perm")
        assert perm is not None
        if len(perm) != len(shape):
            raise OpTypeError(
                cls.name,
                f"property 'perm' {list(perm)} must have one entry per axis of "
                f"operand 'x' {fmt_shape(shape)}",
            )
        axes = operand_axes(cls.name, "perm", perm, ("x", shape))
        return [tensor([shape[a] for a in axes], x.element_type)]


@mil_op_definition
class SliceBySizeOp(ShapeOp):
    """x[begin[i] : begin[i] + size[i]] on every axis; size -1 slices to the
    end. begin must lie in [0, dim)."""

    name = "mil.slice_by_size"
    x = operand_def(TensorType)
    begin = prop_def(I64Array)
    size = prop_def(I64Array)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("begin"), MilInput("size"))
    assembly_format = FUNCTIONAL

    def __init__(self, x: Value, begin: Sequence[int], size: Sequence[int]):
        self.init_mil({"x": x}, {"begin": ints_attr(begin), "size": ints_attr(size)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.input_tensor(operand_types, properties)
        shape = x.get_shape()
        begin = ints_prop(properties, "begin")
        size = ints_prop(properties, "size")
        assert begin is not None and size is not None
        for prop, values in (("begin", begin), ("size", size)):
            if len(values) != len(shape):
                raise OpTypeError(
                    cls.name,
                    f"property '{prop}' {list(values)} must have one entry per axis "
                    f"of operand 'x' {fmt_shape(shape)}",
                )
        out: list[int] = []
        for i, (dim, b, s) in enumerate(zip(shape, begin, size)):
            end = dim if s == -1 else b + s
            if not 0 <= b < dim or not (s == -1 or s >= 1) or end > dim:
                raise OpTypeError(
                    cls.name,
                    f"slice begin {b} size {s} on axis {i} is out of range for "
                    f"operand 'x' {fmt_shape(shape)}",
                )
            out.append(end - b)
        return [tensor(out, x.element_type)]


@mil_op_definition
class ConcatOp(MilOp):
    """Joins `values` along `axis`; with `interleave` (all shapes equal) the
    inputs alternate along the axis: out[i·n + k] = values[k][i]. Rank-0
    values are stacked into a vector."""

    name = "mil.concat"
    values = var_operand_def(TensorType)
    axis = prop_def(I64Attr)
    interleave = opt_prop_def(BoolAttr)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (
        MilInput("values"),
        MilInput("axis"),
        MilInput("interleave", False),
    )
    assembly_format = FUNCTIONAL
    traits = traits_def(RearrangesElements(), ConcatCanonicalization())

    def __init__(
        self, values: Sequence[Value], axis: int, interleave: bool | None = None
    ):
        self.init_mil(
            {"values": values},
            {"axis": i64_attr(axis), "interleave": bool_attr(interleave)},
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        types = cls.named_operand_types(operand_types, properties)["values"]
        assert isinstance(types, list)
        if not types:
            raise OpTypeError(cls.name, "operand 'values' must not be empty")
        named = [
            (f"values[{i}]", tensor_of(cls.name, f"values[{i}]", t))
            for i, t in enumerate(types)
        ]
        element = require_same_element_type(cls.name, named)
        first = named[0][1].get_shape()
        interleave = bool_prop(properties, "interleave")
        if not first:
            axis = operand_axis(
                cls.name,
                "axis",
                int_prop(properties, "axis"),
                ("values[0]", first),
                rank=1,
            )
            for name, t in named:
                if t.get_shape():
                    raise OpTypeError(
                        cls.name,
                        f"operand '{name}' {fmt_shape(t.get_shape())} must have the "
                        "rank of operand 'values[0]' []",
                    )
            return [tensor([len(named)], element)]
        axis = operand_axis(
            cls.name, "axis", int_prop(properties, "axis"), ("values[0]", first)
        )
        shapes = [(name, t.get_shape()) for name, t in named]
        out = concatenated_shape(cls.name, shapes, axis, same_shape=interleave)
        return [tensor(out, element)]


@mil_op_definition
class TileOp(ShapeOp):
    """Repeats x reps[i] times along axis i (numpy.tile)."""

    name = "mil.tile"
    x = operand_def(TensorType)
    reps = prop_def(I64Array)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("reps"))
    assembly_format = FUNCTIONAL
    DOMAIN: ClassVar = FLOAT_INT32_BOOL

    def __init__(self, x: Value, reps: Sequence[int]):
        self.init_mil({"x": x}, {"reps": ints_attr(reps)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.input_tensor(operand_types, properties)
        shape = x.get_shape()
        reps = ints_prop(properties, "reps")
        assert reps is not None
        if not shape or len(reps) != len(shape) or any(r < 1 for r in reps):
            raise OpTypeError(
                cls.name,
                f"property 'reps' {list(reps)} must hold one positive entry per axis "
                f"of operand 'x' {fmt_shape(shape)}",
            )
        return [tensor([d * r for d, r in zip(shape, reps)], x.element_type)]


@mil_op_definition
class ExpandDimsOp(ShapeOp):
    """Inserts a size-1 axis at each of `axes`, positions in the result
    (-rank(result) <= axis < rank(result))."""

    name = "mil.expand_dims"
    x = operand_def(TensorType)
    axes = prop_def(I64Array)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("axes"))
    assembly_format = FUNCTIONAL

    def __init__(self, x: Value, axes: Sequence[int]):
        self.init_mil({"x": x}, {"axes": ints_attr(axes)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.input_tensor(operand_types, properties)
        axes = ints_prop(properties, "axes")
        assert axes is not None
        out = list(x.get_shape())
        for axis in sorted(
            operand_axes(cls.name, "axes", axes, ("x", out), len(out) + len(axes))
        ):
            out.insert(axis, 1)
        return [tensor(out, x.element_type)]


@mil_op_definition
class SqueezeOp(ShapeOp):
    """Removes the size-1 axes among `axes` (all size-1 axes when absent);
    named axes of another size are kept, as in PyTorch."""

    name = "mil.squeeze"
    x = operand_def(TensorType)
    axes = opt_prop_def(I64Array)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("axes"))
    assembly_format = FUNCTIONAL

    def __init__(self, x: Value, axes: Sequence[int] | None = None):
        self.init_mil({"x": x}, {"axes": ints_attr(axes)})

    @classmethod
    def squeezed_axes(cls, shape: Shape, properties) -> tuple[int, ...]:
        axes = ints_prop(properties, "axes")
        if axes is None:
            return tuple(i for i, d in enumerate(shape) if d == 1)
        axes = operand_axes(cls.name, "axes", axes, ("x", shape))
        return tuple(a for a in axes if shape[a] == 1)

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.input_tensor(operand_types, properties)
        shape = x.get_shape()
        if not shape:
            raise OpTypeError(cls.name, "operand 'x' must have rank >= 1, got []")
        axes = cls.squeezed_axes(shape, properties)
        return [
            tensor([d for i, d in enumerate(shape) if i not in axes], x.element_type)
        ]


@mil_op_definition
class SplitOp(ShapeOp):
    """Splits x along `axis` into `num_splits` equal parts or parts of
    `split_sizes` (at least one is given; both must agree)."""

    name = "mil.split"
    x = operand_def(TensorType)
    num_splits = opt_prop_def(I64Attr)
    split_sizes = opt_prop_def(I64Array)
    axis = prop_def(I64Attr)
    outputs = var_result_def(TensorType)
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("num_splits"),
        MilInput("split_sizes"),
        MilInput("axis"),
    )
    assembly_format = FUNCTIONAL
    DOMAIN: ClassVar = FLOAT_INT32_BOOL

    def __init__(
        self,
        x: Value,
        axis: int,
        num_splits: int | None = None,
        split_sizes: Sequence[int] | None = None,
    ):
        props = {
            "axis": i64_attr(axis),
            "num_splits": i64_attr(num_splits),
            "split_sizes": ints_attr(split_sizes),
        }
        props = {k: v for k, v in props.items() if v is not None}
        types = self.infer_result_types([SSAValue.get(x).type], props)
        IRDLOperation.__init__(
            self, operands=[x], result_types=[types], properties=props
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.input_tensor(operand_types, properties)
        shape = x.get_shape()
        axis = operand_axis(
            cls.name, "axis", int_prop(properties, "axis"), ("x", shape)
        )
        num_splits = properties.get("num_splits")
        sizes = ints_prop(properties, "split_sizes")
        if num_splits is None and sizes is None:
            raise OpTypeError(
                cls.name,
                "one of the properties 'num_splits' and 'split_sizes' is required",
            )
        if sizes is None:
            n = int_prop(properties, "num_splits")
            if n < 1 or shape[axis] % n:
                raise OpTypeError(
                    cls.name,
                    f"num_splits {n} does not divide axis {axis} of operand 'x' "
                    f"{fmt_shape(shape)}",
                )
            sizes = (shape[axis] // n,) * n
        if num_splits is not None and int_prop(properties, "num_splits") != len(sizes):
            raise OpTypeError(
                cls.name,
                f"num_splits {int_prop(properties, 'num_splits')} differs from the "
                f"length of split_sizes {list(sizes)}",
            )
        if any(s < 1 for s in sizes) or sum(sizes) != shape[axis]:
            raise OpTypeError(
                cls.name,
                f"split_sizes {list(sizes)} must be positive and sum to axis {axis} of "
                f"operand 'x' {fmt_shape(shape)}",
            )
        results = []
        for s in sizes:
            out = list(shape)
            out[axis] = s
            results.append(tensor(out, x.element_type))
        return results


def shuffle_factor(op_name: str, name: str, properties) -> int:
    """pixel_shuffle's upscale_factor or pixel_unshuffle's downscale_factor:
    a positive integer."""
    factor = int_prop(properties, name)
    if factor < 1:
        raise OpTypeError(op_name, f"property '{name}' value {factor} must be ≥ 1")
    return factor


def image_shape(op_name: str, x: TensorType) -> tuple[int, int, int, int]:
    """x's [N, C, H, W]: pixel_shuffle and pixel_unshuffle take rank 4."""
    shape = x.get_shape()
    if len(shape) != 4:
        raise OpTypeError(
            op_name,
            f"operand 'x' must have rank 4 [N, C, H, W], got {fmt_shape(shape)}",
        )
    n, c, h, w = shape
    return n, c, h, w


@mil_op_definition
class PixelShuffleOp(ShapeOp):
    """The channels of x [N, C·f², H, W] (fp16 or fp32) moved into f×f
    spatial blocks: [N, C, H·f, W·f], y[n, c, h·f + i, w·f + j] =
    x[n, c·f² + i·f + j, h, w] with f = `upscale_factor` (int32), as
    torch's `pixel_shuffle`. The channel count must be a multiple of f²
    (coremltools' type inference floors C / f² without checking)."""

    name = "mil.pixel_shuffle"
    x = operand_def(TensorType)
    upscale_factor = prop_def(I64Attr)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("upscale_factor"))
    DOMAIN: ClassVar = FLOAT
    assembly_format = FUNCTIONAL

    traits = traits_def(ImageOp())

    def __init__(self, x: Value, upscale_factor: int):
        self.init_mil({"x": x}, {"upscale_factor": i64_attr(upscale_factor)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.input_tensor(operand_types, properties)
        n, c, h, w = image_shape(cls.name, x)
        f = shuffle_factor(cls.name, "upscale_factor", properties)
        if c % (f * f):
            raise OpTypeError(
                cls.name,
                f"operand 'x' {fmt_shape(x.get_shape())} has {c} channels, not a "
                f"multiple of upscale_factor² = {f * f}",
            )
        return [tensor((n, c // (f * f), h * f, w * f), x.element_type)]


@mil_op_definition
class PixelUnshuffleOp(ShapeOp):
    """The inverse of pixel_shuffle: each f×f spatial block of x [N, C,
    H·f, W·f] (fp16 or fp32) moved into the channels, [N, C·f², H, W],
    y[n, c·f² + i·f + j, h, w] = x[n, c, h·f + i, w·f + j] with f =
    `downscale_factor` (a uint32 in MIL), as torch's `pixel_unshuffle`. H
    and W must be multiples of f (coremltools' type inference divides
    without checking)."""

    name = "mil.pixel_unshuffle"
    x = operand_def(TensorType)
    downscale_factor = prop_def(I64Attr)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("downscale_factor", dtype=UINT32))
    OPSET: ClassVar = "iOS16"
    DOMAIN: ClassVar = FLOAT
    assembly_format = FUNCTIONAL

    traits = traits_def(ImageOp())

    def __init__(self, x: Value, downscale_factor: int):
        self.init_mil({"x": x}, {"downscale_factor": i64_attr(downscale_factor)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.input_tensor(operand_types, properties)
        n, c, h, w = image_shape(cls.name, x)
        f = shuffle_factor(cls.name, "downscale_factor", properties)
        if h % f or w % f:
            raise OpTypeError(
                cls.name,
                f"operand 'x' {fmt_shape(x.get_shape())}: H and W must be "
                f"multiples of downscale_factor {f}",
            )
        return [tensor((n, c * f * f, h // f, w // f), x.element_type)]


OPS = (
    ReshapeOp,
    TransposeOp,
    SliceBySizeOp,
    ConcatOp,
    TileOp,
    ExpandDimsOp,
    SqueezeOp,
    SplitOp,
    PixelShuffleOp,
    PixelUnshuffleOp,
)
"""The ops of this family, as the mil dialect lists them."""
