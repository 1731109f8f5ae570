"""rlx linear algebra and shape ops: matmul, reshape, expand, transpose,
narrow, concat, gather."""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BoolAttr,
    TensorType,
    i1,
    i32,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)

from xdsl_ane.dialects.rlx.base import (
    FUNCTIONAL,
    RlxOp,
    Value,
    rlx_op_definition,
)
from xdsl_ane.dialects.typing import (
    I64Array,
    I64Attr,
    OpTypeError,
    Shape,
    bool_attr,
    bool_prop,
    concatenated_shape,
    element_name,
    fmt_shape,
    i64_attr,
    int_prop,
    ints_attr,
    ints_prop,
    matmul_shape,
    normalize_axis,
    product,
    require_same_element_type,
    tensor,
    tensor_of,
)

# --- linear algebra and shape ------------------------------------------------


@rlx_op_definition
class MatmulOp(RlxOp):
    """numpy matmul on the last two axes, after transposing those axes of
    lhs and rhs where `transpose_lhs` / `transpose_rhs` (default false) say
    so; batch axes broadcast."""

    name = "rlx.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    transpose_lhs = opt_prop_def(BoolAttr)
    transpose_rhs = opt_prop_def(BoolAttr)
    assembly_format = FUNCTIONAL

    def __init__(
        self,
        lhs: Value,
        rhs: Value,
        transpose_lhs: bool | None = None,
        transpose_rhs: bool | None = None,
    ):
        self.init_inferred(
            [lhs, rhs],
            {
                "transpose_lhs": bool_attr(transpose_lhs),
                "transpose_rhs": bool_attr(transpose_rhs),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        lhs = tensor_of(cls.name, "lhs", operand_types[0])
        rhs = tensor_of(cls.name, "rhs", operand_types[1])
        element = require_same_element_type(cls.name, [("lhs", lhs), ("rhs", rhs)])
        if element == i1:
            raise OpTypeError(cls.name, "operands must not be i1")
        a, b = list(lhs.get_shape()), list(rhs.get_shape())
        for operand, shape in (("lhs", a), ("rhs", b)):
            if len(shape) < 2:
                raise OpTypeError(
                    cls.name,
                    f"operand '{operand}' must have rank >= 2, got shape "
                    f"{fmt_shape(shape)}",
                )
        shape = matmul_shape(
            cls.name,
            ("lhs", tuple(a), bool_prop(properties, "transpose_lhs")),
            ("rhs", tuple(b), bool_prop(properties, "transpose_rhs")),
        )
        return [tensor(shape, element)]


class DeclaredShapeOp(RlxOp, ABC):
    """An op whose result shape is given by its declared result type (reshape,
    expand); the element type is the input's."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: Value, shape: Sequence[int]):
        t = SSAValue.get(input).type
        assert isinstance(t, TensorType)
        RlxOp.__init__(
            self, operands=[input], result_types=[tensor(shape, t.element_type)]
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        raise NotImplementedError

    def check_shapes(self, source: Shape, target: Shape) -> None:
        raise NotImplementedError

    def verify_(self) -> None:
        t = tensor_of(self.name, "input", self.input.type)
        r = tensor_of(self.name, "result", self.result.type, what="result")
        if t.element_type != r.element_type:
            raise OpTypeError(
                self.name,
                f"result element type {element_name(r.element_type)} differs from "
                f"the input's {element_name(t.element_type)}",
            )
        self.check_shapes(t.get_shape(), r.get_shape())


@rlx_op_definition
class ReshapeOp(DeclaredShapeOp):
    """Row-major reshape to the result type's shape (same element count)."""

    name = "rlx.reshape"

    def check_shapes(self, source: Shape, target: Shape) -> None:
        if product(source) != product(target):
            raise OpTypeError(
                self.name,
                f"cannot reshape operand 'input' {fmt_shape(source)} "
                f"({product(source)} elements) to {fmt_shape(target)} "
                f"({product(target)} elements)",
            )


@rlx_op_definition
class ExpandOp(DeclaredShapeOp):
    """numpy broadcast_to the result type's shape."""

    name = "rlx.expand"

    def check_shapes(self, source: Shape, target: Shape) -> None:
        ok = len(source) <= len(target) and all(
            s in (1, t) for s, t in zip(reversed(source), reversed(target))
        )
        if not ok:
            raise OpTypeError(
                self.name,
                f"operand 'input' {fmt_shape(source)} does not broadcast to "
                f"{fmt_shape(target)}",
            )


@rlx_op_definition
class TransposeOp(RlxOp):
    """result.shape[i] = input.shape[perm[i]]."""

    name = "rlx.transpose"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    perm = prop_def(I64Array)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, perm: Sequence[int]):
        self.init_inferred([input], {"perm": ints_attr(perm)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        shape = t.get_shape()
        perm = ints_prop(properties, "perm")
        assert perm is not None
        if sorted(perm) != list(range(len(shape))):
            raise OpTypeError(
                cls.name,
                f"perm {list(perm)} is not a permutation of the axes of operand "
                f"'input' {fmt_shape(shape)}",
            )
        return [tensor([shape[p] for p in perm], t.element_type)]


@rlx_op_definition
class NarrowOp(RlxOp):
    """input[..., start:start+length, ...] on `axis`."""

    name = "rlx.narrow"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(I64Attr)
    start = prop_def(I64Attr)
    length = prop_def(I64Attr)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, axis: int, start: int, length: int):
        self.init_inferred(
            [input],
            {
                "axis": i64_attr(axis),
                "start": i64_attr(start),
                "length": i64_attr(length),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        shape = list(t.get_shape())
        axis = normalize_axis(
            cls.name, "axis", int_prop(properties, "axis"), len(shape)
        )
        start, length = int_prop(properties, "start"), int_prop(properties, "length")
        if length < 1:
            raise OpTypeError(cls.name, f"length {length} must be at least 1")
        if start < 0 or start + length > shape[axis]:
            raise OpTypeError(
                cls.name,
                f"slice [{start}, {start + length}) is out of bounds for axis {axis} "
                f"of operand 'input' {fmt_shape(shape)}",
            )
        shape[axis] = length
        return [tensor(shape, t.element_type)]


@rlx_op_definition
class ConcatOp(RlxOp):
    """Joins the inputs along `axis`; the other axes must agree."""

    name = "rlx.concat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(I64Attr)
    assembly_format = FUNCTIONAL

    def __init__(self, inputs: Sequence[Value], axis: int):
        self.init_inferred([list(inputs)], {"axis": i64_attr(axis)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        if not operand_types:
            raise OpTypeError(cls.name, "expects at least one input")
        ts = [
            tensor_of(cls.name, f"inputs#{i}", t) for i, t in enumerate(operand_types)
        ]
        element = require_same_element_type(
            cls.name, [(f"inputs#{i}", t) for i, t in enumerate(ts)]
        )
        first = ts[0].get_shape()
        axis = normalize_axis(
            cls.name,
            "axis",
            int_prop(properties, "axis"),
            len(first),
            ("inputs#0", first),
        )
        shapes = [(f"inputs#{i}", t.get_shape()) for i, t in enumerate(ts)]
        return [tensor(concatenated_shape(cls.name, shapes, axis), element)]


@rlx_op_definition
class GatherOp(RlxOp):
    """numpy take(table, indices, axis): the result shape is
    table.shape[:axis] + indices.shape + table.shape[axis+1:]."""

    name = "rlx.gather"
    table = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(I64Attr)
    assembly_format = FUNCTIONAL

    def __init__(self, table: Value, indices: Value, axis: int = 0):
        self.init_inferred([table, indices], {"axis": i64_attr(axis)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        table = tensor_of(cls.name, "table", operand_types[0])
        indices = tensor_of(cls.name, "indices", operand_types[1])
        if indices.element_type != i32:
            raise OpTypeError(
                cls.name,
                "operand 'indices' must be i32, got "
                f"{element_name(indices.element_type)}",
            )
        shape = table.get_shape()
        axis = normalize_axis(
            cls.name, "axis", int_prop(properties, "axis"), len(shape)
        )
        result = (*shape[:axis], *indices.get_shape(), *shape[axis + 1 :])
        return [tensor(result, table.element_type)]


OPS = (
    MatmulOp,
    ReshapeOp,
    TransposeOp,
    NarrowOp,
    ConcatOp,
    ExpandOp,
    GatherOp,
)
"""The ops of this family, as the rlx dialect lists them."""
