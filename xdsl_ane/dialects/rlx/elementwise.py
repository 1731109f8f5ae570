"""rlx sources (constant, param) and elementwise ops: unary math and
activations, binary arithmetic with numpy broadcasting, compare, where, cast."""

from __future__ import annotations

from abc import ABC
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    StringAttr,
    TensorType,
    f32,
    i1,
    i32,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    BaseAttr,
    VarConstraint,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer

from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.rlx.base import (
    FUNCTIONAL,
    RlxOp,
    Value,
    rlx_op_definition,
)
from xdsl_ane.dialects.typing import (
    KnownAttributesOnly,
    OpTypeError,
    broadcast_shapes,
    choice,
    element_name,
    fmt_shape,
    require_float,
    require_same_element_type,
    str_prop,
    tensor,
    tensor_of,
)

# --- sources -----------------------------------------------------------------


@rlx_op_definition
class ConstantOp(RlxOp):
    """A literal tensor: `%c = rlx.constant dense<...> : tensor<...>`."""

    name = "rlx.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)

    def __init__(self, value: DenseIntOrFPElementsAttr):
        self.init_inferred([], {"value": value})

    @classmethod
    def of(cls, value: np.ndarray) -> ConstantOp:
        """A constant holding `value`: f32 for floats, i1 for bools, i32 for
        other integers."""
        kind = value.dtype.kind
        element = f32 if kind == "f" else i1 if value.dtype == np.bool_ else i32
        return cls(dense_from_numpy(value, element))

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


@rlx_op_definition
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


@rlx_op_definition
class ReluOp(UnaryOp):
    """Rectified linear unit: max(x, 0)."""

    name = "rlx.relu"


@rlx_op_definition
class GeluOp(UnaryOp):
    """Exact GELU: x·Φ(x)."""

    name = "rlx.gelu"


@rlx_op_definition
class GeluTanhOp(UnaryOp):
    """GELU, tanh approximation."""

    name = "rlx.gelu_tanh"


@rlx_op_definition
class SiluOp(UnaryOp):
    """SiLU (swish): x·σ(x) = x / (1 + e^−x)."""

    name = "rlx.silu"


@rlx_op_definition
class SigmoidOp(UnaryOp):
    """Logistic sigmoid: σ(x) = 1 / (1 + e^−x)."""

    name = "rlx.sigmoid"


@rlx_op_definition
class TanhOp(UnaryOp):
    """Hyperbolic tangent: tanh(x)."""

    name = "rlx.tanh"


@rlx_op_definition
class ExpOp(UnaryOp):
    """Natural exponential: e^x."""

    name = "rlx.exp"


@rlx_op_definition
class LogOp(UnaryOp):
    """Natural logarithm: ln(x)."""

    name = "rlx.log"


@rlx_op_definition
class SqrtOp(UnaryOp):
    """Square root: √x."""

    name = "rlx.sqrt"


@rlx_op_definition
class RsqrtOp(UnaryOp):
    """Reciprocal square root: 1 / √x."""

    name = "rlx.rsqrt"


@rlx_op_definition
class NegOp(UnaryOp):
    """Negation: −x."""

    name = "rlx.neg"


@rlx_op_definition
class AbsOp(UnaryOp):
    """Absolute value: |x|."""

    name = "rlx.abs"


@rlx_op_definition
class SinOp(UnaryOp):
    """Sine: sin(x), x in radians."""

    name = "rlx.sin"


@rlx_op_definition
class CosOp(UnaryOp):
    """Cosine: cos(x), x in radians."""

    name = "rlx.cos"


@rlx_op_definition
class ReciprocalOp(UnaryOp):
    """Reciprocal: 1 / x."""

    name = "rlx.reciprocal"


@rlx_op_definition
class ErfOp(UnaryOp):
    """Error function: erf(x) = 2/√π ∫₀ˣ e^(−t²) dt."""

    name = "rlx.erf"


@rlx_op_definition
class FloorOp(UnaryOp):
    """Floor: the largest integer ≤ x (as a float)."""

    name = "rlx.floor"


@rlx_op_definition
class RoundOp(UnaryOp):
    """Round to the nearest integer, halves to even (torch.round: 0.5 -> 0,
    1.5 -> 2)."""

    name = "rlx.round"


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


@rlx_op_definition
class AddOp(ArithmeticOp):
    """Sum: x + y."""

    name = "rlx.add"


@rlx_op_definition
class SubOp(ArithmeticOp):
    """Difference: x − y."""

    name = "rlx.sub"


@rlx_op_definition
class MulOp(ArithmeticOp):
    """Product: x · y."""

    name = "rlx.mul"


@rlx_op_definition
class DivOp(ArithmeticOp):
    """Quotient: x / y (on integers, rounded toward zero)."""

    name = "rlx.div"


@rlx_op_definition
class MaxOp(ArithmeticOp):
    """Elementwise maximum: max(x, y)."""

    name = "rlx.max"


@rlx_op_definition
class MinOp(ArithmeticOp):
    """Elementwise minimum: min(x, y)."""

    name = "rlx.min"


@rlx_op_definition
class PowOp(ArithmeticOp):
    """Power, on floats: x^y."""

    name = "rlx.pow"

    @classmethod
    def operand_check(cls, lhs: TensorType, rhs: TensorType) -> None:
        require_float(cls.name, "lhs", lhs)


COMPARE_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@rlx_op_definition
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


@rlx_op_definition
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


@rlx_op_definition
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


OPS = (
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
    ErfOp,
    FloorOp,
    RoundOp,
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
)
"""The ops of this family, as the rlx dialect lists them."""
