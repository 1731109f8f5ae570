"""MIL's normalizations over the channels of `[n, C, *D]`: `batch_norm`
(given statistics) and `instance_norm` (each sample's channel over its
spatial axes).

Type rules from coremltools 9.0 iOS15/iOS17 normalization.py: x is fp16 or
fp32 and the result has x's type; the parameters are const, and since iOS17
may be fp16 or fp32 whatever x is (their domain U, one dtype for all).
coremltools' inference does not check the parameters' shapes; MIL's
documentation says `[C]`, which the verifier requires.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)

from xdsl_ane.dialects.mil.base import (
    FLOAT,
    TaggedOptionalOperandsOp,
    Value,
    mil_op_definition,
    require_element_type,
)
from xdsl_ane.dialects.mil.inputs import MilInput, dtype_of_first_given
from xdsl_ane.dialects.mil.traits import EpsilonGuarded, ImageOp
from xdsl_ane.dialects.typing import (
    F32Attr,
    OpTypeError,
    f32_attr,
    fmt_shape,
    require_same_element_type,
)


def check_channel_params(
    op_name: str, ops: dict[str, TensorType | None], ranks: tuple[int, int]
) -> TensorType:
    """x of rank in `ranks` and fp16/fp32; every other present operand `[C]`,
    all of one float dtype."""
    x = ops["x"]
    assert x is not None
    require_element_type(op_name, "x", x, FLOAT)
    shape = x.get_shape()
    if not ranks[0] <= len(shape) <= ranks[1]:
        raise OpTypeError(
            op_name,
            f"operand 'x' must be [n, C, *D] of rank {ranks[0]} to {ranks[1]}, got "
            f"{fmt_shape(shape)}",
        )
    params = [(n, t) for n, t in ops.items() if n != "x" and t is not None]
    for name, t in params:
        require_element_type(op_name, name, t, FLOAT)
        if t.get_shape() != (shape[1],):
            raise OpTypeError(
                op_name,
                f"operand '{name}' {fmt_shape(t.get_shape())} must be [{shape[1]}] "
                f"(C of operand 'x' {fmt_shape(shape)})",
            )
    if len(params) > 1:
        require_same_element_type(op_name, params)
    return x


@mil_op_definition
class BatchNormOp(TaggedOptionalOperandsOp):
    """(x − mean) / sqrt(variance + epsilon) · gamma + beta per channel
    (axis 1) of x `[n, C, *D]` (rank 3 to 5); const mean, variance, gamma
    and beta `[C]`, gamma and beta defaulting to 1 and 0; epsilon defaults
    to 1e-5."""

    name = "mil.batch_norm"
    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))
    x = operand_def(TensorType)
    mean = operand_def(TensorType)
    variance = operand_def(TensorType)
    gamma = opt_operand_def(TensorType)
    beta = opt_operand_def(TensorType)
    epsilon = opt_prop_def(F32Attr)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("mean"),
        MilInput("variance"),
        MilInput("gamma"),
        MilInput("beta"),
        # epsilon is of the parameters' domain U (iOS17), the dtype of mean
        MilInput("epsilon", 1e-5, dtype_of_first_given("mean")),
    )
    CONST_OPERANDS: ClassVar = ("mean", "variance", "gamma", "beta")

    traits = traits_def(ImageOp(), EpsilonGuarded())

    def __init__(
        self,
        x: Value,
        mean: Value,
        variance: Value,
        gamma: Value | None = None,
        beta: Value | None = None,
        epsilon: float | None = None,
    ):
        self.init_mil(
            {"x": x, "mean": mean, "variance": variance, "gamma": gamma, "beta": beta},
            {"epsilon": f32_attr(epsilon)},
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = cls.tensor_operands(operand_types, properties)
        return [check_channel_params(cls.name, ops, (3, 5))]


@mil_op_definition
class InstanceNormOp(TaggedOptionalOperandsOp):
    """(x − mean) / sqrt(var + epsilon) · gamma + beta, mean and biased var
    over the spatial axes of each sample's channel; x `[n, C, *D]` (rank 3
    or 4), const gamma and beta `[C]` defaulting to 1 and 0; epsilon
    defaults to 1e-5."""

    name = "mil.instance_norm"
    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))
    x = operand_def(TensorType)
    gamma = opt_operand_def(TensorType)
    beta = opt_operand_def(TensorType)
    epsilon = opt_prop_def(F32Attr)
    result = result_def(TensorType)
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("gamma"),
        MilInput("beta"),
        MilInput("epsilon", 1e-5, dtype_of_first_given("gamma", "beta")),
    )
    CONST_OPERANDS: ClassVar = ("gamma", "beta")

    traits = traits_def(ImageOp(), EpsilonGuarded())

    def __init__(
        self,
        x: Value,
        gamma: Value | None = None,
        beta: Value | None = None,
        epsilon: float | None = None,
    ):
        self.init_mil(
            {"x": x, "gamma": gamma, "beta": beta}, {"epsilon": f32_attr(epsilon)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = cls.tensor_operands(operand_types, properties)
        return [check_channel_params(cls.name, ops, (3, 4))]


OPS = (
    BatchNormOp,
    InstanceNormOp,
)
"""The ops of this family, as the mil dialect lists them."""
