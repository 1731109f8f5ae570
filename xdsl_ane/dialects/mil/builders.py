"""Building mil ops in rewrites: `Emitter` inserts mil ops before the op
being rewritten, and mil consts are built here (the one place consts are
made), for the rlx -> mil lowering and the passes on mil."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.typing import element_type_of


def const_op(
    value: np.ndarray | float | int | bool, element_type: Attribute
) -> mil.ConstOp:
    """A `mil.const` holding `value` (a scalar gives a rank-0 tensor)."""
    return mil.ConstOp(dense_from_numpy(value, element_type))


class Emitter:
    """Inserts mil ops before the op being rewritten; `e(op)` returns the
    op's (single) result so that lowerings read like the formula."""

    def __init__(self, rewriter: PatternRewriter):
        self.rewriter = rewriter

    def __call__(self, op: Operation) -> SSAValue:
        self.rewriter.insert(op)
        return op.results[0]

    def many(self, op: Operation) -> Sequence[SSAValue]:
        self.rewriter.insert(op)
        return op.results

    def const(
        self, value: np.ndarray | float | int | bool, element_type: Attribute
    ) -> SSAValue:
        return self(const_op(value, element_type))

    def scalar_like(self, value: float, like: SSAValue) -> SSAValue:
        """A rank-0 const of `like`'s element type."""
        return self.const(value, element_type_of(like))
