"""How the estimate counts an op's FLOPs: the conventions each op's
`flops()` (`MilOp.flops`, overridden by a family or an op) is built from.

A multiply-add counts 2: matmul and linear 2·|out|·K, conv
2·|out|·(Cin/groups)·kh·kw, conv_transpose 2·|x|·(Cout/groups)·kh·kw;
pooling |out|·|kernel|; a reduction (and cumsum, a running sum, and argmax)
one per input element; a sort ⌈log₂ n⌉ per input element (its comparisons
along an axis of n: topk, argsort); an elementwise op one per output
element, a few multi-step ones more (softmax 5, layer_norm and gelu 8,
silu, sigmoid, tanh and erf 4: each op's `FLOPS_PER_ELEMENT`); an op that
copies elements (reshape, transpose, slice, concat, cast, gather, state
reads and writes) none. Bytes are not the op's to state: every op moves its
inputs, outputs and weights (`estimator/cost.py`).
"""

from __future__ import annotations

import math

from xdsl.ir import Attribute, Operation

from xdsl_ane.ane.rules import numbers, shape_of


def elements(t: Attribute) -> int:
    """The number of elements of a static tensor type (0 for any other)."""
    shape = shape_of(t)
    return math.prod(shape) if shape is not None and all(d >= 0 for d in shape) else 0


def output_elements(op: Operation) -> int:
    return sum(elements(r.type) for r in op.results)


def input_elements(op: Operation) -> int:
    """The elements of the first operand (a reduction's input)."""
    return elements(op.operands[0].type) if op.operands else 0


def pooling_flops(op: Operation) -> int:
    """One per output element and kernel position."""
    kernel = math.prod(int(k) for k in numbers(op, "kernel_sizes"))
    return output_elements(op) * max(1, kernel)


def sort_flops(op: Operation) -> int:
    """⌈log₂ n⌉ comparisons per input element, n the size of the sorted
    axis (property `axis`, default −1)."""
    shape = shape_of(op.operands[0].type) if op.operands else None
    if not shape:
        return 0
    axis = int((numbers(op, "axis") or [-1])[0])
    n = shape[axis] if -len(shape) <= axis < len(shape) else 1
    return input_elements(op) * max(1, math.ceil(math.log2(n)))
