"""The rlx dialect: a tensor-level ML IR modelled on the RLX compiler's IR.

Semantics are row-major and numpy-like; binary ops broadcast like numpy and
negative axes count from the end. Every op infers its result type from its
operands and properties (``infer_result_types``), so builders take only
operands and properties, and verifiers recompute the type and compare.
The op table in DESIGN.md is the specification.
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseIntOrFPElementsAttr,
    StringAttr,
    TensorType,
    f32,
    i1,
    i8,
    i32,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    BaseAttr,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from xdsl_ane.dialects.typing import (
    F32Attr,
    I64Array,
    I64Attr,
    InferredTypeOp,
    KnownAttributesOnly,
    OpTypeError,
    Shape,
    bool_attr,
    bool_prop,
    broadcast_shapes,
    choice,
    element_name,
    f32_attr,
    float_prop,
    fmt_shape,
    i64_attr,
    int_prop,
    ints_attr,
    ints_prop,
    is_float,
    normalize_axes,
    normalize_axis,
    product,
    reduced_shape,
    require_float,
    require_rank,
    require_same_element_type,
    str_attr,
    str_prop,
    tensor,
    tensor_of,
)

Value = SSAValue | Operation

FUNCTIONAL = "operands attr-dict `:` functional-type(operands, results)"
"""The short syntax of most rlx ops: `rlx.op %a, %b {props} : (A, B) -> R`."""


class RlxOp(InferredTypeOp, ABC):
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure(), KnownAttributesOnly())


# --- sources -----------------------------------------------------------------


@irdl_op_definition
class ConstantOp(RlxOp):
    """A literal tensor: `%c = rlx.constant dense<...> : tensor<...>`."""

    name = "rlx.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)

    def __init__(self, value: DenseIntOrFPElementsAttr):
        self.init_inferred([], {"value": value})

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error(f"{cls.name} expects a dense elements value")
        attrs = parser.parse_optional_attr_dict()
        # Built without inference so that a bad value is reported by the
        # verifier, with the op's location, rather than while parsing.
        return cls.create(
            result_types=[value.type], properties={"value": value}, attributes=attrs
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        value = properties["value"]
        assert isinstance(value, DenseIntOrFPElementsAttr)
        return [tensor_of(cls.name, "value", value.type, what="property")]


@irdl_op_definition
class ParamOp(RlxOp):
    """A named weight whose data comes from the weights file at compile time.

    Its type is the op's declared result type (there are no operands to infer
    it from); the verifier checks it is a supported static tensor."""

    name = "rlx.param"
    param_name = prop_def(StringAttr, prop_name="name")
    result = result_def(TensorType)
    assembly_format = "$name attr-dict `:` type($result)"
    traits = traits_def(KnownAttributesOnly())

    def __init__(self, name: str, result_type: TensorType):
        RlxOp.__init__(
            self, result_types=[result_type], properties={"name": StringAttr(name)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        raise NotImplementedError

    def verify_(self) -> None:
        tensor_of(self.name, "result", self.result.type, what="result")
        if not self.param_name.data:
            raise OpTypeError(self.name, "property 'name' must not be empty")


# --- elementwise -------------------------------------------------------------


class UnaryOp(RlxOp, ABC):
    """`y = f(x)` elementwise on a float tensor; the result has x's type."""

    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    input = operand_def(T)
    result = result_def(T)
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input: Value):
        self.init_inferred([input])

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", t)
        return [t]


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "rlx.relu"


@irdl_op_definition
class GeluOp(UnaryOp):
    """Exact GELU: x·Φ(x)."""

    name = "rlx.gelu"


@irdl_op_definition
class GeluTanhOp(UnaryOp):
    """GELU, tanh approximation."""

    name = "rlx.gelu_tanh"


@irdl_op_definition
class SiluOp(UnaryOp):
    name = "rlx.silu"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "rlx.sigmoid"


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "rlx.tanh"


@irdl_op_definition
class ExpOp(UnaryOp):
    name = "rlx.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    name = "rlx.log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    name = "rlx.sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    name = "rlx.rsqrt"


@irdl_op_definition
class NegOp(UnaryOp):
    name = "rlx.neg"


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "rlx.abs"


@irdl_op_definition
class SinOp(UnaryOp):
    name = "rlx.sin"


@irdl_op_definition
class CosOp(UnaryOp):
    name = "rlx.cos"


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    name = "rlx.reciprocal"


class BinaryOp(RlxOp, ABC):
    """`z = f(x, y)` elementwise with numpy broadcasting; operands share an
    element type."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    def __init__(self, lhs: Value, rhs: Value):
        self.init_inferred([lhs, rhs])

    @classmethod
    def operand_check(cls, lhs: TensorType, rhs: TensorType) -> None:
        """Element-type requirements beyond equality (none by default)."""

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        lhs = tensor_of(cls.name, "lhs", operand_types[0])
        rhs = tensor_of(cls.name, "rhs", operand_types[1])
        element = require_same_element_type(cls.name, [("lhs", lhs), ("rhs", rhs)])
        cls.operand_check(lhs, rhs)
        shape = broadcast_shapes(
            cls.name, [("lhs", lhs.get_shape()), ("rhs", rhs.get_shape())]
        )
        return [tensor(shape, element)]


class ArithmeticOp(BinaryOp, ABC):
    @classmethod
    def operand_check(cls, lhs: TensorType, rhs: TensorType) -> None:
        if lhs.element_type == i1:
            raise OpTypeError(cls.name, "operands must not be i1")


@irdl_op_definition
class AddOp(ArithmeticOp):
    name = "rlx.add"


@irdl_op_definition
class SubOp(ArithmeticOp):
    name = "rlx.sub"


@irdl_op_definition
class MulOp(ArithmeticOp):
    name = "rlx.mul"


@irdl_op_definition
class DivOp(ArithmeticOp):
    name = "rlx.div"


@irdl_op_definition
class MaxOp(ArithmeticOp):
    name = "rlx.max"


@irdl_op_definition
class MinOp(ArithmeticOp):
    name = "rlx.min"


@irdl_op_definition
class PowOp(ArithmeticOp):
    name = "rlx.pow"

    @classmethod
    def operand_check(cls, lhs: TensorType, rhs: TensorType) -> None:
        require_float(cls.name, "lhs", lhs)


COMPARE_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@irdl_op_definition
class CompareOp(BinaryOp):
    """Elementwise comparison; the result is i1 of the broadcast shape."""

    name = "rlx.compare"
    predicate = prop_def(StringAttr)

    def __init__(self, lhs: Value, rhs: Value, predicate: str):
        self.init_inferred([lhs, rhs], {"predicate": StringAttr(predicate)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        choice(
            cls.name,
            "predicate",
            str_prop(properties, "predicate"),
            COMPARE_PREDICATES,
        )
        (t,) = super().infer_result_types(operand_types, properties)
        assert isinstance(t, TensorType)
        return [tensor(t.get_shape(), i1)]


@irdl_op_definition
class WhereOp(RlxOp):
    """`cond ? on_true : on_false`, broadcasting all three."""

    name = "rlx.where"
    cond = operand_def(TensorType)
    on_true = operand_def(TensorType)
    on_false = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    def __init__(self, cond: Value, on_true: Value, on_false: Value):
        self.init_inferred([cond, on_true, on_false])

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        cond = tensor_of(cls.name, "cond", operand_types[0])
        a = tensor_of(cls.name, "on_true", operand_types[1])
        b = tensor_of(cls.name, "on_false", operand_types[2])
        if cond.element_type != i1:
            raise OpTypeError(
                cls.name,
                f"operand 'cond' must be i1, got {element_name(cond.element_type)}",
            )
        element = require_same_element_type(cls.name, [("on_true", a), ("on_false", b)])
        shape = broadcast_shapes(
            cls.name,
            [
                ("cond", cond.get_shape()),
                ("on_true", a.get_shape()),
                ("on_false", b.get_shape()),
            ],
        )
        return [tensor(shape, element)]


@irdl_op_definition
class CastOp(RlxOp):
    """Element type conversion; the result type names the target dtype."""

    name = "rlx.cast"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    def __init__(self, input: Value, element_type: Attribute):
        t = SSAValue.get(input).type
        assert isinstance(t, TensorType)
        RlxOp.__init__(
            self,
            operands=[input],
            result_types=[tensor(t.get_shape(), element_type)],
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        raise NotImplementedError

    def verify_(self) -> None:
        t = tensor_of(self.name, "input", self.input.type)
        r = tensor_of(self.name, "result", self.result.type, what="result")
        if t.get_shape() != r.get_shape():
            raise OpTypeError(
                self.name,
                f"result shape {fmt_shape(r.get_shape())} differs from input shape "
                f"{fmt_shape(t.get_shape())}",
            )


# --- linear algebra and shape ------------------------------------------------


@irdl_op_definition
class MatmulOp(RlxOp):
    """numpy matmul on the last two axes (after the optional transposes of
    those axes); batch axes broadcast."""

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
        if bool_prop(properties, "transpose_lhs"):
            a[-2], a[-1] = a[-1], a[-2]
        if bool_prop(properties, "transpose_rhs"):
            b[-2], b[-1] = b[-1], b[-2]
        if a[-1] != b[-2]:
            raise OpTypeError(
                cls.name,
                f"contraction dimensions differ: 'lhs' {fmt_shape(lhs.get_shape())} "
                f"and 'rhs' {fmt_shape(rhs.get_shape())} (after transposes "
                f"{fmt_shape(a)} x {fmt_shape(b)})",
            )
        try:
            batch = broadcast_shapes(
                cls.name, [("lhs", tuple(a[:-2])), ("rhs", tuple(b[:-2]))]
            )
        except OpTypeError:
            raise OpTypeError(
                cls.name,
                f"batch dimensions {fmt_shape(a[:-2])} of operand 'lhs' "
                f"{fmt_shape(lhs.get_shape())} and {fmt_shape(b[:-2])} of operand "
                f"'rhs' {fmt_shape(rhs.get_shape())} do not broadcast",
            ) from None
        return [tensor((*batch, a[-2], b[-1]), element)]


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


@irdl_op_definition
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


@irdl_op_definition
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


@irdl_op_definition
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


@irdl_op_definition
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


@irdl_op_definition
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
            cls.name, "axis", int_prop(properties, "axis"), len(first)
        )
        total = 0
        for i, t in enumerate(ts):
            shape = t.get_shape()
            same = len(shape) == len(first) and all(
                a == b for j, (a, b) in enumerate(zip(shape, first)) if j != axis
            )
            if not same:
                raise OpTypeError(
                    cls.name,
                    f"operand 'inputs#{i}' {fmt_shape(shape)} does not match "
                    f"'inputs#0' {fmt_shape(first)} off axis {axis}",
                )
            total += shape[axis]
        result = list(first)
        result[axis] = total
        return [tensor(result, element)]


@irdl_op_definition
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


# --- reductions and normalization -------------------------------------------


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


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "rlx.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    name = "rlx.reduce_mean"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    name = "rlx.reduce_max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    name = "rlx.reduce_min"


@irdl_op_definition
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


def check_last_axis_param(
    op_name: str, operand: str, param: TensorType, input: TensorType
) -> None:
    """A norm parameter (gamma, beta) is [D] for an input [..., D]."""
    shape = input.get_shape()
    if len(shape) == 0 or param.get_shape() != (shape[-1],):
        raise OpTypeError(
            op_name,
            f"operand '{operand}' {fmt_shape(param.get_shape())} must be "
            f"[{shape[-1] if shape else '?'}] for operand 'input' {fmt_shape(shape)}",
        )


class NormOp(RlxOp, ABC):
    """Normalization over the last axis with parameters of shape [D]."""

    PARAMS: ClassVar[tuple[str, ...]] = ()
    eps = prop_def(F32Attr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", t)
        named = [("input", t)]
        for pname, pt in zip(cls.PARAMS, operand_types[1:]):
            p = tensor_of(cls.name, pname, pt)
            check_last_axis_param(cls.name, pname, p, t)
            named.append((pname, p))
        require_same_element_type(cls.name, named)
        return [t]


@irdl_op_definition
class RmsNormOp(NormOp):
    """x · rsqrt(mean(x², last axis) + eps) · gamma."""

    name = "rlx.rms_norm"
    PARAMS: ClassVar[tuple[str, ...]] = ("gamma",)
    input = operand_def(TensorType)
    gamma = operand_def(TensorType)

    def __init__(self, input: Value, gamma: Value, eps: float):
        self.init_inferred([input, gamma], {"eps": f32_attr(eps)})


@irdl_op_definition
class LayerNormOp(NormOp):
    """(x − mean) · rsqrt(var + eps) · gamma + beta over the last axis."""

    name = "rlx.layer_norm"
    PARAMS: ClassVar[tuple[str, ...]] = ("gamma", "beta")
    input = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)

    def __init__(self, input: Value, gamma: Value, beta: Value, eps: float):
        self.init_inferred([input, gamma, beta], {"eps": f32_attr(eps)})


# --- rotary embedding --------------------------------------------------------

ROPE_STYLES = ("half", "interleaved")


def check_rope(
    op_name: str,
    operand: str,
    x: Attribute,
    cos: Attribute,
    sin: Attribute,
    properties: Mapping[str, Attribute],
) -> TensorType:
    """x [B, H, S, D] with cos, sin [S, D/2] of x's element type."""
    choice(op_name, "style", str_prop(properties, "style"), ROPE_STYLES)
    t = tensor_of(op_name, operand, x)
    require_float(op_name, operand, t)
    _, _, s, d = require_rank(op_name, operand, t, 4)
    if d % 2:
        raise OpTypeError(
            op_name,
            f"operand '{operand}' {fmt_shape(t.get_shape())} needs an even head dimension",
        )
    named = [(operand, t)]
    for name, table in (("cos", cos), ("sin", sin)):
        tt = tensor_of(op_name, name, table)
        if tt.get_shape() != (s, d // 2):
            raise OpTypeError(
                op_name,
                f"operand '{name}' {fmt_shape(tt.get_shape())} must be "
                f"{fmt_shape((s, d // 2))} for operand '{operand}' {fmt_shape(t.get_shape())}",
            )
        named.append((name, tt))
    require_same_element_type(op_name, named)
    return t


@irdl_op_definition
class RopeOp(RlxOp):
    """Rotary embedding: each pair (a, b) of the head dimension becomes
    (a·cos − b·sin, a·sin + b·cos); "half" pairs (i, i + D/2), "interleaved"
    pairs (2i, 2i + 1)."""

    name = "rlx.rope"
    input = operand_def(TensorType)
    cos = operand_def(TensorType)
    sin = operand_def(TensorType)
    result = result_def(TensorType)
    style = prop_def(StringAttr)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, cos: Value, sin: Value, style: str = "half"):
        self.init_inferred([input, cos, sin], {"style": str_attr(style)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        return [check_rope(cls.name, "input", *operand_types, properties)]


@irdl_op_definition
class RopeBackwardOp(RlxOp):
    """Gradient of rlx.rope: the rotation by −θ applied to d_out."""

    name = "rlx.rope_backward"
    d_out = operand_def(TensorType)
    cos = operand_def(TensorType)
    sin = operand_def(TensorType)
    result = result_def(TensorType)
    style = prop_def(StringAttr)
    assembly_format = FUNCTIONAL

    def __init__(self, d_out: Value, cos: Value, sin: Value, style: str = "half"):
        self.init_inferred([d_out, cos, sin], {"style": str_attr(style)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        return [check_rope(cls.name, "d_out", *operand_types, properties)]


# --- attention ---------------------------------------------------------------

MASKS = ("none", "causal", "bias")
ATTENTION_WRT = ("query", "key", "value")


def check_attention(
    op_name: str,
    operand_types: Sequence[Attribute],
    properties: Mapping[str, Attribute],
    with_d_out: bool,
) -> tuple[TensorType, TensorType, TensorType]:
    """Checks q [B,H,S,D], k [B,Hkv,Skv,D], v [B,Hkv,Skv,Dv], (d_out
    [B,H,S,Dv]), optional bias broadcastable to [B,H,S,Skv]; H % Hkv == 0."""
    mask = choice(op_name, "mask", str_prop(properties, "mask", "none"), MASKS)
    names = ["q", "k", "v"] + (["d_out"] if with_d_out else [])
    ts = [tensor_of(op_name, n, t) for n, t in zip(names, operand_types)]
    for n, t in zip(names, ts):
        require_float(op_name, n, t)
        require_rank(op_name, n, t, 4)
    require_same_element_type(op_name, list(zip(names, ts)))
    q, k, v = ts[:3]
    b, h, s, d = q.get_shape()
    kb, hkv, skv, kd = k.get_shape()
    if kb != b or kd != d:
        raise OpTypeError(
            op_name,
            f"operand 'k' {fmt_shape(k.get_shape())} must be [{b}, Hkv, Skv, {d}] "
            f"for operand 'q' {fmt_shape(q.get_shape())}",
        )
    vb, vh, vs, dv = v.get_shape()
    if (vb, vh, vs) != (b, hkv, skv):
        raise OpTypeError(
            op_name,
            f"operand 'v' {fmt_shape(v.get_shape())} must be [{b}, {hkv}, {skv}, Dv] "
            f"for operand 'k' {fmt_shape(k.get_shape())}",
        )
    if hkv == 0 or h % hkv:
        raise OpTypeError(
            op_name,
            f"query heads ({h}, operand 'q') must be a multiple of key/value heads "
            f"({hkv}, operand 'k') for grouped-query attention",
        )
    if with_d_out and ts[3].get_shape() != (b, h, s, dv):
        raise OpTypeError(
            op_name,
            f"operand 'd_out' {fmt_shape(ts[3].get_shape())} must be "
            f"{fmt_shape((b, h, s, dv))}, the attention output shape",
        )
    extra = operand_types[len(names) :]
    if mask == "bias":
        if len(extra) != 1:
            raise OpTypeError(op_name, "mask \"bias\" needs the operand 'bias'")
        bias = tensor_of(op_name, "bias", extra[0])
        require_same_element_type(op_name, [("q", q), ("bias", bias)])
        scores = (b, h, s, skv)
        bias_shape = bias.get_shape()
        fits = len(bias_shape) <= 4 and all(
            d in (1, t) for d, t in zip(reversed(bias_shape), reversed(scores))
        )
        if not fits:
            raise OpTypeError(
                op_name,
                f"operand 'bias' {fmt_shape(bias.get_shape())} does not broadcast to "
                f"the scores {fmt_shape(scores)}",
            )
    elif extra:
        raise OpTypeError(
            op_name, f'operand \'bias\' is given but mask is "{mask}" (expected "bias")'
        )
    return q, k, v


def attention_scale(op: AttentionOp | AttentionBackwardOp) -> float:
    """The `scale` property, or D^-0.5 for a head dimension D."""
    scale = float_prop(op.properties, "scale")
    if scale is not None:
        return scale
    q = op.q.type
    assert isinstance(q, TensorType)
    return 1.0 / math.sqrt(q.get_shape()[-1])


class AttentionBase(RlxOp, ABC):
    # Operands are declared on each op: xDSL orders operand definitions of a
    # subclass before inherited ones, and the operand order is the contract.
    result = result_def(TensorType)
    mask = opt_prop_def(StringAttr)
    scale = opt_prop_def(F32Attr)


@irdl_op_definition
class AttentionOp(AttentionBase):
    """softmax(q·kᵀ·scale + mask)·v with query head h reading key/value head
    h // (H/Hkv); "causal" lets query i see key j iff j ≤ i + (Skv − S)."""

    name = "rlx.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    assembly_format = "$q `,` $k `,` $v (`,` $bias^)? attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        q: Value,
        k: Value,
        v: Value,
        bias: Value | None = None,
        mask: str | None = None,
        scale: float | None = None,
    ):
        if bias is not None and mask is None:
            mask = "bias"
        self.init_inferred(
            [q, k, v, [bias] if bias is not None else []],
            {"mask": str_attr(mask), "scale": f32_attr(scale)},
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        q, _, v = check_attention(cls.name, operand_types, properties, False)
        return [tensor((*q.get_shape()[:3], v.get_shape()[3]), q.element_type)]


@irdl_op_definition
class AttentionBackwardOp(AttentionBase):
    """Gradient of rlx.attention with respect to q, k or v (`wrt`); under
    grouped-query attention the key/value gradient is summed over the query
    heads sharing each key/value head."""

    name = "rlx.attention_backward"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    d_out = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    wrt = prop_def(StringAttr)
    assembly_format = (
        "$q `,` $k `,` $v `,` $d_out (`,` $bias^)? attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        q: Value,
        k: Value,
        v: Value,
        d_out: Value,
        wrt: str,
        bias: Value | None = None,
        mask: str | None = None,
        scale: float | None = None,
    ):
        if bias is not None and mask is None:
            mask = "bias"
        self.init_inferred(
            [q, k, v, d_out, [bias] if bias is not None else []],
            {"wrt": str_attr(wrt), "mask": str_attr(mask), "scale": f32_attr(scale)},
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        wrt = choice(cls.name, "wrt", str_prop(properties, "wrt"), ATTENTION_WRT)
        q, k, v = check_attention(cls.name, operand_types, properties, True)
        return [{"query": q, "key": k, "value": v}[wrt]]


# --- loss --------------------------------------------------------------------


def check_cross_entropy(
    op_name: str, logits: Attribute, labels: Attribute
) -> TensorType:
    """logits [N, C] float; labels [N] i32, or float holding class indices."""
    lt = tensor_of(op_name, "logits", logits)
    require_float(op_name, "logits", lt)
    n, _ = require_rank(op_name, "logits", lt, 2)
    yt = tensor_of(op_name, "labels", labels)
    if yt.get_shape() != (n,):
        raise OpTypeError(
            op_name,
            f"operand 'labels' {fmt_shape(yt.get_shape())} must be [{n}] for operand "
            f"'logits' {fmt_shape(lt.get_shape())}",
        )
    if yt.element_type != i32 and not is_float(yt.element_type):
        raise OpTypeError(
            op_name,
            "operand 'labels' must be i32 or a float type holding class indices, "
            f"got {element_name(yt.element_type)}",
        )
    return lt


@irdl_op_definition
class SoftmaxCrossEntropyOp(RlxOp):
    """Per-row loss logsumexp(logits) − logits[label]."""

    name = "rlx.softmax_cross_entropy"
    logits = operand_def(TensorType)
    labels = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    def __init__(self, logits: Value, labels: Value):
        self.init_inferred([logits, labels])

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        lt = check_cross_entropy(cls.name, operand_types[0], operand_types[1])
        return [tensor(lt.get_shape()[:1], lt.element_type)]


@irdl_op_definition
class SoftmaxCrossEntropyBackwardOp(RlxOp):
    """d_logits = (softmax(logits) − onehot(labels)) · d_loss[:, None]."""

    name = "rlx.softmax_cross_entropy_backward"
    logits = operand_def(TensorType)
    labels = operand_def(TensorType)
    d_loss = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL

    def __init__(self, logits: Value, labels: Value, d_loss: Value):
        self.init_inferred([logits, labels, d_loss])

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        lt = check_cross_entropy(cls.name, operand_types[0], operand_types[1])
        dt = tensor_of(cls.name, "d_loss", operand_types[2])
        if dt.get_shape() != lt.get_shape()[:1]:
            raise OpTypeError(
                cls.name,
                f"operand 'd_loss' {fmt_shape(dt.get_shape())} must be "
                f"{fmt_shape(lt.get_shape()[:1])} for operand 'logits' "
                f"{fmt_shape(lt.get_shape())}",
            )
        require_same_element_type(cls.name, [("logits", lt), ("d_loss", dt)])
        return [lt]


# --- training ----------------------------------------------------------------


@irdl_op_definition
class RmsNormBackwardInputOp(RlxOp):
    """d_x for y = x·r·γ, r = rsqrt(mean(x²) + eps):
    d_x = r·(γ·d_y) − x·r³·mean(x·γ·d_y)."""

    name = "rlx.rms_norm_backward_input"
    input = operand_def(TensorType)
    gamma = operand_def(TensorType)
    d_out = operand_def(TensorType)
    result = result_def(TensorType)
    eps = prop_def(F32Attr)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, gamma: Value, d_out: Value, eps: float):
        self.init_inferred([input, gamma, d_out], {"eps": f32_attr(eps)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", x)
        g = tensor_of(cls.name, "gamma", operand_types[1])
        check_last_axis_param(cls.name, "gamma", g, x)
        dy = tensor_of(cls.name, "d_out", operand_types[2])
        check_same_shape(cls.name, "d_out", dy, "input", x)
        require_same_element_type(cls.name, [("input", x), ("gamma", g), ("d_out", dy)])
        return [x]


@irdl_op_definition
class RmsNormBackwardGammaOp(RlxOp):
    """d_γ = Σ over all but the last axis of d_y · x · rsqrt(mean(x²) + eps)."""

    name = "rlx.rms_norm_backward_gamma"
    input = operand_def(TensorType)
    d_out = operand_def(TensorType)
    result = result_def(TensorType)
    eps = prop_def(F32Attr)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, d_out: Value, eps: float):
        self.init_inferred([input, d_out], {"eps": f32_attr(eps)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", x)
        if x.get_num_dims() == 0:
            raise OpTypeError(cls.name, "operand 'input' must have rank >= 1")
        dy = tensor_of(cls.name, "d_out", operand_types[1])
        check_same_shape(cls.name, "d_out", dy, "input", x)
        require_same_element_type(cls.name, [("input", x), ("d_out", dy)])
        return [tensor(x.get_shape()[-1:], x.element_type)]


ACTIVATION_KINDS = ("relu", "silu", "gelu", "gelu_tanh", "sigmoid", "tanh")


@irdl_op_definition
class ActivationBackwardOp(RlxOp):
    """d_x = f'(x) · d_y for the activation named by `kind`."""

    name = "rlx.activation_backward"
    input = operand_def(TensorType)
    d_out = operand_def(TensorType)
    result = result_def(TensorType)
    kind = prop_def(StringAttr)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, d_out: Value, kind: str):
        self.init_inferred([input, d_out], {"kind": str_attr(kind)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        choice(cls.name, "kind", str_prop(properties, "kind"), ACTIVATION_KINDS)
        x = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", x)
        dy = tensor_of(cls.name, "d_out", operand_types[1])
        check_same_shape(cls.name, "d_out", dy, "input", x)
        require_same_element_type(cls.name, [("input", x), ("d_out", dy)])
        return [x]


def check_same_shape(
    op_name: str, name: str, t: TensorType, other_name: str, other: TensorType
) -> None:
    if t.get_shape() != other.get_shape():
        raise OpTypeError(
            op_name,
            f"operand '{name}' {fmt_shape(t.get_shape())} must have the shape of "
            f"operand '{other_name}' {fmt_shape(other.get_shape())}",
        )


# --- quantization ------------------------------------------------------------


@irdl_op_definition
class QuantizeOp(RlxOp):
    """q = clamp(round(x / scale) + zero_point, −128, 127) as i8 (round half to
    even)."""

    name = "rlx.quantize"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    scale = prop_def(F32Attr)
    zero_point = prop_def(I64Attr)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, scale: float, zero_point: int = 0):
        self.init_inferred(
            [input], {"scale": f32_attr(scale), "zero_point": i64_attr(zero_point)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", t)
        check_quantization(cls.name, properties)
        return [tensor(t.get_shape(), i8)]


def check_quantization(op_name: str, properties: Mapping[str, Attribute]) -> None:
    scale = float_prop(properties, "scale")
    if scale is None or not scale > 0 or not math.isfinite(scale):
        raise OpTypeError(op_name, f"scale {scale} must be a positive finite number")
    zp = int_prop(properties, "zero_point")
    if not -128 <= zp <= 127:
        raise OpTypeError(op_name, f"zero_point {zp} is outside the int8 range")


@irdl_op_definition
class DequantizeOp(RlxOp):
    """x = (q − zero_point) · scale; the result type picks f16 or f32."""

    name = "rlx.dequantize"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    scale = prop_def(F32Attr)
    zero_point = prop_def(I64Attr)
    assembly_format = FUNCTIONAL

    def __init__(
        self,
        input: Value,
        scale: float,
        zero_point: int = 0,
        element_type: Attribute | None = None,
    ):
        t = SSAValue.get(input).type
        assert isinstance(t, TensorType)
        RlxOp.__init__(
            self,
            operands=[input],
            result_types=[tensor(t.get_shape(), element_type or f32)],
            properties={"scale": f32_attr(scale), "zero_point": i64_attr(zero_point)},
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
        check_quantization(self.name, self.properties)
        r = tensor_of(self.name, "result", self.result.type, what="result")
        if not is_float(r.element_type) or r.get_shape() != t.get_shape():
            raise OpTypeError(
                self.name,
                f"result type {r} must be an f16 or f32 tensor of shape "
                f"{fmt_shape(t.get_shape())}",
            )


RLX = Dialect(
    "rlx",
    [
        ConstantOp,
        ParamOp,
        ReluOp,
        GeluOp,
        GeluTanhOp,
        SiluOp,
        SigmoidOp,
        TanhOp,
        ExpOp,
        LogOp,
        SqrtOp,
        RsqrtOp,
        NegOp,
        AbsOp,
        SinOp,
        CosOp,
        ReciprocalOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        MaxOp,
        MinOp,
        PowOp,
        CompareOp,
        WhereOp,
        CastOp,
        MatmulOp,
        ReshapeOp,
        TransposeOp,
        NarrowOp,
        ConcatOp,
        ExpandOp,
        GatherOp,
        ReduceSumOp,
        ReduceMeanOp,
        ReduceMaxOp,
        ReduceMinOp,
        SoftmaxOp,
        RmsNormOp,
        LayerNormOp,
        RopeOp,
        AttentionOp,
        SoftmaxCrossEntropyOp,
        SoftmaxCrossEntropyBackwardOp,
        AttentionBackwardOp,
        RmsNormBackwardInputOp,
        RmsNormBackwardGammaOp,
        RopeBackwardOp,
        ActivationBackwardOp,
        QuantizeOp,
        DequantizeOp,
    ],
)
"""The rlx dialect: every op of DESIGN.md's rlx table."""
