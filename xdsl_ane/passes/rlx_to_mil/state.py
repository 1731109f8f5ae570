"""Lowering of rlx states and slice_update to MIL (iOS18).

A function's `!rlx.state<T>` arguments become `!mil.state<T>`; the state
ops map one to one, rlx's write (no result) to MIL's
`coreml_update_state` (its result left unused, which the protobuf prints
as a bare `write_state`)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, i32
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.mil.builders import Emitter
from xdsl_ane.dialects.typing import shape_of


def mil_state_type(t):
    """!rlx.state<T> -> !mil.state<T>; other types unchanged."""
    return mil.StateType(t.wrapped) if isinstance(t, rlx.StateType) else t


class ConvertStateArguments(RewritePattern):
    """!rlx.state arguments of a func.func become !mil.state (before its
    body is lowered: the walker visits the function first)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        inputs = list(op.function_type.inputs.data)
        if not any(isinstance(t, rlx.StateType) for t in inputs):
            return
        for arg in op.body.blocks[0].args:
            if isinstance(arg.type, rlx.StateType):
                rewriter.replace_value_with_new_type(arg, mil_state_type(arg.type))
        op.function_type = FunctionType.from_lists(
            [mil_state_type(t) for t in inputs], op.function_type.outputs.data
        )
        rewriter.notify_op_modified(op)


class LowerReadState(RewritePattern):
    """read_state(s) -> MIL read_state(input = s)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.ReadStateOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, mil.ReadStateOp(op.state))


class LowerWriteState(RewritePattern):
    """write_state(s, v) -> MIL coreml_update_state(state = s, value = v)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.WriteStateOp, rewriter: PatternRewriter
    ) -> None:
        rewriter.replace(op, mil.CoremlUpdateStateOp(op.state, op.value), [])


class LowerSliceUpdate(RewritePattern):
    """slice_update(x, u, begin) = MIL slice_update(x, u, begin,
    end = begin + shape(u))."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: rlx.SliceUpdateOp, rewriter: PatternRewriter
    ) -> None:
        e = Emitter(rewriter)
        size = e.const(np.array(shape_of(op.update), np.int32), i32)
        end = e(mil.AddOp(op.begin, size))
        rewriter.replace(op, mil.SliceUpdateOp(op.input, op.update, op.begin, end))


PATTERNS = (
    ConvertStateArguments(),
    LowerReadState(),
    LowerWriteState(),
    LowerSliceUpdate(),
)
