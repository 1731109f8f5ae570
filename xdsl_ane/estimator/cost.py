"""What one op costs: its FLOPs and the bytes it moves.

FLOPs are the op's own to state (`MilOp.flops`, by the conventions of
`xdsl_ane/ane/cost.py`); a MIL op the mil dialect does not define (parsed
unregistered) is counted by its name in `OTHER_OPS`, any other op one per
result element. Bytes are inputs + outputs + weights at their declared
element sizes: an operand made by a const or a constexpr op is a weight,
counted at its storage (a constexpr op's own const operands, so 4-bit
weights move 4 bits), a state operand at its tensor's size; a reshape
that keeps the innermost axis is a view and moves nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Attribute, Operation, SSAValue

from xdsl_ane.ane.cost import input_elements, output_elements, pooling_flops
from xdsl_ane.ane.rules import op_name, shape_of
from xdsl_ane.dialects.mil.base import MilOp
from xdsl_ane.dialects.state_type import StateTypeBase
from xdsl_ane.passes.ane_lint import tensor_bytes
from xdsl_ane.passes.placement import is_const


def _moves(op: Operation) -> int:
    return 0


OTHER_OPS: dict[str, Callable[[Operation], int]] = {
    **{
        f"mil.{name}": _moves
        for name in "identity gather_along_axis gather_nd scatter scatter_nd "
        "scatter_along_axis fill fill_like depth_to_space space_to_depth".split()
    },
    "mil.reduce_argmin": input_elements,
    "mil.reduce_l2_norm": input_elements,
    "mil.l2_pool": pooling_flops,
}
"""The FLOPs of the MIL ops the mil dialect does not define: data movement
none, reductions one per input element, pooling one per output element and
kernel position."""


def value_bytes(t: Attribute) -> int:
    return tensor_bytes(t.wrapped if isinstance(t, StateTypeBase) else t)


def flops(op: Operation) -> int:
    """The op's FLOPs (a multiply-add counts 2), as it states them."""
    if isinstance(op, MilOp):
        return op.flops()
    other = OTHER_OPS.get(op_name(op))
    return other(op) if other is not None else output_elements(op)


def weight_bytes(value: SSAValue) -> int:
    """The storage of a weight operand: a const's tensor, or a constexpr
    op's own const operands."""
    owner = value.owner
    if isinstance(owner, Operation) and op_name(owner).startswith("mil.constexpr_"):
        return sum(weight_bytes(o) for o in owner.operands)
    return value_bytes(value.type)


def is_weight(value: SSAValue) -> bool:
    owner = value.owner
    return isinstance(owner, Operation) and is_const(op_name(owner))


def is_view(op: Operation) -> bool:
    """A reshape that keeps the innermost axis: the ANE pads that axis's
    rows to 64 bytes and lays the outer axes out densely over them, so
    regrouping the outer axes moves nothing (`[1, C, 1, S]` to `[C, S]`)."""
    if op_name(op) != "mil.reshape":
        return False
    source, result = (shape_of(v.type) for v in (op.operands[0], op.results[0]))
    return bool(source and result and source[-1] == result[-1])


def traffic(op: Operation) -> tuple[int, int]:
    """(bytes moved: inputs + outputs + weights, of which weights); none
    for a reshape that is a view."""
    if is_view(op):
        return 0, 0
    weights = sum(weight_bytes(o) for o in op.operands if is_weight(o))
    inputs = sum(value_bytes(o.type) for o in op.operands if not is_weight(o))
    outputs = sum(value_bytes(r.type) for r in op.results)
    return inputs + outputs + weights, weights
