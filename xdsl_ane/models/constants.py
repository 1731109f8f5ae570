"""rlx constants from numpy arrays, and the products by them the
decoder's builders (`llm.py`, the mixture of experts of `moe.py`) use."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of


def const(value: np.ndarray) -> SSAValue:
    """`value` as an rlx constant: f32 (any float), i1 (bool) or i32."""
    return rlx.ConstantOp.of(value).result


def scaled(x: SSAValue, factor: float) -> SSAValue:
    """x · factor (a float32 constant), in x's rank."""
    return rlx.MulOp(
        x, const(np.full((1,) * len(shape_of(x)), factor, np.float32))
    ).result


def softcapped(x: SSAValue, cap: float) -> SSAValue:
    """cap · tanh(x / cap), in x's rank."""
    c = const(np.full((1,) * len(shape_of(x)), cap, np.float32))
    return rlx.MulOp(rlx.TanhOp(rlx.DivOp(x, c).result).result, c).result
