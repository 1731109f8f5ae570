"""W8A8 (`--compress w8a8`): int8 activations into the convolutions,
linears and matmuls whose weights `mil-compress-weights` made int8.

Each such op's activation (its first operand) is calibrated: the program
runs in the interpreter on the calibration samples and the largest |x|
that op reads sets a per-tensor symmetric scale, s = max|x| / 127. The
activation then goes through MIL's `quantize` (int8, zero point 0) and
`dequantize` with that scale before the op reads it, the pair the ANE
fuses into an int8 × int8 op on the chips that compute int8 faster
(`estimator/cost.precision`). Several readers of one activation share one
pair. What stays fp16 is counted for the summary: softmax, the norms, and
matmuls of two activations (attention's scores and their product with the
values), whose range a per-tensor scale serves badly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import builtin
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.mil.builders import const_op
from xdsl_ane.dialects.mil.quantization import int8_weight
from xdsl_ane.interpreter.core import StatefulRuntime

COMPUTE = ("mil.conv", "mil.linear", "mil.matmul")
KEPT_FP16 = ("mil.softmax", "mil.layer_norm", "mil.batch_norm", "mil.rsqrt")
"""The ops the summary names as kept in fp16 (with two-activation matmuls)."""
INT8_MAX = 127
SMALLEST_SCALE = 2.0**-24
"""fp16's least positive value: the scale of an activation that stayed 0
in calibration (a smaller one would be 0 in an fp16 const, which MIL's
quantize refuses)."""

Sample = Sequence[tuple[str, Sequence[np.ndarray]]]
"""One calibration sample: calls of the module's functions in order, each
its name and non-state arguments, the states zeros at first and kept from
call to call (`run_calls`: a prompt's prefill and decode calls); a
stateless program's sample is one call."""


def targets(module: builtin.ModuleOp) -> list[Operation]:
    """The ops whose activation becomes int8: a conv, linear or matmul whose
    weight operand (the second) is int8 and whose first is not a weight."""
    return [
        op
        for op in module.walk()
        if op.name in COMPUTE
        and len(op.operands) > 1
        and int8_weight(op.operands[1])
        and not int8_weight(op.operands[0])
    ]


@dataclass
class ActivationReport:
    """What `quantize_activations` did, for the compile summary."""

    activations: int
    ops: int
    samples: int
    kept: Counter = field(default_factory=Counter)
    unit: str = "calibration samples"

    def summary(self) -> str:
        kept = ", ".join(f"{n} {kind}" for kind, n in sorted(self.kept.items()))
        return (
            f"w8a8: {self.activations} activations int8 (per-tensor scales from "
            f"{self.samples} {self.unit}) into {self.ops} convs, linears "
            f"and matmuls; kept fp16: {kept or 'nothing'}"
        )


class _Ranges(Interpreter.Listener):
    """The largest |x| each target op reads as its activation."""

    def __init__(self, ops: Sequence[Operation]):
        self.largest: dict[Operation, float] = dict.fromkeys(ops, 0.0)

    def will_interpret_op(self, op: Operation, args) -> None:
        if op in self.largest:
            self.largest[op] = max(self.largest[op], largest_magnitude(args[0]))


F16_MAGNITUDE = 0x7FFF
F16_INFINITY = 0x7C00


def largest_magnitude(x) -> float:
    """max |x|; of f16 values through their bits, whose magnitudes order
    as the bit patterns without the sign do (20x numpy's f16 abs and max),
    unless a NaN is among them."""
    x = np.asarray(x)
    if x.dtype == np.float16 and x.size:
        bits = (x.view(np.uint16) & F16_MAGNITUDE).max()
        if bits <= F16_INFINITY:
            return float(bits.view(np.float16))
    return float(np.max(np.abs(x.astype(np.float32))))


def calibrate(
    module: builtin.ModuleOp,
    weights: Mapping[str, np.ndarray],
    samples: Sequence[Sample],
    ops: Sequence[Operation],
) -> dict[Operation, float]:
    """Each target op's largest activation over the samples' calls."""
    ranges = _Ranges(ops)
    # one interpreter for every call, each constexpr weight expanded once
    runtime = StatefulRuntime(module, weights, (ranges,), keep_constants=True)
    for sample in samples:
        runtime.run_calls(sample)
    return ranges.largest


def quantize_activations(
    module: builtin.ModuleOp,
    weights: Mapping[str, np.ndarray],
    samples: Sequence[Sample],
    unit: str = "calibration samples",
) -> ActivationReport:
    """Puts quantize / dequantize before each target op's activation, with
    scales from running `samples` through the interpreter; returns the
    report (`unit` names a sample in its summary)."""
    ops = targets(module)
    largest = calibrate(module, weights, samples, ops)
    pairs: dict[tuple[SSAValue, float], SSAValue] = {}
    for op in ops:
        x = op.operands[0]
        scale = max(largest[op] / INT8_MAX, SMALLEST_SCALE)
        key = (x, scale)
        if key not in pairs:
            pairs[key] = quantized(x, scale)
        op.operands[0] = pairs[key]
    kept = Counter(
        op.name.removeprefix("mil.")
        for op in module.walk()
        if op.name in KEPT_FP16
        or (op.name == "mil.matmul" and not int8_weight(op.operands[1]))
    )
    return ActivationReport(len(pairs), len(ops), len(samples), kept, unit)


def quantized(x: SSAValue, scale: float) -> SSAValue:
    """dequantize(quantize(x)) with `scale`, built right after x is made."""
    s = const_op(scale, x.type.element_type)  # type: ignore[attr-defined]
    q = mil.QuantizeOp(x, s.result)
    d = mil.DequantizeOp(q.result, s.result)
    owner = x.owner
    point = (
        InsertPoint.after(owner)
        if isinstance(owner, Operation)
        else InsertPoint.at_start(owner)  # a block argument: its block
    )
    Rewriter.insert_op([s, q, d], point)
    return d.result
