"""The rules that keep an op off the ANE (ANE_FACTS.md "What keeps a program
off the ANE" and "What keeps an op off the ANE"), one function or table entry
per rule, read by `ane-lint` (its diagnostics) and by the placement of
`xdsl-ane estimate` (`passes/placement.py`: which unit runs each op on a
given chip). Facts about the hardware, not passes: they read an op's
name, properties and types, and nothing of the dialects.

Each op of the mil dialect states its own rules (`MilOp.ANE_RULES`: the
rules named here, such as `POOL` or `DILATED_CONV`, or one of its own, as
`mil.topk`'s); `OP_RULES` holds, keyed by name, those of the MIL ops the
dialect does not define (`mil.scatter`, `mil.while_loop`, parsed
unregistered: their attributes are read), and extends any op's
(`passes/placement.py`'s `rules_of` gives both). The type rules (`rank_problem`, `dimensions_over`) and the
placement's other rules (`passes/placement.py`'s `placement_rule`) are
functions. `ane-lint` is chip-neutral: it warns above the smallest chip's
dimension limit and fails above the largest, and leaves out the rules of
one chip (`OpRule.on_chip`); `placement_rule` applies one chip's limits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    TensorType,
    UnregisteredOp,
)
from xdsl.ir import Attribute, Operation

from xdsl_ane.ane.chips import Chip
from xdsl_ane.ane.limits import (
    MAX_ARGMAX,
    MAX_KERNEL_WIDTH,
    MAX_POOL_KERNEL,
    MAX_POOL_STRIDE,
    MAX_RANK,
    MAX_UPSAMPLE,
)


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"

    def __str__(self) -> str:
        return self.value


def op_name(op: Operation) -> str:
    """The op's name as written, also for ops of unregistered dialects."""
    return op.op_name.data if isinstance(op, UnregisteredOp) else op.name


def numbers(op: Operation, key: str) -> list[float]:
    """An integer or float list property/attribute of any op, registered or
    not, as numbers ([] when absent)."""
    attr = op.properties.get(key)
    if attr is None:
        attr = op.attributes.get(key)
    if isinstance(attr, DenseArrayBase):
        return [v for v in attr.get_values()]
    if isinstance(attr, ArrayAttr):
        return [
            a.value.data for a in attr.data if isinstance(a, IntegerAttr | FloatAttr)
        ]
    if isinstance(attr, IntegerAttr | FloatAttr):
        return [attr.value.data]
    return []


Condition = Callable[[Operation], "str | None"]


def _above(key: str, limit: float) -> Condition:
    def detail(op: Operation) -> str | None:
        values = numbers(op, key)
        if not any(v > limit for v in values):
            return None
        shown = values[0] if len(values) == 1 else values
        return f"{key} {shown} > {limit}"

    return detail


def _any_of(*checks: Condition) -> Condition:
    def detail(op: Operation) -> str | None:
        found = [d for d in (check(op) for check in checks) if d]
        return ", ".join(found) or None

    return detail


def shape_of(t: Attribute) -> tuple[int, ...] | None:
    return tuple(t.get_shape()) if isinstance(t, TensorType) else None


def kernel_width(op: Operation) -> str | None:
    if len(op.operands) < 2:
        return None
    shape = shape_of(op.operands[1].type)
    if shape is None or len(shape) < 3 or shape[-1] <= MAX_KERNEL_WIDTH:
        return None
    return f"kernel width {shape[-1]} > {MAX_KERNEL_WIDTH}"


def argmax_extent(op: Operation) -> str | None:
    shape = shape_of(op.operands[0].type) if op.operands else None
    if not shape:
        return None
    axes = numbers(op, "axis") or [-1]
    axis = int(axes[0])
    if not -len(shape) <= axis < len(shape) or shape[axis] <= MAX_ARGMAX:
        return None
    return f"{shape[axis]} elements on axis {axis % len(shape)} > {MAX_ARGMAX}"


Unit = Literal["ane", "gpu", "cpu"]
"""Where Core ML runs an op: the Neural Engine, or the GPU or CPU it falls
back to."""


@dataclass(frozen=True)
class OpRule:
    """What is wrong with ops of one kind. With `condition`, the rule applies
    only when it returns a detail (e.g. "dilations [2, 2] > 1"); with
    `on_chip`, only on the chips where that holds (the placement's, with a
    chip). `unit` is where Core ML runs such an op instead of the ANE;
    `lint=False` rules are the placement's only (ane-lint does not report
    them). `key` names the rule in the estimate (default: the op's name)."""

    severity: Severity
    reason: str
    suggestion: str = ""
    condition: Condition | None = None
    unit: Unit = "cpu"
    lint: bool = True
    on_chip: Callable[[Chip], bool] | None = None
    key: str = ""

    def detail(self, op: Operation) -> str | None:
        """The reason with its detail when the rule applies to `op`, else None."""
        if self.condition is None:
            return self.reason
        found = self.condition(op)
        return f"{self.reason} ({found})" if found else None


FALLBACK = "usually runs on the CPU/GPU, not the ANE"
GATHER = OpRule(
    Severity.WARNING,
    f"gather {FALLBACK}",
    "look embeddings up on the CPU and pass them in, or multiply a one_hot by "
    "the table",
)
SCATTER = OpRule(
    Severity.WARNING,
    f"scatter {FALLBACK}",
    "select with a one_hot mask, or scatter on the CPU",
)
FILL = OpRule(
    Severity.WARNING, f"fill {FALLBACK}", "use a mil.const (shapes are static)"
)
CONTROL_FLOW = OpRule(
    Severity.WARNING,
    f"control flow {FALLBACK}",
    "unroll it, or run the loop or branch outside the model",
)
RNN = OpRule(
    Severity.WARNING,
    f"recurrent layer {FALLBACK}",
    "unroll it into matmul and elementwise ops",
)
POOL = OpRule(
    Severity.WARNING,
    f"pooling with a kernel > {MAX_POOL_KERNEL} or a stride > {MAX_POOL_STRIDE} "
    f"{FALLBACK}",
    "pool in several smaller steps",
    _any_of(
        _above("kernel_sizes", MAX_POOL_KERNEL), _above("strides", MAX_POOL_STRIDE)
    ),
    unit="gpu",
)
UPSAMPLE = OpRule(
    Severity.WARNING,
    f"upsampling by more than {MAX_UPSAMPLE}× {FALLBACK}",
    f"upsample in steps of at most {MAX_UPSAMPLE}×",
    _any_of(
        _above("scale_factor_height", MAX_UPSAMPLE),
        _above("scale_factor_width", MAX_UPSAMPLE),
    ),
    unit="gpu",
)
DILATED_CONV = OpRule(
    Severity.WARNING,
    f"dilated convolution {FALLBACK}",
    "use an undilated kernel with zeros between the taps",
    _above("dilations", 1),
    unit="gpu",
)
DATA_DEPENDENT_SHAPE = OpRule(
    Severity.ERROR,
    "the result shape depends on the input data; the ANE needs static shapes",
    "compute it on the CPU, or use a fixed-size form with a mask",
)

CONV_KERNEL = OpRule(
    Severity.WARNING,
    f"convolution kernel wider than {MAX_KERNEL_WIDTH} {FALLBACK}",
    "split the kernel into several narrower convolutions",
    kernel_width,
    unit="gpu",
    lint=False,
)
ARGMAX = OpRule(
    Severity.WARNING,
    f"argmax over more than {MAX_ARGMAX} elements {FALLBACK}",
    f"argmax over chunks of ≤ {MAX_ARGMAX}, then over the chunks' maxima",
    argmax_extent,
    lint=False,
)


def not_an_ane_op(op: str, suggestion: str) -> OpRule:
    """The rule of an op that is not among the ANE's ops in any source of
    ANE_FACTS.md (nor listed as falling back there, hence the placement's
    only): cumsum, topk, argsort, reduce_prod."""
    return OpRule(Severity.WARNING, f"{op} {FALLBACK}", suggestion, lint=False)


def from_a15(op: str) -> OpRule:
    """sin and cos run on the ANE from A15 (`Chip.sin_cos`)."""
    return OpRule(
        Severity.WARNING,
        f"{op} runs on the ANE from A15",
        unit="gpu",
        lint=False,
        on_chip=lambda chip: not chip.sin_cos,
        key="sin-cos",
    )


OP_RULES: dict[str, OpRule] = {
    "mil.gather_along_axis": GATHER,
    "mil.gather_nd": GATHER,
    "mil.scatter": SCATTER,
    "mil.scatter_along_axis": SCATTER,
    "mil.scatter_nd": SCATTER,
    "mil.fill": FILL,
    "mil.fill_like": FILL,
    "mil.cond": CONTROL_FLOW,
    "mil.while_loop": CONTROL_FLOW,
    "mil.rnn": RNN,
    "mil.lstm": RNN,
    "mil.gru": RNN,
    "mil.l2_pool": POOL,
    "mil.non_zero": DATA_DEPENDENT_SHAPE,
    "mil.non_maximum_suppression": DATA_DEPENDENT_SHAPE,
}
"""Rules by op name: those of the MIL ops the mil dialect does not define
(parsed unregistered), and more rules for any op (ane-lint and the
placement)."""


def rule_details(
    op: Operation,
    rules: Sequence[OpRule],
    lint: bool = False,
    chip: Chip | None = None,
) -> list[tuple[OpRule, str]]:
    """Each of `rules` that applies to `op`, with its reason; with `lint`,
    only the rules ane-lint reports; the rules of some chips only (`on_chip`)
    only with a `chip` they hold on."""
    found = []
    for rule in rules:
        if lint and not rule.lint:
            continue
        if rule.on_chip is not None and (chip is None or not rule.on_chip(chip)):
            continue
        detail = rule.detail(op)
        if detail is not None:
            found.append((rule, detail))
    return found


# --- type rules ---------------------------------------------------------------


def rank_problem(shape: Sequence[int], preferred: int) -> tuple[Severity, int] | None:
    """(severity, limit) when the rank is above `preferred` (a warning) or
    above Core ML's MAX_RANK (an error)."""
    if len(shape) > MAX_RANK:
        return Severity.ERROR, MAX_RANK
    if len(shape) > preferred:
        return Severity.WARNING, preferred
    return None


def dimensions_over(
    shape: Sequence[int], limit: Callable[[int, int], int]
) -> list[tuple[int, int, int]]:
    """(axis, size, limit) of each axis above `limit(axis, rank)`."""
    return [
        (axis, d, limit(axis, len(shape)))
        for axis, d in enumerate(shape)
        if d > limit(axis, len(shape))
    ]


def chip_limit(chip: Chip) -> Callable[[int, int], int]:
    """The chip's limit per axis: channels (third from the end of a rank ≥ 3
    tensor) and every other axis."""

    def limit(axis: int, rank: int) -> int:
        return chip.max_channels if rank >= 3 and axis == rank - 3 else chip.max_spatial

    return limit


def split_chunks(size: int, limit: int) -> int:
    return math.ceil(size / limit)
