"""rlx constants from numpy arrays, for the decoder's builders (`llm.py`
and the mixture of experts of `moe.py`)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import f32, i1, i32
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.dense import dense_from_numpy


def const(value: np.ndarray) -> SSAValue:
    """`value` as an rlx constant: f32 (any float), i1 (bool) or i32."""
    dtype = f32 if value.dtype.kind == "f" else i1 if value.dtype == np.bool_ else i32
    return rlx.ConstantOp(dense_from_numpy(value, dtype)).result
