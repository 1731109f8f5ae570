"""MIL's elementwise ops: activations and unary math, binary arithmetic and
comparisons with numpy broadcasting, `select` and `cast`.

Type rules (coremltools iOS15 elementwise_unary / elementwise_binary /
activation / control_flow.select, iOS17 cast / clip / log / rsqrt / inverse):
unary math takes fp16 or fp32 (`abs` and `square` also int32) and keeps the
input type; binary ops take two inputs of one dtype among fp16, fp32, int32
and broadcast like numpy.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import StringAttr, TensorType, i1
from xdsl.ir import Attribute
from xdsl.irdl import (
    BaseAttr,
    VarConstraint,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)

from xdsl_ane.ane.rules import from_a15
from xdsl_ane.dialects.mil.base import (
    ANY_TYPE,
    FLOAT,
    FLOAT_INT32,
    FLOAT_INT32_BOOL,
    FUNCTIONAL,
    MIL_DTYPES,
    MilCanonicalization,
    MilOp,
    Value,
    mil_op_definition,
    require_element_type,
)
from xdsl_ane.dialects.mil.inputs import LIKE_X, MilInput
from xdsl_ane.dialects.mil.traits import CopiesElements, Elementwise, EpsilonGuarded
from xdsl_ane.dialects.typing import (
    F32Attr,
    OpTypeError,
    broadcast_shapes,
    choice,
    f32_attr,
    float_prop,
    fmt_shape,
    require_same_element_type,
    str_attr,
    str_prop,
    tensor,
)


class ElementwiseCanonicalization(MilCanonicalization):
    """Layout ops (transpose, reshape) on the operands of an elementwise op
    move below it, to cancel with an inverse one."""


class EpsilonCanonicalization(MilCanonicalization):
    """Besides the elementwise patterns, `f(x + c, ε)` with a scalar const c
    becomes `f(x, c + ε)` for the ops that add an epsilon (log, rsqrt,
    inverse)."""


# --- unary ---------------------------------------------------------------------


class UnaryOp(MilOp, ABC):
    """`y = f(x)` elementwise; the result has x's type."""

    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    x = operand_def(T)
    result = result_def(T)
    assembly_format = "$x attr-dict `:` type($x)"
    traits = traits_def(Elementwise(), ElementwiseCanonicalization())
    MIL_INPUTS: ClassVar = (MilInput("x"),)

    DOMAIN: ClassVar[tuple[Attribute, ...]] = FLOAT
    """The element types MIL accepts for x."""

    def __init__(self, x: Value):
        self.init_mil({"x": x})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, cls.DOMAIN)
        return [x]


@mil_op_definition
class ReluOp(UnaryOp):
    """max(x, 0)."""

    name = "mil.relu"


@mil_op_definition
class SigmoidOp(UnaryOp):
    """1 / (1 + exp(-x))."""

    name = "mil.sigmoid"
    FLOPS_PER_ELEMENT: ClassVar = 4


@mil_op_definition
class TanhOp(UnaryOp):
    """tanh(x)."""

    name = "mil.tanh"
    FLOPS_PER_ELEMENT: ClassVar = 4


@mil_op_definition
class ExpOp(UnaryOp):
    """e^x."""

    name = "mil.exp"


@mil_op_definition
class SqrtOp(UnaryOp):
    """√x."""

    name = "mil.sqrt"


@mil_op_definition
class SinOp(UnaryOp):
    """sin(x), x in radians."""

    name = "mil.sin"
    ANE_RULES: ClassVar = (from_a15("sin"),)


@mil_op_definition
class CosOp(UnaryOp):
    """cos(x), x in radians."""

    name = "mil.cos"
    ANE_RULES: ClassVar = (from_a15("cos"),)


@mil_op_definition
class SiluOp(UnaryOp):
    """x · sigmoid(x)."""

    name = "mil.silu"
    FLOPS_PER_ELEMENT: ClassVar = 4


@mil_op_definition
class RoundOp(UnaryOp):
    """Round to the nearest integer, halves to even (0.5 -> 0)."""

    name = "mil.round"


@mil_op_definition
class FloorOp(UnaryOp):
    """The largest integer <= x."""

    name = "mil.floor"


@mil_op_definition
class CeilOp(UnaryOp):
    """The smallest integer >= x."""

    name = "mil.ceil"


@mil_op_definition
class ErfOp(UnaryOp):
    """The Gauss error function."""

    name = "mil.erf"
    FLOPS_PER_ELEMENT: ClassVar = 4


@mil_op_definition
class AbsOp(UnaryOp):
    """|x|; also on int32."""

    name = "mil.abs"
    DOMAIN: ClassVar = FLOAT_INT32


@mil_op_definition
class SquareOp(UnaryOp):
    """x · x; also on int32."""

    name = "mil.square"
    DOMAIN: ClassVar = FLOAT_INT32


def x_and_epsilon(default: float) -> tuple[MilInput, ...]:
    """The inputs of log, rsqrt and inverse: x, and an epsilon of x's dtype
    defaulting to `default`."""
    return (MilInput("x"), MilInput("epsilon", default, LIKE_X))


class UnaryWithEpsilonOp(UnaryOp, ABC):
    """`y = f(x + epsilon)`; an absent `epsilon` is MIL's default, which each
    op declares in its `MIL_INPUTS` (`input_default("epsilon")`)."""

    traits = traits_def(EpsilonCanonicalization(), EpsilonGuarded())
    epsilon = opt_prop_def(F32Attr)

    def __init__(self, x: Value, epsilon: float | None = None):
        self.init_mil({"x": x}, {"epsilon": f32_attr(epsilon)})


@mil_op_definition
class LogOp(UnaryWithEpsilonOp):
    """log(x + epsilon), epsilon defaults to 1e-45."""

    name = "mil.log"
    MIL_INPUTS: ClassVar = x_and_epsilon(1e-45)


@mil_op_definition
class RsqrtOp(UnaryWithEpsilonOp):
    """1 / sqrt(x + epsilon), epsilon defaults to 1e-12."""

    name = "mil.rsqrt"
    MIL_INPUTS: ClassVar = x_and_epsilon(1e-12)


@mil_op_definition
class InverseOp(UnaryWithEpsilonOp):
    """1 / (x + epsilon), epsilon defaults to 1e-4."""

    name = "mil.inverse"
    MIL_INPUTS: ClassVar = x_and_epsilon(1e-4)


GELU_MODES = ("EXACT", "TANH_APPROXIMATION", "SIGMOID_APPROXIMATION")


@mil_op_definition
class GeluOp(UnaryOp):
    """GELU: `mode` EXACT (default) x·Φ(x), TANH_APPROXIMATION
    0.5x(1 + tanh(√(2/π)(x + 0.044715x³))), SIGMOID_APPROXIMATION x·σ(1.702x)."""

    name = "mil.gelu"
    mode = opt_prop_def(StringAttr)
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("mode", "EXACT"))

    FLOPS_PER_ELEMENT: ClassVar = 8

    def __init__(self, x: Value, mode: str | None = None):
        self.init_mil({"x": x}, {"mode": str_attr(mode)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        choice(
            cls.name,
            "mode",
            str_prop(properties, "mode", cls.input_default("mode")),
            GELU_MODES,
        )
        return super().infer_result_types(operand_types, properties)


class AlphaBetaOp(UnaryOp, ABC):
    """`y = f(x; alpha, beta)` elementwise, alpha and beta required and
    written in x's dtype."""

    alpha = prop_def(F32Attr)
    beta = prop_def(F32Attr)
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("alpha", dtype=LIKE_X),
        MilInput("beta", dtype=LIKE_X),
    )

    def __init__(self, x: Value, alpha: float, beta: float):
        self.init_mil({"x": x}, {"alpha": f32_attr(alpha), "beta": f32_attr(beta)})


@mil_op_definition
class ClipOp(AlphaBetaOp):
    """min(max(x, alpha), beta); iOS17 requires alpha < beta."""

    name = "mil.clip"

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        alpha = float_prop(properties, "alpha")
        beta = float_prop(properties, "beta")
        assert alpha is not None and beta is not None
        if not alpha < beta:
            raise OpTypeError(
                cls.name,
                f"property 'alpha' ({alpha}) must be less than 'beta' ({beta})",
            )
        return super().infer_result_types(operand_types, properties)


# --- binary --------------------------------------------------------------------


def broadcast_operands(
    op_name: str, named: Sequence[tuple[str, TensorType]]
) -> tuple[int, ...]:
    return broadcast_shapes(op_name, [(n, t.get_shape()) for n, t in named])


class BinaryOp(MilOp, ABC):
    """`z = f(x, y)` elementwise with numpy broadcasting; x and y share one
    dtype among fp16, fp32 and int32."""

    x = operand_def(TensorType)
    y = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    traits = traits_def(Elementwise(), ElementwiseCanonicalization())
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("y"))

    def __init__(self, x: Value, y: Value):
        self.init_mil({"x": x, "y": y})

    @classmethod
    def result_element_type(cls, operand_element_type: Attribute) -> Attribute:
        return operand_element_type

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = cls.tensor_operands(operand_types, properties)
        x, y = ops["x"], ops["y"]
        assert x is not None and y is not None
        require_element_type(cls.name, "x", x, FLOAT_INT32)
        element = require_same_element_type(cls.name, [("x", x), ("y", y)])
        shape = broadcast_operands(cls.name, [("x", x), ("y", y)])
        return [tensor(shape, cls.result_element_type(element))]


@mil_op_definition
class AddOp(BinaryOp):
    """x + y."""

    name = "mil.add"


@mil_op_definition
class SubOp(BinaryOp):
    """x − y."""

    name = "mil.sub"


@mil_op_definition
class MulOp(BinaryOp):
    """x · y."""

    name = "mil.mul"


@mil_op_definition
class RealDivOp(BinaryOp):
    """x / y; on int32 the quotient is truncated toward zero."""

    name = "mil.real_div"


@mil_op_definition
class MaximumOp(BinaryOp):
    """max(x, y)."""

    name = "mil.maximum"


@mil_op_definition
class MinimumOp(BinaryOp):
    """min(x, y)."""

    name = "mil.minimum"


@mil_op_definition
class PowOp(BinaryOp):
    """x ** y."""

    name = "mil.pow"


class ComparisonOp(BinaryOp, ABC):
    """Elementwise comparison; the result is bool (i1) of the broadcast shape."""

    @classmethod
    def result_element_type(cls, operand_element_type: Attribute) -> Attribute:
        return i1


@mil_op_definition
class EqualOp(ComparisonOp):
    """x == y."""

    name = "mil.equal"


@mil_op_definition
class NotEqualOp(ComparisonOp):
    """x != y."""

    name = "mil.not_equal"


@mil_op_definition
class LessOp(ComparisonOp):
    """x < y."""

    name = "mil.less"


@mil_op_definition
class LessEqualOp(ComparisonOp):
    """x <= y."""

    name = "mil.less_equal"


@mil_op_definition
class GreaterOp(ComparisonOp):
    """x > y."""

    name = "mil.greater"


@mil_op_definition
class GreaterEqualOp(ComparisonOp):
    """x >= y."""

    name = "mil.greater_equal"


# --- select and cast -----------------------------------------------------------


@mil_op_definition
class SelectOp(MilOp):
    """`cond ? a : b` elementwise. MIL infers the result shape from a and b
    alone, so cond must broadcast to that shape."""

    name = "mil.select"
    cond = operand_def(TensorType)
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    traits = traits_def(Elementwise(), ElementwiseCanonicalization())
    MIL_INPUTS: ClassVar = (MilInput("cond"), MilInput("a"), MilInput("b"))

    def __init__(self, cond: Value, a: Value, b: Value):
        self.init_mil({"cond": cond, "a": a, "b": b})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = cls.tensor_operands(operand_types, properties)
        cond, a, b = ops["cond"], ops["a"], ops["b"]
        assert cond is not None and a is not None and b is not None
        require_element_type(cls.name, "cond", cond, (i1,))
        require_element_type(cls.name, "a", a, FLOAT_INT32_BOOL)
        element = require_same_element_type(cls.name, [("a", a), ("b", b)])
        shape = broadcast_operands(cls.name, [("a", a), ("b", b)])
        full = broadcast_operands(cls.name, [("cond", cond), ("a", a), ("b", b)])
        if full != shape:
            raise OpTypeError(
                cls.name,
                f"operand 'cond' {fmt_shape(cond.get_shape())} must broadcast to the "
                f"shape {fmt_shape(shape)} of 'a' and 'b' (MIL takes the result "
                "shape from a and b)",
            )
        return [tensor(shape, element)]


@mil_op_definition
class CastOp(MilOp):
    """Converts x to `dtype` ("fp16", "fp32", "int32", "int8", "bool");
    float to int truncates toward zero, nonzero to bool is true."""

    name = "mil.cast"
    x = operand_def(TensorType)
    dtype = prop_def(StringAttr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    traits = traits_def(Elementwise(), CopiesElements(), ElementwiseCanonicalization())
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("dtype"))

    def __init__(self, x: Value, dtype: str):
        self.init_mil({"x": x}, {"dtype": StringAttr(dtype)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, ANY_TYPE)
        dtype = choice(
            cls.name, "dtype", str_prop(properties, "dtype"), list(MIL_DTYPES)
        )
        return [tensor(x.get_shape(), MIL_DTYPES[dtype])]


OPS = (
    ReluOp,
    SigmoidOp,
    TanhOp,
    ExpOp,
    LogOp,
    SqrtOp,
    RsqrtOp,
    AbsOp,
    SinOp,
    CosOp,
    GeluOp,
    SiluOp,
    InverseOp,
    RoundOp,
    SquareOp,
    FloorOp,
    CeilOp,
    ErfOp,
    ClipOp,
    AddOp,
    SubOp,
    MulOp,
    RealDivOp,
    MaximumOp,
    MinimumOp,
    PowOp,
    EqualOp,
    NotEqualOp,
    LessOp,
    LessEqualOp,
    GreaterOp,
    GreaterEqualOp,
    SelectOp,
    CastOp,
)
"""The ops of this family, as the mil dialect lists them."""
