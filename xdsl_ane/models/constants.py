"""rlx constants from numpy arrays, for the decoder's builders (`llm.py`
and the mixture of experts of `moe.py`)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx


def const(value: np.ndarray) -> SSAValue:
    """`value` as an rlx constant: f32 (any float), i1 (bool) or i32."""
    return rlx.ConstantOp.of(value).result
