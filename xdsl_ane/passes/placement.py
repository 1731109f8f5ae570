"""Where each op of a mil program runs on a chip: on its ANE, or on the
CPU or GPU by the first rule that moves it off: the op's own rules
(`MilOp.ANE_RULES`), those of its name (`ane/rules.py`'s `OP_RULES`, for
MIL ops the dialect does not define), then the rules of its types and of
the chip (`ane/chips.py`). Read by `ane-lint` and by the estimate of
`xdsl-ane estimate`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType, UnrankedTensorType, bf16, f32, i32
from xdsl.ir import Attribute, Operation

from xdsl_ane.ane.chips import Chip
from xdsl_ane.ane.limits import MAX_RANK, STATE_ALIGNMENT
from xdsl_ane.ane.rules import (
    OP_RULES,
    OpRule,
    Unit,
    chip_limit,
    dimensions_over,
    op_name,
    rule_details,
    shape_of,
)
from xdsl_ane.dialects.mil import MIL_OPS
from xdsl_ane.dialects.mil.base import MilOp
from xdsl_ane.dialects.state_type import StateTypeBase

MIL_OP_CLASSES: dict[str, type[MilOp]] = {cls.name: cls for cls in MIL_OPS}


def mil_class(op: Operation) -> type[MilOp] | None:
    """The mil dialect's class of `op`, also for an op of that name parsed
    unregistered (whose properties are then attributes, which the rules
    read alike); None for an op the dialect does not define."""
    return type(op) if isinstance(op, MilOp) else MIL_OP_CLASSES.get(op_name(op))


def rules_of(op: Operation) -> tuple[OpRule, ...]:
    """The rules the op's class states (`MilOp.ANE_RULES`) and those of its
    name in `OP_RULES`, in that order."""
    cls = mil_class(op)
    own = cls.ANE_RULES if cls is not None else ()
    named = OP_RULES.get(op_name(op))
    return own if named is None else (*own, named)


def op_rule_details(
    op: Operation, lint: bool = False, chip: Chip | None = None
) -> list[tuple[OpRule, str]]:
    """Each rule of `op` (`rules_of`) that applies to it, with its reason;
    with `lint`, only the rules ane-lint reports; with `chip`, also those of
    that chip."""
    return rule_details(op, rules_of(op), lint, chip)


def is_const(name: str) -> bool:
    """Consts hold weights and are not counted as ops; constexpr ops are
    evaluated when the model loads."""
    return name in ("mil.const", "rlx.constant", "rlx.param") or name.startswith(
        "mil.constexpr_"
    )


@dataclass(frozen=True)
class Placement:
    """Where an op runs: "ane", or "cpu"/"gpu" with the rule that moved it
    (`rule`, a short key) and why (`reason`)."""

    unit: Unit
    rule: str = ""
    reason: str = ""


ON_ANE = Placement("ane")


def _tensors(op: Operation) -> list[tuple[str, Attribute]]:
    values = [("result", r.type) for r in op.results]
    values += [("operand", o.type) for o in op.operands]
    return values


def _state_shapes(function: Operation | None) -> set[tuple[int, ...]]:
    shapes = set()
    if function is None:
        return shapes
    for op in function.walk():
        for value in (*op.results, *op.operands):
            if isinstance(value.type, StateTypeBase):
                shapes.add(tuple(value.type.wrapped.get_shape()))
    for region in function.regions:
        for block in region.blocks:
            for arg in block.args:
                if isinstance(arg.type, StateTypeBase):
                    shapes.add(tuple(arg.type.wrapped.get_shape()))
    return shapes


def _const_defined(value) -> bool:
    owner = getattr(value, "owner", None)
    return isinstance(owner, Operation) and is_const(op_name(owner))


def placement_rule(
    op: Operation, chip: Chip, state_shapes: set[tuple[int, ...]] | None = None
) -> Placement:
    """Where `op` (not a const) runs on `chip`, by the first rule that moves
    it off the ANE. `state_shapes` are the state shapes of its function (for
    chips that cannot mix them)."""
    name = op_name(op)
    if name.startswith("rlx."):
        return Placement("cpu", "not-lowered", "rlx op not lowered to mil")
    if not name.startswith("mil."):
        return Placement("cpu", "not-mil", "not a MIL op")
    details = op_rule_details(op, chip=chip)
    if details:
        rule, detail = details[0]
        return Placement(rule.unit, rule.key or name.removeprefix("mil."), detail)
    if not isinstance(op, MilOp) and not rules_of(op):
        # (an op with a rule is a MIL op, defined by the mil dialect or not)
        return Placement("cpu", "custom", "custom op (not in the mil dialect)")
    for kind, t in _tensors(op):
        if isinstance(t, StateTypeBase):
            shape = tuple(t.wrapped.get_shape())
            if shape and shape[-1] % STATE_ALIGNMENT:
                return Placement(
                    "cpu",
                    "state-shape",
                    f"state {list(shape)}: last axis not a multiple of "
                    f"{STATE_ALIGNMENT}",
                )
            if not chip.mixed_state_shapes and len(state_shapes or ()) > 1:
                return Placement(
                    "cpu",
                    "state-shapes",
                    f"{chip.title} cannot compile states of different shapes in "
                    "one model",
                )
            continue
        if isinstance(t, UnrankedTensorType):
            return Placement("cpu", "dynamic-shape", f"{kind} of dynamic shape")
        shape = shape_of(t)
        if shape is None:
            continue
        if any(d < 0 for d in shape):
            return Placement("cpu", "dynamic-shape", f"{kind} of dynamic shape")
        if len(shape) > MAX_RANK:
            return Placement("cpu", "rank", f"{kind} of rank {len(shape)} > {MAX_RANK}")
        over = dimensions_over(shape, chip_limit(chip))
        if over:
            axis, size, limit = over[0]
            return Placement(
                "gpu",
                "dimension",
                f"{kind} axis {axis} has size {size} > {limit} on {chip.title}",
            )
    for kind, t in _tensors(op):
        element = getattr(t, "element_type", None)
        if element == bf16:
            return Placement("gpu", "dtype", f"bf16 {kind}; the ANE has no bf16")
    for r in op.results:
        if getattr(r.type, "element_type", None) == f32:
            return Placement("gpu", "dtype", "fp32 compute; the ANE computes fp16")
        # (argmax's index result: argmax over ≤ 2048 elements runs there)
        if getattr(r.type, "element_type", None) == i32 and not _index_result(op):
            return Placement("cpu", "dtype", "int32 result; the ANE has no int32")
    for o in op.operands:
        element = getattr(o.type, "element_type", None)
        if element == f32:
            if _const_defined(o):
                return Placement(
                    "gpu", "fp32-const", "fp32 constant operand (an fp32 buffer)"
                )
            return Placement("gpu", "dtype", "fp32 operand; the ANE computes fp16")
        if element == i32 and not _const_defined(o) and not _index_operands(op):
            return Placement("cpu", "dtype", "int32 operand; the ANE has no int32")
    return ON_ANE


def _index_result(op: Operation) -> bool:
    cls = mil_class(op)
    return cls is not None and cls.ANE_INDEX_RESULT


def _index_operands(op: Operation) -> bool:
    cls = mil_class(op)
    return cls is not None and cls.ANE_INDEX_OPERANDS


def function_state_shapes(function: Operation) -> set[tuple[int, ...]]:
    return _state_shapes(function)


def is_fp32(t: Attribute) -> bool:
    return isinstance(t, TensorType | UnrankedTensorType) and t.element_type == f32
