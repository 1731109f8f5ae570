"""MIL's parametric activations used by vision models: leaky_relu, elu and
sigmoid_hard (iOS15 activation; iOS17 lets alpha and beta have another
float dtype than x, and we write them in x's). Each takes fp16 or fp32 x
and keeps its type; alpha and beta are required."""

from __future__ import annotations

from abc import ABC
from typing import ClassVar

from xdsl.irdl import prop_def

from xdsl_ane.dialects.mil.base import Value, mil_op_definition
from xdsl_ane.dialects.mil.elementwise import AlphaBetaOp, UnaryOp
from xdsl_ane.dialects.mil.inputs import LIKE_X, MilInput
from xdsl_ane.dialects.typing import F32Attr, f32_attr


class AlphaActivationOp(UnaryOp, ABC):
    """`y = f(x; alpha)` elementwise."""

    alpha = prop_def(F32Attr)
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("alpha", dtype=LIKE_X))

    def __init__(self, x: Value, alpha: float):
        self.init_mil({"x": x}, {"alpha": f32_attr(alpha)})


@mil_op_definition
class LeakyReluOp(AlphaActivationOp):
    """x for x ≥ 0, alpha · x below."""

    name = "mil.leaky_relu"


@mil_op_definition
class EluOp(AlphaActivationOp):
    """x for x > 0, alpha · (eˣ − 1) otherwise."""

    name = "mil.elu"


@mil_op_definition
class SigmoidHardOp(AlphaBetaOp):
    """min(max(alpha · x + beta, 0), 1) (hard sigmoid: alpha 1/6, beta ½)."""

    name = "mil.sigmoid_hard"


OPS = (
    LeakyReluOp,
    EluOp,
    SigmoidHardOp,
)
"""The ops of this family, as the mil dialect lists them."""
