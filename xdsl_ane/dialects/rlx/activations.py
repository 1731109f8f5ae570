"""rlx activations of vision models: hardswish, hardsigmoid, leaky_relu,
elu and clamp (ReLU6 is clamp to [0, 6]). Each is elementwise on a float
tensor and keeps its type (`UnaryOp`); the parameters are f32 properties."""

from __future__ import annotations

from abc import ABC
from typing import ClassVar

from xdsl.irdl import opt_prop_def

from xdsl_ane.dialects.rlx.base import Value, rlx_op_definition
from xdsl_ane.dialects.rlx.elementwise import UnaryOp
from xdsl_ane.dialects.typing import (
    F32Attr,
    OpTypeError,
    f32_attr,
    float_prop,
)


@rlx_op_definition
class HardswishOp(UnaryOp):
    """Hard swish: x · min(max(x + 3, 0), 6) / 6."""

    name = "rlx.hardswish"


@rlx_op_definition
class HardsigmoidOp(UnaryOp):
    """Hard sigmoid: min(max(x + 3, 0), 6) / 6 = clamp(x/6 + ½, 0, 1)."""

    name = "rlx.hardsigmoid"


class AlphaActivationOp(UnaryOp, ABC):
    """An activation with one slope `alpha`, absent meaning `ALPHA`."""

    ALPHA: ClassVar[float] = 1.0
    alpha = opt_prop_def(F32Attr)

    def __init__(self, input: Value, alpha: float | None = None):
        self.init_inferred([input], {"alpha": f32_attr(alpha)})

    @classmethod
    def alpha_of(cls, op) -> float:
        value = float_prop(op.properties, "alpha", cls.ALPHA)
        assert value is not None
        return value


@rlx_op_definition
class LeakyReluOp(AlphaActivationOp):
    """Leaky ReLU: x for x ≥ 0, alpha · x below (alpha defaults to 0.01)."""

    name = "rlx.leaky_relu"
    ALPHA: ClassVar[float] = 0.01


@rlx_op_definition
class EluOp(AlphaActivationOp):
    """ELU: x for x > 0, alpha · (eˣ − 1) otherwise (alpha defaults to 1.0)."""

    name = "rlx.elu"
    ALPHA: ClassVar[float] = 1.0


@rlx_op_definition
class ClampOp(UnaryOp):
    """min(max(x, min), max); either bound may be absent (no bound on that
    side), and min ≤ max when both are given (torch's hardtanh and ReLU6:
    min 0, max 6)."""

    name = "rlx.clamp"
    min = opt_prop_def(F32Attr)
    max = opt_prop_def(F32Attr)

    def __init__(
        self, input: Value, min: float | None = None, max: float | None = None
    ):
        self.init_inferred([input], {"min": f32_attr(min), "max": f32_attr(max)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        low = float_prop(properties, "min")
        high = float_prop(properties, "max")
        if low is not None and high is not None and not low <= high:
            raise OpTypeError(
                cls.name,
                f"property 'min' ({low}) must not be greater than 'max' ({high})",
            )
        return super().infer_result_types(operand_types, properties)


OPS = (
    HardswishOp,
    HardsigmoidOp,
    LeakyReluOp,
    EluOp,
    ClampOp,
)
"""The ops of this family, as the rlx dialect lists them."""
