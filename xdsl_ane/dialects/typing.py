"""Shared typing machinery for the rlx and mil dialects.

Both dialects work on static-shaped builtin tensors. Every op computes its
result types from its operand types and properties in exactly one place, the
classmethod ``infer_result_types``; the op's builder calls it to fill in the
result types, and its verifier calls it again and compares. Errors raised
while inferring are ``VerifyException``s whose message names the op, the
operand and the shapes involved.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TypeVar

from xdsl.dialects.builtin import (
    I64,
    BoolAttr,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    OpDef,
    VerificationContext,
    irdl_to_attr_constraint,
)
from xdsl.traits import OpTrait
from xdsl.utils.exceptions import VerifyException

from xdsl_ane.dialects.dtypes import DTYPES

Shape = tuple[int, ...]

ELEMENT_TYPES: dict[str, Attribute] = {
    d.mlir: d.element
    for d in DTYPES
    if d.computes and not d.mil_only and d.element is not None
}
"""The element types the project supports, by their MLIR spelling."""

MIL_ELEMENT_TYPES: dict[str, Attribute] = {
    d.mlir: d.element for d in DTYPES if d.computes and d.element is not None
}
"""Those and the ones only mil ops take (i16, ui16: coremltools' casts of
gather indices)."""

STORAGE_ELEMENT_TYPES: dict[str, Attribute] = {
    d.mlir: d.element for d in DTYPES if not d.computes and d.element is not None
}
"""Element types of compressed weight data only (the data of
`constexpr_blockwise_shift_scale`, the indices of `constexpr_lut_to_dense`):
MIL's int4 and uint1 to uint8. No op computes on them; the consts holding
them accept them (`tensor_of(..., storage=True)`). numpy holds them as int8
(i4) and uint8."""


def tensor(shape: Sequence[int], element_type: Attribute) -> TensorType:
    """The builtin tensor type of the given static shape and element type."""
    return _tensor(tuple(shape), element_type)


@lru_cache(maxsize=8192)
def _tensor(shape: tuple[int, ...], element_type: Attribute) -> TensorType:
    """Types are immutable values, so one instance serves every use of a
    shape and element type (building one verifies its parameters: a
    pass's type inference asks for the same few types thousands of times)."""
    return TensorType(element_type, shape)


def shape_of(value: SSAValue) -> Shape:
    """The static shape of a tensor-typed value."""
    t = value.type
    assert isinstance(t, TensorType)
    return t.get_shape()


def element_type_of(value: SSAValue) -> Attribute:
    """The element type of a tensor-typed value."""
    t = value.type
    assert isinstance(t, TensorType)
    return t.element_type


def fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def fmt_type(t: Attribute) -> str:
    if isinstance(t, TensorType):
        return f"{fmt_shape(t.get_shape())} {element_name(t.element_type)}"
    return str(t)


def element_name(t: Attribute) -> str:
    for name, et in (*MIL_ELEMENT_TYPES.items(), *STORAGE_ELEMENT_TYPES.items()):
        if t == et:
            return name
    return str(t)


def is_float(t: Attribute) -> bool:
    return isinstance(t, Float16Type | Float32Type)


def is_integer(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data > 1


def is_bool(t: Attribute) -> bool:
    return t == i1


class OpTypeError(VerifyException):
    """A type or shape error found while inferring an op's result type."""

    def __init__(self, op_name: str, message: str):
        super().__init__(f"{op_name}: {message}")
        self.op_name = op_name


def tensor_of(
    op_name: str,
    operand: str,
    t: Attribute,
    what: str = "operand",
    storage: bool = False,
) -> TensorType:
    """Checks that `t` is a supported static tensor type and returns it.

    `what` says what `t` is the type of: "operand" (named `operand`),
    "result" or "property" (named `operand`). With `storage`, the element
    types of compressed weight data (`STORAGE_ELEMENT_TYPES`) are accepted
    too."""
    label = "result type" if what == "result" else f"{what} '{operand}'"
    if not isinstance(t, TensorType):
        raise OpTypeError(op_name, f"{label} must be a tensor, got {t}")
    if any(d < 0 for d in t.get_shape()):
        raise OpTypeError(
            op_name,
            f"{label} has a dynamic shape {t}; only static shapes are supported",
        )
    supported = MIL_ELEMENT_TYPES if op_name.startswith("mil.") else ELEMENT_TYPES
    if t.element_type not in supported.values() and not (
        storage and t.element_type in STORAGE_ELEMENT_TYPES.values()
    ):
        raise OpTypeError(
            op_name,
            f"{label} has unsupported element type "
            f"{t.element_type} (expected one of {', '.join(supported)})",
        )
    return t


def require_float(op_name: str, operand: str, t: TensorType) -> None:
    if not is_float(t.element_type):
        raise OpTypeError(
            op_name,
            f"operand '{operand}' must have a float element type (f16 or f32), "
            f"got {element_name(t.element_type)}",
        )


def require_same_element_type(
    op_name: str, named: Sequence[tuple[str, TensorType]]
) -> Attribute:
    first_name, first = named[0]
    for name, t in named[1:]:
        if t.element_type != first.element_type:
            raise OpTypeError(
                op_name,
                f"operands '{first_name}' ({element_name(first.element_type)}) and "
                f"'{name}' ({element_name(t.element_type)}) must have the same "
                "element type",
            )
    return first.element_type


def require_rank(op_name: str, operand: str, t: TensorType, rank: int) -> Shape:
    shape = t.get_shape()
    if len(shape) != rank:
        raise OpTypeError(
            op_name,
            f"operand '{operand}' must have rank {rank}, got shape {fmt_shape(shape)}",
        )
    return shape


def broadcast_shapes(op_name: str, named: Sequence[tuple[str, Shape]]) -> Shape:
    """numpy broadcasting of several shapes; the error names both operands."""
    result: list[int] = []
    for name, shape in named:
        rank = max(len(result), len(shape))
        a = [1] * (rank - len(result)) + result
        b = [1] * (rank - len(shape)) + list(shape)
        out: list[int] = []
        for da, db in zip(a, b):
            if da != db and da != 1 and db != 1:
                others = ", ".join(f"'{n}' {fmt_shape(s)}" for n, s in named)
                raise OpTypeError(
                    op_name,
                    f"operand shapes do not broadcast: {others} (operand '{name}')",
                )
            out.append(db if da == 1 else da)
        result = out
    return tuple(result)


def normalize_axis(
    op_name: str,
    prop: str,
    axis: int,
    rank: int,
    operand: tuple[str, Sequence[int]] | None = None,
) -> int:
    """Maps a possibly negative axis of a tensor of `rank` into [0, rank),
    the one rule of both dialects; out of range, the error names the
    property and, where given, the operand (name, shape) it indexes."""
    if not -rank <= axis < rank:
        where = (
            f"for operand '{operand[0]}' {fmt_shape(operand[1])}"
            if operand is not None
            else f"(rank {rank})"
        )
        raise OpTypeError(
            op_name,
            f"property '{prop}' value {axis} is out of range [{-rank}, {rank}) {where}",
        )
    return axis % rank


def normalize_axes(
    op_name: str,
    prop: str,
    axes: Sequence[int],
    rank: int,
    operand: tuple[str, Sequence[int]] | None = None,
) -> tuple[int, ...]:
    """`normalize_axis` of each entry; a repeated axis is an error."""
    normalized = tuple(normalize_axis(op_name, prop, a, rank, operand) for a in axes)
    if len(set(normalized)) != len(normalized):
        of = (
            f" of operand '{operand[0]}' {fmt_shape(operand[1])}"
            if operand is not None
            else ""
        )
        raise OpTypeError(
            op_name, f"property '{prop}' {list(axes)} repeats an axis{of}"
        )
    return normalized


def concatenated_shape(
    op_name: str,
    named: Sequence[tuple[str, Shape]],
    axis: int,
    same_shape: bool = False,
) -> Shape:
    """The shape of the operands `named` (name, shape; at least one) joined
    along `axis` (normalized): each must match the first in every dimension
    but the axis (in its whole shape with `same_shape`, as interleaving
    needs); the error names both operands."""
    first_name, first = named[0]
    total = 0
    for name, shape in named:
        mismatch = len(shape) != len(first) or any(
            a != b for i, (a, b) in enumerate(zip(shape, first)) if i != axis
        )
        if mismatch or (same_shape and shape != first):
            what = "the shape" if same_shape else "all dimensions but the axis"
            raise OpTypeError(
                op_name,
                f"operand '{name}' {fmt_shape(shape)} must match operand "
                f"'{first_name}' {fmt_shape(first)} in {what} (axis {axis})",
            )
        total += shape[axis]
    return tuple(total if i == axis else d for i, d in enumerate(first))


def matmul_shape(
    op_name: str, lhs: tuple[str, Shape, bool], rhs: tuple[str, Shape, bool]
) -> Shape:
    """The result shape of a batched matrix product of `lhs` and `rhs`
    (each: name, shape of rank ≥ 2, transposed): the last axis of lhs
    contracts with the second-to-last of rhs after the transposes, and the
    batch dimensions broadcast like numpy's."""
    (lhs_name, lhs_shape, lhs_t), (rhs_name, rhs_shape, rhs_t) = lhs, rhs
    a, b = list(lhs_shape), list(rhs_shape)
    if lhs_t:
        a[-2], a[-1] = a[-1], a[-2]
    if rhs_t:
        b[-2], b[-1] = b[-1], b[-2]
    operands = (
        f"operand '{lhs_name}' {fmt_shape(lhs_shape)} and operand '{rhs_name}' "
        f"{fmt_shape(rhs_shape)}"
    )
    if a[-1] != b[-2]:
        raise OpTypeError(
            op_name,
            f"contraction dimensions differ: {operands} (after transposes "
            f"{fmt_shape(a)} x {fmt_shape(b)})",
        )
    try:
        batch = broadcast_shapes(
            op_name, [(lhs_name, tuple(a[:-2])), (rhs_name, tuple(b[:-2]))]
        )
    except OpTypeError:
        raise OpTypeError(
            op_name,
            f"batch dimensions {fmt_shape(a[:-2])} of operand '{lhs_name}' "
            f"{fmt_shape(lhs_shape)} and {fmt_shape(b[:-2])} of operand "
            f"'{rhs_name}' {fmt_shape(rhs_shape)} do not broadcast",
        ) from None
    return (*batch, a[-2], b[-1])


def reduced_shape(shape: Shape, axes: Sequence[int], keep_dims: bool) -> Shape:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def product(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# --- property accessors ------------------------------------------------------


def int_prop(
    props: Mapping[str, Attribute], key: str, default: int | None = None
) -> int:
    attr = props.get(key)
    if attr is None:
        if default is None:
            raise KeyError(key)
        return default
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


def bool_prop(props: Mapping[str, Attribute], key: str, default: bool = False) -> bool:
    attr = props.get(key)
    if attr is None:
        return default
    assert isinstance(attr, IntegerAttr)
    return bool(attr.value.data)


def float_prop(
    props: Mapping[str, Attribute], key: str, default: float | None = None
) -> float | None:
    attr = props.get(key)
    if attr is None:
        return default
    assert isinstance(attr, FloatAttr)
    return attr.value.data


def str_prop(
    props: Mapping[str, Attribute], key: str, default: str | None = None
) -> str | None:
    attr = props.get(key)
    if attr is None:
        return default
    assert isinstance(attr, StringAttr)
    return attr.data


def ints_prop(
    props: Mapping[str, Attribute], key: str, default: Sequence[int] | None = None
) -> tuple[int, ...] | None:
    attr = props.get(key)
    if attr is None:
        return None if default is None else tuple(default)
    assert isinstance(attr, DenseArrayBase)
    return tuple(int(v) for v in attr.get_values())


def choice(op_name: str, prop: str, value: str | None, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise OpTypeError(
            op_name,
            f"property '{prop}' is \"{value}\", expected one of "
            + ", ".join(f'"{a}"' for a in allowed),
        )
    return value


# --- property builders (for op __init__s) -----------------------------------


def i64_attr(v: int | None) -> IntegerAttr | None:
    return None if v is None else IntegerAttr(v, i64)


def bool_attr(v: bool | None) -> BoolAttr | None:
    return None if v is None else IntegerAttr(int(v), i1)


def f32_attr(v: float | None) -> FloatAttr | None:
    return None if v is None else FloatAttr(float(v), f32)


def str_attr(v: str | None) -> StringAttr | None:
    return None if v is None else StringAttr(v)


def ints_attr(v: Sequence[int] | None) -> DenseArrayBase | None:
    return None if v is None else DenseArrayBase.from_list(i64, list(v))


I64Attr = IntegerAttr[I64]
"""An integer property (builtin `i64` IntegerAttr)."""
F32Attr = FloatAttr[Float32Type]
"""A float property (builtin `f32` FloatAttr)."""
I64Array = DenseArrayBase[I64]
"""A list property (`array<i64: ...>`)."""


PROPERTY_FORMS: tuple[tuple[object, str], ...] = (
    (I64Attr, "an i64 integer (`-1 : i64`)"),
    (I64Array, "an i64 array (`array<i64: 0, 1>`)"),
    (F32Attr, "an f32 float (`1.0e-05 : f32`)"),
    (BoolAttr, "a bool (`true` or `false`)"),
    (StringAttr, 'a string (`"name"`)'),
)
"""How each kind of property is written, for error messages."""


def property_form(constraint: object) -> str | None:
    for kind, form in PROPERTY_FORMS:
        if constraint == irdl_to_attr_constraint(kind):
            return form
    return None


def verify_property_types(op: IRDLOperation) -> None:
    """Checks each property against its declared kind; the error names the
    op, the property, what it must be and what it is (IRDL's own message
    names neither the op nor the property)."""
    check_property_types(op.get_irdl_definition(), op.properties)


def check_property_types(op_def: OpDef, properties: Mapping[str, Attribute]) -> None:
    """`verify_property_types` on the properties of an op not yet built (as
    a parser holds them)."""
    for name, definition in op_def.properties.items():
        attr = properties.get(name)
        if attr is None:
            continue
        try:
            definition.constr.verify(attr, VerificationContext())
        except VerifyException as e:
            form = property_form(definition.constr)
            expected = f"must be {form}" if form else f"is invalid ({e})"
            raise OpTypeError(
                op_def.name, f"property '{name}' {expected}, got {attr}"
            ) from None


OpClass = TypeVar("OpClass", bound=type[IRDLOperation])


def checks_property_types(cls: OpClass) -> OpClass:
    """Puts `verify_property_types` in front of an IRDL-defined op's
    verifier (apply after `irdl_op_definition`)."""
    generated = cls.verify_

    def verify_(self: IRDLOperation) -> None:
        verify_property_types(self)
        generated(self)

    cls.verify_ = verify_  # type: ignore[method-assign]
    return cls


class KnownAttributesOnly(OpTrait):
    """Rejects attributes that are not properties of the op, so a misspelled
    optional property (`transpose_b` for `transpose_rhs`) is an error rather
    than silently meaning the default. Dialect-prefixed discardable
    attributes (`foo.bar`) stay allowed."""

    def verify(self, op: Operation) -> None:
        assert isinstance(op, IRDLOperation)
        known = set(op.get_irdl_definition().properties)
        for name in op.attributes:
            if "." in name:
                continue
            hint = (
                f" (its properties are {', '.join(sorted(known))})"
                if known
                else " (it has no properties)"
            )
            raise VerifyException(f"{op.name}: unknown property '{name}'{hint}")


class InferredTypeOp(IRDLOperation, ABC):
    """An op whose result types follow from its operand types and properties.

    Subclasses implement ``infer_result_types``; ``build`` constructs the op
    with the inferred types and ``verify_`` recomputes and compares them.
    """

    @classmethod
    def infer_result_types(
        cls,
        operand_types: Sequence[Attribute],
        properties: Mapping[str, Attribute],
    ) -> list[Attribute]:
        raise NotImplementedError

    def init_inferred(
        self,
        operands: Sequence[SSAValue | Operation | Sequence[SSAValue | Operation]],
        properties: Mapping[str, Attribute | None] | None = None,
    ) -> None:
        """Initialises the op from its operands and properties, inferring its
        result types (properties given as None are left absent)."""
        props = {k: v for k, v in (properties or {}).items() if v is not None}
        flat = [
            SSAValue.get(o)
            for group in operands
            for o in (group if isinstance(group, Sequence) else [group])
        ]
        result_types = self.infer_result_types([v.type for v in flat], props)
        IRDLOperation.__init__(
            self, operands=operands, result_types=result_types, properties=props
        )

    def verify_(self) -> None:
        expected = self.infer_result_types(
            [o.type for o in self.operands], self.properties
        )
        actual = [r.type for r in self.results]
        if len(expected) != len(actual):
            raise OpTypeError(
                self.name, f"expected {len(expected)} results, got {len(actual)}"
            )
        for i, (e, a) in enumerate(zip(expected, actual)):
            if e != a:
                which = "result" if len(actual) == 1 else f"result #{i}"
                raise OpTypeError(
                    self.name,
                    f"{which} type {fmt_type(a)} does not match the inferred type "
                    f"{fmt_type(e)}",
                )
