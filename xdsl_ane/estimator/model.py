"""The estimate of a compiled program on one chip: where each op runs and
how long it takes.

Placement: `passes/placement.placement_rule` per op (consts excluded); a segment
is a set of ops of one function that one unit runs in one go (ops join the
earliest segment of their unit that their operands allow), and each switch
between units is a transfer.

Latency, every part in µs and the total their sum:
- an op on the ANE: max(FLOPs / peak, bytes / bandwidth), bytes being
  inputs + outputs + weights (`cost.traffic`: compressed weights at their
  stored width), FLOPs its own and those of expanding its compressed
  weights (`cost.weight_reads`), the peak the chip's int8
  one for int8 compute (`cost.precision`); when that working set exceeds the chip's
  SRAM, the excess is written out and read back: 2 · (bytes − SRAM) more
  bytes at the bandwidth; a softmax beyond the SRAM (long-sequence
  attention's scores) instead reads its input in three passes (maximum,
  sum of exponentials, normalization);
- an op on the GPU or the CPU: the same roofline at `OTHER_UNIT_SHARE` of
  the ANE's peak and the same (unified) memory bandwidth — an assumption:
  ANE_FACTS gives no CPU or GPU throughput;
- each ANE segment: one dispatch (`Chip.dispatch_s`);
- each switch: the tensors crossing it, written by one unit and read by the
  other: 2 · bytes / bandwidth.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import get_args

from xdsl.dialects import builtin, func
from xdsl.ir import Operation, SSAValue

from xdsl_ane.ane.chips import DEFAULT_CHIP, Chip, get_chip
from xdsl_ane.ane.rules import Unit, op_name
from xdsl_ane.estimator.cost import (
    WeightRead,
    flops,
    precision,
    traffic,
    value_bytes,
    weight_bytes,
    weight_reads,
)
from xdsl_ane.passes.ane_lint import printed_names
from xdsl_ane.passes.placement import (
    function_state_shapes,
    is_const,
    placement_rule,
)

OTHER_UNIT_SHARE = {"gpu": 0.25, "cpu": 1 / 16}
"""The GPU's and the CPU's throughput as a share of the ANE's fp16 peak
(an assumption stated, not a fact: the facts have no such figure)."""

UNITS: tuple[Unit, ...] = get_args(Unit)

LAYER = re.compile(r"^(.*?(?:layers?|blocks?|h|encoder|decoder)[._]\d+)(?:[._]|$)")
"""`model.layers.3.mlp.up_proj.weight` -> `model.layers.3`, `layers_0_q` ->
`layers_0`: the source layer of a weight or value name."""


@dataclass
class OpEstimate:
    """One op: `unit` ("ane", "gpu", "cpu"), the rule that moved it off the
    ANE (`rule`, `reason`; empty on the ANE), FLOPs, bytes and µs."""

    function: str
    name: str
    op: str
    unit: Unit
    rule: str
    reason: str
    flops: int
    bytes: int
    weight_bytes: int
    us: float
    layer: str = ""
    spill_bytes: int = 0
    precision: str = "fp16"
    """What it computes in: "fp16", "fp32", or "int8" (int8 activations
    and weights, at the chip's int8 peak where it has one)."""
    weights: tuple[WeightRead, ...] = ()
    """The weights it reads: storage, bytes, expansion."""

    @property
    def expand_flops(self) -> int:
        """The FLOPs of expanding its compressed weights (beside `flops`)."""
        return sum(w.expand_flops for w in self.weights)

    def row(self) -> dict:
        return {
            "name": self.name,
            "op": self.op,
            "unit": self.unit,
            "reason": self.reason,
            "flops": self.flops,
            "bytes": self.bytes,
            "us": self.us,
            "precision": self.precision,
            "function": self.function,
            "layer": self.layer,
            "weight_bytes": self.weight_bytes,
            "expand_flops": self.expand_flops,
            "weights": [w.row() for w in self.weights],
        }


@dataclass
class Segment:
    """Ops of one function that run on one unit in one go. `dispatch_us`
    is the ANE invocation (0 elsewhere), `transfer_us` the cost of the
    tensors entering it from another unit."""

    function: str
    unit: Unit
    indices: list[int] = field(default_factory=list)
    """Indices in `Estimate.ops` of its ops, in program order."""
    op_us: float = 0.0
    dispatch_us: float = 0.0
    transfer_bytes: int = 0
    transfer_us: float = 0.0

    @property
    def us(self) -> float:
        return self.op_us + self.dispatch_us + self.transfer_us

    def row(self, ops: list[OpEstimate]) -> dict:
        return {
            "function": self.function,
            "unit": self.unit,
            "ops": len(self.indices),
            "first": ops[self.indices[0]].name,
            "last": ops[self.indices[-1]].name,
            "us": self.us,
            "op_us": self.op_us,
            "dispatch_us": self.dispatch_us,
            "transfer_bytes": self.transfer_bytes,
            "transfer_us": self.transfer_us,
        }


@dataclass
class Estimate:
    """The estimate of a program on `chip`: its ops in order, its segments.
    Every total is a sum of these parts."""

    chip: Chip
    source: str
    ops: list[OpEstimate] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)

    @property
    def op_us(self) -> float:
        return sum(o.us for o in self.ops)

    @property
    def dispatch_us(self) -> float:
        return sum(s.dispatch_us for s in self.segments)

    @property
    def transfer_us(self) -> float:
        return sum(s.transfer_us for s in self.segments)

    @property
    def total_us(self) -> float:
        return sum(s.us for s in self.segments)

    @property
    def total_ms(self) -> float:
        return self.total_us / 1000

    @property
    def flops(self) -> int:
        return sum(o.flops for o in self.ops)

    @property
    def ane_fraction(self) -> float:
        """The share of FLOPs on the ANE (1 for a program without FLOPs that
        runs there entirely)."""
        total = self.flops
        if total == 0:
            return self.ane_op_fraction
        return sum(o.flops for o in self.ops if o.unit == "ane") / total

    @property
    def ane_op_fraction(self) -> float:
        if not self.ops:
            return 1.0
        return sum(o.unit == "ane" for o in self.ops) / len(self.ops)

    @property
    def switches(self) -> int:
        """Switches between units (within each function)."""
        functions = {s.function for s in self.segments}
        return len(self.segments) - len(functions)

    def function_ms(self) -> dict[str, float]:
        found: dict[str, float] = {}
        for s in self.segments:
            found[s.function] = found.get(s.function, 0.0) + s.us / 1000
        return found

    def moved(self) -> list[OpEstimate]:
        return [o for o in self.ops if o.unit != "ane"]

    def to_json(self) -> dict:
        return {
            "chip": self.chip.name,
            "source": self.source,
            "total_ms": self.total_ms,
            "ane_fraction": self.ane_fraction,
            "ane_op_fraction": self.ane_op_fraction,
            "flops": self.flops,
            "op_us": self.op_us,
            "dispatch_us": self.dispatch_us,
            "transfer_us": self.transfer_us,
            "functions": self.function_ms(),
            "segments": [s.row(self.ops) for s in self.segments],
            "ops": [o.row() for o in self.ops],
        }


SOFTMAX_PASSES = 3
"""A softmax reads its input three times when it does not fit the SRAM:
for the maximum, for the sum of exponentials, and to normalize."""


def op_time_us(
    unit: Unit,
    op_flops: int,
    op_bytes: int,
    chip: Chip,
    precision: str = "fp16",
    passes: int = 1,
) -> tuple[float, int]:
    """(µs, spilled bytes) of one op on `unit`: the roofline (the ANE's
    int8 peak for int8 compute), plus the SRAM spill on the ANE. With
    `passes` > 1 (a softmax), a working set beyond the SRAM is read that
    many times instead of spilled once."""
    if unit == "ane":
        spill = 2 * max(0, op_bytes - chip.sram_bytes)
        if passes > 1 and spill:
            spill = (passes - 1) * op_bytes // 2  # its input, again
        peak = chip.peak(precision)
        seconds = max(op_flops / peak, (op_bytes + spill) / chip.bandwidth)
        return seconds * 1e6, spill
    peak = chip.peak_flops * OTHER_UNIT_SHARE[unit]
    return max(op_flops / peak, op_bytes / chip.bandwidth) * 1e6, 0


def transfer_us(crossing_bytes: int, chip: Chip) -> float:
    return 2 * crossing_bytes / chip.bandwidth * 1e6


GROUP_WEIGHT_BYTES = 1 << 20
"""A weight outside any numbered layer at least this large (an embedding, an
LM head) starts a group named by its module; smaller shared tables (RoPE
angles, masks) do not."""


def layer_key(op: Operation) -> str | None:
    """The source layer an op belongs to, by its result names or the names
    of the weights it reads (None: the layer of the op before it)."""
    names = [r.name_hint or "" for r in op.results]
    weights: list[tuple[str, int]] = []
    for o in op.operands:
        owner = o.owner
        if isinstance(owner, Operation) and is_const(op_name(owner)):
            weight = owner.properties.get("weight") or owner.attributes.get("weight")
            text = getattr(weight, "data", None)
            if isinstance(text, str):
                weights.append((text, weight_bytes(o)))
    for c in [*names, *(w for w, _ in weights)]:
        m = LAYER.match(c)
        if m:
            return m.group(1)
    for w, size in weights:
        if size >= GROUP_WEIGHT_BYTES:
            return w.rpartition(".")[0] or w
    return None


def estimate_functions(
    functions: Iterable[tuple[str, func.FuncOp]], chip: Chip | str, source: str
) -> Estimate:
    """The estimate of `functions` ((label, function) pairs) on `chip`."""
    chip = get_chip(chip)
    result = Estimate(chip, source)
    for label, function in functions:
        _estimate_function(result, label, function)
    return result


def estimate_module(
    module: builtin.ModuleOp, chip: Chip | str = DEFAULT_CHIP, source: str = "<module>"
) -> Estimate:
    """The estimate of every function of a (compiled, mil) module on `chip`."""
    functions = [
        (op.sym_name.data, op) for op in module.walk() if isinstance(op, func.FuncOp)
    ]
    return estimate_functions(functions, chip, source)


def _estimate_function(result: Estimate, label: str, function: func.FuncOp) -> None:
    """Places and times each op of `function`, then groups them into
    segments: each op joins the earliest segment of its unit that comes
    after the segments of its operands (later than them when their unit
    differs), so independent work on one unit shares a segment, as Core
    ML's partition of the graph lets it."""
    chip = result.chip
    names = printed_names(function)
    states = function_state_shapes(function)
    stage_of: dict[SSAValue, int] = {}
    stages: list[Segment] = []
    crossing: list[set[SSAValue]] = []
    layer = label
    start = len(result.ops)
    for op in function.body.walk():
        name = op_name(op)
        if isinstance(op, func.ReturnOp) or is_const(name):
            continue
        placement = placement_rule(op, chip, states)
        unit = placement.unit
        op_flops = flops(op)
        op_bytes, weights = traffic(op)
        computed = precision(op)
        reads = tuple(weight_reads(op, names))
        work = op_flops + sum(w.expand_flops for w in reads)
        passes = SOFTMAX_PASSES if name == "mil.softmax" else 1
        us, spill = op_time_us(unit, work, op_bytes, chip, computed, passes)
        layer = layer_key(op) or layer
        shown = ", ".join("%" + names.get(r, "?") for r in op.results) or name
        result.ops.append(
            OpEstimate(
                label,
                shown,
                name.removeprefix("mil."),
                unit,
                placement.rule,
                placement.reason,
                op_flops,
                op_bytes,
                weights,
                us,
                layer,
                spill,
                computed,
                reads,
            )
        )
        bound = 0
        for o in op.operands:
            if o in stage_of:
                s = stage_of[o]
                bound = max(bound, s if stages[s].unit == unit else s + 1)
        stage = next(
            (i for i in range(bound, len(stages)) if stages[i].unit == unit), None
        )
        if stage is None:
            stage = len(stages)
            segment = Segment(label, unit)
            if unit == "ane":
                segment.dispatch_us = chip.dispatch_s * 1e6
            stages.append(segment)
            crossing.append(set())
        segment = stages[stage]
        segment.indices.append(len(result.ops) - 1)
        segment.op_us += us
        for o in op.operands:
            # a tensor made on another unit crosses into this segment once
            if o in stage_of and stages[stage_of[o]].unit != unit:
                if o not in crossing[stage]:
                    crossing[stage].add(o)
                    segment.transfer_bytes += value_bytes(o.type)
        for r in op.results:
            stage_of[r] = stage
    for segment in stages:
        segment.transfer_us = transfer_us(segment.transfer_bytes, chip)
    result.segments.extend(stages)
    # ops before the first named layer (a norm before its weight) join it
    first = next((o.layer for o in result.ops[start:] if o.layer != label), None)
    for o in result.ops[start:]:
        if o.layer != label or first is None:
            break
        o.layer = first
