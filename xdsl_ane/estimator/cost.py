"""What one op costs: its FLOPs and the bytes it moves.

FLOPs count a multiply-add as 2: matmul and linear 2·|out|·K, conv
2·|out|·(Cin/groups)·kh·kw (the weight's `[Cout, Cin/groups, kh, kw]` less
its first axis), conv_transpose 2·|x|·(Cout/groups)·kh·kw, pooling
|out|·|kernel|, reductions (and cumsum, a running sum) one per input element,
topk ⌈log₂ n⌉ per input element (a sort's comparisons along its axis of n),
elementwise ops one per output element except the few multi-step ones in
`ELEMENT_FLOPS`; data movement (reshape, transpose, slice, concat,
pixel_shuffle and pixel_unshuffle, state reads and writes) none.
Bytes are inputs + outputs + weights at their declared element sizes: an
operand made by a const or a constexpr op is a weight, counted at its
storage (a constexpr op's own const operands, so 4-bit weights move 4 bits),
a state operand at its tensor's size.
"""

from __future__ import annotations

import math

from xdsl.ir import Attribute, Operation, SSAValue

from xdsl_ane.ane.rules import numbers, op_name, shape_of
from xdsl_ane.dialects.state_type import StateTypeBase
from xdsl_ane.passes.ane_lint import tensor_bytes
from xdsl_ane.passes.placement import is_const

ELEMENT_FLOPS = {
    # a few elementwise or row ops are several steps per element
    "mil.softmax": 5,  # max, sub, exp, sum, div
    "mil.layer_norm": 8,
    "mil.gelu": 8,
    "mil.silu": 4,
    "mil.sigmoid": 4,
    "mil.tanh": 4,
    "mil.erf": 4,
    "mil.reduce_log_sum_exp": 4,
}

NO_FLOPS = frozenset(
    "reshape transpose squeeze expand_dims slice_by_size slice_update concat split "
    "tile read_state coreml_update_state cast identity gather gather_along_axis "
    "gather_nd scatter scatter_nd scatter_along_axis fill fill_like "
    "pixel_shuffle pixel_unshuffle depth_to_space space_to_depth".split()
)

REDUCTIONS = frozenset(
    "reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_argmax "
    "reduce_argmin reduce_l2_norm reduce_log_sum_exp cumsum".split()
)


def _elements(t: Attribute) -> int:
    if isinstance(t, StateTypeBase):
        t = t.wrapped
    shape = shape_of(t)
    return math.prod(shape) if shape is not None and all(d >= 0 for d in shape) else 0


def value_bytes(t: Attribute) -> int:
    return tensor_bytes(t.wrapped if isinstance(t, StateTypeBase) else t)


def flops(op: Operation) -> int:
    name = op_name(op).removeprefix("mil.")
    out = sum(_elements(r.type) for r in op.results)
    shapes = [shape_of(o.type) for o in op.operands]
    if name == "matmul" and len(shapes) >= 2 and shapes[0]:
        transpose_x = bool(numbers(op, "transpose_x") and numbers(op, "transpose_x")[0])
        x = shapes[0]
        k = x[-2] if transpose_x and len(x) >= 2 else x[-1]
        return 2 * out * k
    if name == "linear" and shapes and shapes[0]:
        return 2 * out * shapes[0][-1]
    if name == "conv" and len(shapes) >= 2 and shapes[1]:
        return 2 * out * math.prod(shapes[1][1:])
    if name == "conv_transpose" and len(shapes) >= 2 and shapes[1]:
        return 2 * _elements(op.operands[0].type) * math.prod(shapes[1][1:])
    if name in ("max_pool", "avg_pool", "l2_pool"):
        return out * max(1, math.prod(int(k) for k in numbers(op, "kernel_sizes")))
    if name in REDUCTIONS:
        return _elements(op.operands[0].type) if op.operands else 0
    if name == "topk" and shapes and shapes[0]:
        axis = int((numbers(op, "axis") or [-1])[0])
        n = shapes[0][axis] if -len(shapes[0]) <= axis < len(shapes[0]) else 1
        return _elements(op.operands[0].type) * max(1, math.ceil(math.log2(n)))
    if name in NO_FLOPS:
        return 0
    return out * ELEMENT_FLOPS.get(op_name(op), 1)


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


def traffic(op: Operation) -> tuple[int, int]:
    """(bytes moved: inputs + outputs + weights, of which weights)."""
    weights = sum(weight_bytes(o) for o in op.operands if is_weight(o))
    inputs = sum(value_bytes(o.type) for o in op.operands if not is_weight(o))
    outputs = sum(value_bytes(r.type) for r in op.results)
    return inputs + outputs + weights, weights
