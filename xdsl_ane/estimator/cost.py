"""What one op costs: its FLOPs and the bytes it moves.

FLOPs are the op's own to state (`MilOp.flops`, by the conventions of
`xdsl_ane/ane/cost.py`); a MIL op the mil dialect does not define (parsed
unregistered) is counted by its name in `OTHER_OPS`, any other op one per
result element. Bytes are inputs + outputs + weights at their declared
element sizes: an operand made by a const or a constexpr op is a weight,
counted at its storage (a constexpr op's own const operands, so 4-bit
weights move 4 bits), a state operand at its tensor's size; the views,
slices and in-place state updates of `traffic` less.

A compressed weight is expanded where it is read (`weight_read`): the ANE
reads the stored bytes and computes the dense weight each time the op
runs, at its constexpr ops' own FLOPs (one per weight element each, as
MIL's `dequantize` is counted), added to the op's FLOPs at its peak. An
int8 computation (W8A8, `precision`) takes int8 weights as they are stored:
no expansion.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from xdsl.dialects.builtin import f32, i8
from xdsl.ir import Attribute, Operation, SSAValue

from xdsl_ane.ane.cost import (
    elements,
    input_elements,
    output_elements,
    pooling_flops,
)
from xdsl_ane.ane.rules import op_name, shape_of
from xdsl_ane.dialects.dtypes import BY_ELEMENT, dtype_of_element
from xdsl_ane.dialects.mil.base import MilOp
from xdsl_ane.dialects.mil.quantization import int8_weight
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


SLICES = ("mil.slice_by_size", "mil.slice_by_index")


def owner_name(value: SSAValue) -> str:
    owner = value.owner
    return op_name(owner) if isinstance(owner, Operation) else ""


def in_place(op: Operation) -> bool:
    """A slice_update of a state's tensor as read_state gives it, or the
    coreml_update_state storing such an update: Core ML updates a state's
    buffer in place."""
    name = op_name(op)
    if name == "mil.coreml_update_state":
        value = op.operands[1].owner
        return isinstance(value, Operation) and in_place(value)
    return name == "mil.slice_update" and owner_name(op.operands[0]) == (
        "mil.read_state"
    )


INT8_COMPUTE = ("mil.conv", "mil.linear", "mil.matmul")
"""The ops the ANE computes in int8 when their operands are int8."""


def int8_data(value: SSAValue) -> bool:
    """Whether `value` is held in int8: an activation dequantized from
    int8 (the ANE fuses the dequantize into its reader), or a weight whose
    constexpr op expands int8 data."""
    owner = value.owner
    if isinstance(owner, Operation) and op_name(owner) == "mil.dequantize":
        return getattr(owner.operands[0].type, "element_type", None) == i8
    return int8_weight(value)


def precision(op: Operation) -> str:
    """ "int8" for a convolution, linear or matmul whose tensor operands
    (but biases) are all int8 (W8A8), else its result's float width."""
    if op_name(op) in INT8_COMPUTE:
        operands = [o for o in op.operands[:2] if shape_of(o.type)]
        if operands and all(int8_data(o) for o in operands):
            return "int8"
    element = getattr(op.results[0].type, "element_type", None) if op.results else None
    return "fp32" if element == f32 else "fp16"


def stored_bytes(value: SSAValue) -> int:
    """What the ANE moves of an activation: a dequantized int8 tensor at
    its int8 width, a result that only quantize reads at the quantized
    width (the quantize fused into its producer), else its own."""
    if isinstance(value.owner, Operation) and op_name(value.owner) == "mil.dequantize":
        return value_bytes(value.owner.operands[0].type)
    uses = [u.operation for u in value.uses]
    if uses and all(op_name(u) == "mil.quantize" for u in uses):
        return value_bytes(uses[0].results[0].type)
    return value_bytes(value.type)


FUSED = ("mil.read_state", "mil.quantize", "mil.dequantize")
"""Ops fused into their neighbours: they move nothing of their own."""


def reads_weights(op: Operation) -> bool:
    """Whether `op` moves its weight operands: not a view, a fused op, an
    in-place state update or a slice (which move what `traffic` says)."""
    name = op_name(op)
    return not (is_view(op) or name in FUSED or in_place(op) or name in SLICES)


def is_constexpr(value: SSAValue) -> bool:
    return owner_name(value).startswith("mil.constexpr_")


def storage(value: SSAValue) -> str:
    """How a weight is stored, by MIL's dtype names: a const's dtype
    ("fp16"), a dequantizing constexpr op's data ("int8", "int4", "uint8"),
    a LUT's index width ("lut4")."""
    if owner_name(value) == "mil.constexpr_lut_to_dense":
        indices = value.owner.operands[0].type
        return f"lut{dtype_of_element(indices.element_type).bits}"
    if is_constexpr(value):
        return storage(value.owner.operands[0])
    element = getattr(value.type, "element_type", None)
    return BY_ELEMENT[element].mil if element in BY_ELEMENT else str(element)


def expansion_flops(value: SSAValue) -> int:
    """The FLOPs of computing a weight from its storage: those of each
    constexpr op on the way from its consts (a LUT of int8 entries is
    two), none for a const."""
    if not is_constexpr(value):
        return 0
    return flops(value.owner) + sum(expansion_flops(o) for o in value.owner.operands)


@dataclass(frozen=True)
class WeightRead:
    """One weight an op reads: how it is stored, the bytes moved (its
    storage), its elements and the FLOPs of expanding it for the op."""

    name: str
    storage: str
    bytes: int
    elements: int
    expand_flops: int

    def row(self) -> dict:
        return asdict(self)


def weight_reads(op: Operation, names: dict[SSAValue, str]) -> list[WeightRead]:
    """The weights `op` reads (none for the ops `reads_weights` excludes),
    each named by its printed value name (`names`). An int8 computation
    reads int8 weights unexpanded."""
    if not reads_weights(op):
        return []
    int8 = precision(op) == "int8"
    return [
        WeightRead(
            "%" + names.get(o, "?"),
            storage(o),
            weight_bytes(o),
            elements(o.type),
            0 if int8 and int8_weight(o) else expansion_flops(o),
        )
        for o in op.operands
        if is_weight(o)
    ]


def traffic(op: Operation) -> tuple[int, int]:
    """(bytes moved: inputs + outputs + weights, of which weights). A
    reshape that is a view moves none; a state is read where its readers
    read it (read_state none, a slice of it what it takes), and updated
    in place (slice_update the update's bytes, coreml_update_state none);
    a slice reads and writes only what it takes; quantize and dequantize
    are fused into their neighbours, which move int8 (`stored_bytes`)."""
    name = op_name(op)
    if is_view(op) or name in FUSED:
        return 0, 0
    if in_place(op):
        update = op.operands[1] if name == "mil.slice_update" else None
        return (2 * value_bytes(update.type) if update is not None else 0), 0
    if name in SLICES:
        return 2 * sum(value_bytes(r.type) for r in op.results), 0
    weights = sum(weight_bytes(o) for o in op.operands if is_weight(o))
    inputs = sum(stored_bytes(o) for o in op.operands if not is_weight(o))
    outputs = sum(stored_bytes(r) for r in op.results)
    return inputs + outputs + weights, weights
