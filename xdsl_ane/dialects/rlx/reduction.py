"""rlx reductions: reduce_sum, reduce_mean, reduce_max and reduce_min over
`axes`, softmax along one axis, argmax (the index of the largest value
along one axis, greedy decoding in the model), cumsum (the running sum
along one axis: RoBERTa's position ids, cumsum(input_ids != pad)), topk
(the k largest or smallest values along one axis and their indices: torch's
topk and sort) and argsort (the indices that sort one axis: torch's
argsort)."""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import BoolAttr, TensorType, f16, f32, i1, i32
from xdsl.irdl import (
    BaseAttr,
    VarConstraint,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from xdsl_ane.dialects.rlx.base import FUNCTIONAL, RlxOp, Value, rlx_op_definition
from xdsl_ane.dialects.typing import (
    I64Array,
    I64Attr,
    OpTypeError,
    bool_attr,
    bool_prop,
    element_name,
    fmt_shape,
    i64_attr,
    int_prop,
    ints_attr,
    ints_prop,
    normalize_axes,
    normalize_axis,
    reduced_shape,
    require_float,
    tensor,
    tensor_of,
)


class ReduceOp(RlxOp, ABC):
    """Reduces `axes`; `keep_dims` keeps them as size 1."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    axes = prop_def(I64Array)
    keep_dims = opt_prop_def(BoolAttr)
    assembly_format = FUNCTIONAL

    def __init__(
        self, input: Value, axes: Sequence[int], keep_dims: bool | None = None
    ):
        self.init_inferred(
            [input], {"axes": ints_attr(axes), "keep_dims": bool_attr(keep_dims)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        if t.element_type == i1:
            raise OpTypeError(cls.name, "operand 'input' must not be i1")
        shape = t.get_shape()
        axes = ints_prop(properties, "axes")
        assert axes is not None
        if not axes:
            raise OpTypeError(cls.name, "axes must not be empty")
        normalized = normalize_axes(cls.name, "axes", axes, len(shape))
        keep = bool_prop(properties, "keep_dims")
        return [tensor(reduced_shape(shape, normalized, keep), t.element_type)]


@rlx_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over `axes`: Σ x; `keep_dims` (default false) keeps them as size 1."""

    name = "rlx.reduce_sum"


@rlx_op_definition
class ReduceMeanOp(ReduceOp):
    """Mean over `axes`: Σ x / n, n the elements reduced (on integers, rounded
    toward zero); `keep_dims` (default false) keeps them as size 1."""

    name = "rlx.reduce_mean"


@rlx_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over `axes`: max x; `keep_dims` (default false) keeps them as
    size 1."""

    name = "rlx.reduce_max"


@rlx_op_definition
class ReduceMinOp(ReduceOp):
    """Minimum over `axes`: min x; `keep_dims` (default false) keeps them as
    size 1."""

    name = "rlx.reduce_min"


@rlx_op_definition
class SoftmaxOp(RlxOp):
    """exp(x - max) / sum(exp(x - max)) along `axis` (default -1)."""

    name = "rlx.softmax"
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    input = operand_def(T)
    result = result_def(T)
    axis = opt_prop_def(I64Attr)
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input: Value, axis: int | None = None):
        self.init_inferred([input], {"axis": i64_attr(axis)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", t)
        normalize_axis(
            cls.name, "axis", int_prop(properties, "axis", -1), t.get_num_dims()
        )
        return [t]


@rlx_op_definition
class ArgmaxOp(RlxOp):
    """The index (i32) of the largest value along `axis` (default -1; the
    first one on ties); `keep_dims` (default false) keeps the axis as size 1."""

    name = "rlx.argmax"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_prop_def(I64Attr)
    keep_dims = opt_prop_def(BoolAttr)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, axis: int = -1, keep_dims: bool | None = None):
        self.init_inferred(
            [input], {"axis": i64_attr(axis), "keep_dims": bool_attr(keep_dims)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = tensor_of(cls.name, "input", operand_types[0])
        if x.element_type == i1:
            raise OpTypeError(cls.name, "operand 'input' must not be i1")
        shape = x.get_shape()
        if not shape:
            raise OpTypeError(cls.name, "operand 'input' must have rank ≥ 1")
        axis = normalize_axis(
            cls.name, "axis", int_prop(properties, "axis", -1), len(shape)
        )
        keep = bool_prop(properties, "keep_dims")
        return [tensor(reduced_shape(shape, (axis,), keep), i32)]


CUMSUM_ELEMENT_TYPES = (f16, f32, i32)
"""What rlx.cumsum sums: MIL's cumsum takes fp16, fp32 and int32."""


def ordered_input(name: str, operand_types, axis: int) -> TensorType:
    """The input of an op along an axis of it (cumsum, argsort): f16, f32 or
    i32, of rank ≥ 1, `axis` within the rank."""
    t = tensor_of(name, "input", operand_types[0])
    if t.element_type not in CUMSUM_ELEMENT_TYPES:
        raise OpTypeError(
            name,
            "operand 'input' must be f16, f32 or i32, got "
            f"{element_name(t.element_type)}",
        )
    shape = t.get_shape()
    if not shape:
        raise OpTypeError(name, "operand 'input' must have rank ≥ 1")
    normalize_axis(name, "axis", axis, len(shape), ("input", shape))
    return t


@rlx_op_definition
class CumsumOp(RlxOp):
    """The running sum along `axis`: out[..., i, ...] = Σ_{j ≤ i} x[..., j,
    ...]. `exclusive` (default false) leaves out x[i] itself (a zero first);
    `reverse` (default false) sums from the end (Σ_{j ≥ i}, or j > i when
    exclusive). input is f16, f32 or i32 of rank ≥ 1 (i32 sums wrap); the
    result has its type. torch.cumsum(x, axis) is the default."""

    name = "rlx.cumsum"
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    input = operand_def(T)
    result = result_def(T)
    axis = prop_def(I64Attr)
    exclusive = opt_prop_def(BoolAttr)
    reverse = opt_prop_def(BoolAttr)
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(
        self,
        input: Value,
        axis: int,
        exclusive: bool | None = None,
        reverse: bool | None = None,
    ):
        self.init_inferred(
            [input],
            {
                "axis": i64_attr(axis),
                "exclusive": bool_attr(exclusive),
                "reverse": bool_attr(reverse),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        return [ordered_input(cls.name, operand_types, int_prop(properties, "axis"))]


@rlx_op_definition
class TopkOp(RlxOp):
    """The `k` largest values along `axis` (default -1), in descending order,
    and their indices (i32) along it; with `largest` false (default true)
    the k smallest, in ascending order. Each result has the input's shape
    with `axis` of size k. torch.topk with sorted=True; with k the axis's
    size, torch.sort (and argsort: the indices alone)."""

    name = "rlx.topk"
    input = operand_def(TensorType)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    k = prop_def(I64Attr)
    axis = opt_prop_def(I64Attr)
    largest = opt_prop_def(BoolAttr)
    assembly_format = FUNCTIONAL

    def __init__(
        self,
        input: Value,
        k: int,
        axis: int | None = None,
        largest: bool | None = None,
    ):
        self.init_inferred(
            [input],
            {"k": i64_attr(k), "axis": i64_attr(axis), "largest": bool_attr(largest)},
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        if t.element_type not in CUMSUM_ELEMENT_TYPES:
            raise OpTypeError(
                cls.name,
                "operand 'input' must be f16, f32 or i32, got "
                f"{element_name(t.element_type)}",
            )
        shape = list(t.get_shape())
        if not shape:
            raise OpTypeError(cls.name, "operand 'input' must have rank ≥ 1")
        axis = normalize_axis(
            cls.name,
            "axis",
            int_prop(properties, "axis", -1),
            len(shape),
            ("input", shape),
        )
        k = int_prop(properties, "k")
        if not 1 <= k <= shape[axis]:
            raise OpTypeError(
                cls.name,
                f"property 'k' value {k} is out of range [1, {shape[axis]}] for axis "
                f"{axis} of operand 'input' {fmt_shape(shape)}",
            )
        shape[axis] = k
        return [tensor(shape, t.element_type), tensor(shape, i32)]


@rlx_op_definition
class ArgsortOp(RlxOp):
    """The i32 indices that sort the input along `axis` (default -1), in
    ascending order of the values, or descending with `descending` (default
    false); equal values keep their order. The result has the input's shape.
    torch.argsort with stable=True (its default sort leaves the order of
    ties open)."""

    name = "rlx.argsort"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = opt_prop_def(I64Attr)
    descending = opt_prop_def(BoolAttr)
    assembly_format = FUNCTIONAL

    def __init__(
        self, input: Value, axis: int | None = None, descending: bool | None = None
    ):
        self.init_inferred(
            [input], {"axis": i64_attr(axis), "descending": bool_attr(descending)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = ordered_input(cls.name, operand_types, int_prop(properties, "axis", -1))
        return [tensor(t.get_shape(), i32)]


OPS = (
    ReduceSumOp,
    ReduceMeanOp,
    ReduceMaxOp,
    ReduceMinOp,
    SoftmaxOp,
    ArgmaxOp,
    CumsumOp,
    TopkOp,
    ArgsortOp,
)
"""The ops of this family, as the rlx dialect lists them."""
