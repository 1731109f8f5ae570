"""`compile(compress="auto:BITS")`: each weight's mode chosen, by measuring,
to meet an average of BITS stored bits per weight with the least output
error on the calibration samples.

Sensitivity: every compressible weight (as `mil-compress-weights` picks
them) is compressed in each candidate mode alone, decompressed, and the
program run with it in place of the fp16 weight; its cost is the squared
output error that adds, relative to the outputs' squared norm, summed
over the samples (errors of different weights are taken to add). The
choice minimizes the summed cost under the budget Σ stored bits ≤ BITS ·
Σ weights by a Lagrange multiplier (each weight its cheapest mode at
cost + λ · bits, λ the least that meets the budget), then spends what
is left of the budget on the upgrades that remove the most error per
bit. A weight may stay fp16 (16 bits, no error). The plan then runs
through `mil-compress-weights` as any other, and the report measures the
chosen plan and each uniform mode on the same samples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import builtin
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.api.w8a8 import AUTO
from xdsl_ane.errors import XdslAneError, option

CANDIDATES = ("lut2", "lut3", "lut4", "lut6", "lut8", "int4", "int8")
"""The modes a weight may take besides fp16 (MIL has no lut5 or lut7)."""


def budget(compress: str) -> float:
    """BITS of `auto:BITS`, between 2 and 16."""
    text = compress.removeprefix(AUTO)
    try:
        bits = float(text)
    except ValueError:
        bits = math.nan
    if not 2 <= bits <= 16:
        raise XdslAneError(
            f"{option('compress', compress)}: expected auto:BITS, BITS an average "
            "of bits per weight from 2 to 16"
        )
    return bits


@dataclass
class Candidate:
    """A weight compressed one way: its stored bits and added error."""

    mode: str
    bits: int
    error: float
    value: np.ndarray = field(repr=False)
    """The decompressed weight, in the weights file's layout."""


@dataclass
class Weight:
    name: str
    size: int
    original: np.ndarray = field(repr=False)
    options: list[Candidate] = field(default_factory=list)

    @property
    def fp16(self) -> Candidate:
        return Candidate("fp16", 16 * self.size, 0.0, self.original)


@dataclass
class AutoReport:
    """The plan and its measured error beside each uniform mode's."""

    bits: float
    chosen: dict[str, str]
    average_bits: float
    error: float
    uniform: dict[str, float]

    def summary(self) -> str:
        by_mode: dict[str, list[str]] = {}
        for name, mode in self.chosen.items():
            by_mode.setdefault(mode, []).append(name)
        plan = "; ".join(f"{m}: {', '.join(n)}" for m, n in sorted(by_mode.items()))
        uniform = ", ".join(f"{m} {e:.4f}" for m, e in self.uniform.items())
        return (
            f"auto:{self.bits:g}: {self.average_bits:.2f} bits per weight, output "
            f"error {self.error:.4f} (uniform: {uniform}); {plan}"
        )


def file_layout(const: Any, value: np.ndarray, original: np.ndarray) -> np.ndarray:
    """A const's view of a weight put back in the weights file's layout."""
    from xdsl_ane.dialects.typing import ints_prop

    perm = ints_prop(const.properties, "perm")
    if perm:
        permuted = [original.shape[p] for p in perm]
        value = value.reshape(permuted).transpose(np.argsort(perm))
    return value.reshape(original.shape).astype(original.dtype)


class Probe:
    """Runs the program on the samples (`quantize_activations.Sample`:
    calls sharing states) with some weights replaced: the summed relative
    squared error of its outputs against the fp16 weights' (`error`), or
    its root mean square (`rms`)."""

    def __init__(self, module, weights, samples) -> None:
        from xdsl_ane.interpreter.core import run_calls

        self.module, self.weights, self.samples = module, weights, list(samples)
        self.reference = [run_calls(module, s, weights) for s in self.samples]

    def error(self, replaced: Mapping[str, np.ndarray]) -> float:
        from xdsl_ane.interpreter.core import run_calls

        total, weights = 0.0, {**self.weights, **replaced}
        for sample, reference in zip(self.samples, self.reference):
            outputs = run_calls(self.module, sample, weights)
            for y, y0 in zip(outputs, reference):
                y0 = y0.astype(np.float64)
                norm = float(np.sum(y0**2)) or 1.0
                total += float(np.sum((y.astype(np.float64) - y0) ** 2)) / norm
        return total

    def rms(self, replaced: Mapping[str, np.ndarray]) -> float:
        return math.sqrt(self.error(replaced) / len(self.samples))


def candidates(module: builtin.ModuleOp, head: str) -> list[tuple[Any, ...]]:
    """The weights `mil-compress-weights` would compress: (const, name,
    use) of each distinct named weight read through one view (by one
    const, or several of the same view: a multifunction program's)."""
    from xdsl_ane.dialects import mil
    from xdsl_ane.dialects.typing import is_float
    from xdsl_ane.passes.compress_weights import (
        DEFAULT_MIN_SIZE,
        const_key,
        is_head_name,
        weight_use,
    )

    found: dict[str, list[Any]] = {}
    for const in (op for op in module.walk() if isinstance(op, mil.ConstOp)):
        t = const.result.type
        if const.weight is None or not is_float(t.element_type):
            continue
        if math.prod(t.get_shape()) < DEFAULT_MIN_SIZE:
            continue
        use = weight_use(const)
        name = const.weight.data
        if (
            use is None
            or use.kind != "linear"
            or (is_head_name(name) and head == "none")
        ):
            continue
        found.setdefault(name, []).append((const, name, use))
    return [
        views[0]
        for views in found.values()
        if len({const_key(const) for const, _, _ in views}) == 1
    ]


def choose(weights: list[Weight], bits: float) -> dict[str, Candidate]:
    """The Lagrangian choice under the budget, then the greedy upgrades."""
    allowed = bits * sum(w.size for w in weights)

    def pick(lam: float) -> dict[str, Candidate]:
        return {
            w.name: min([*w.options, w.fp16], key=lambda c: c.error + lam * c.bits)
            for w in weights
        }

    def used(choice: dict[str, Candidate]) -> int:
        return sum(c.bits for c in choice.values())

    low, high = 0.0, 1.0
    while used(pick(high)) > allowed and high < 1e12:
        high *= 10
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (low, mid) if used(pick(mid)) <= allowed else (mid, high)
    choice = pick(high)
    while True:  # the upgrade removing most error per extra bit that fits
        left = allowed - used(choice)
        best = None
        for w in weights:
            now = choice[w.name]
            for c in [*w.options, w.fp16]:
                extra = c.bits - now.bits
                if 0 < extra <= left and c.error < now.error:
                    gain = (now.error - c.error) / extra
                    if best is None or gain > best[0]:
                        best = (gain, w.name, c)
        if best is None:
            return choice
        choice[best[1]] = best[2]


def plan_auto(module, weights, samples, compress: str, head: str):
    """(the per-weight settings of `auto:BITS`, the `AutoReport`)."""
    from xdsl_ane.passes.compress_weights import CompressionSetting, const_data
    from xdsl_ane.weights.store import WeightStore

    bits = budget(compress)
    probe = Probe(module, weights, samples)
    store = WeightStore(weights)
    found: list[Weight] = []
    for const, name, use in candidates(module, head):
        value = const_data(const, store, name)
        weight = Weight(name, value.size, np.asarray(weights[name]))
        for mode in CANDIDATES:
            try:
                stored, stored_bits = decompressed(
                    const, value, weight.original, mode, use
                )
            except PassFailedException:  # a group that does not divide it
                continue
            error = probe.error({name: stored})
            weight.options.append(Candidate(mode, stored_bits, error, stored))
        found.append(weight)
    if not found:
        raise XdslAneError(
            f"{option('compress', compress)}: no weight is large enough to compress"
        )
    choice = choose(found, bits)
    report = AutoReport(
        bits,
        {n: c.mode for n, c in choice.items()},
        sum(c.bits for c in choice.values()) / sum(w.size for w in found),
        probe.rms({n: c.value for n, c in choice.items()}),
        uniform_errors(probe, found),
    )
    settings = {
        n: None if c.mode == "fp16" else CompressionSetting.make(c.mode)
        for n, c in choice.items()
    }
    return settings, report


def uniform_errors(probe: Probe, found: list[Weight]) -> dict[str, float]:
    """The output error of each mode that every weight can take, alone."""
    errors = {}
    for mode in CANDIDATES:
        values = {w.name: c.value for w in found for c in w.options if c.mode == mode}
        if len(values) == len(found):
            errors[mode] = probe.rms(values)
    return errors


def decompressed(const, value, original, mode: str, use) -> tuple[np.ndarray, int]:
    """`value` compressed in `mode` and expanded back, in the weights
    file's layout, and its stored bits."""
    from xdsl_ane.interpreter.mil import blockwise_shift_scale, lut_to_dense
    from xdsl_ane.passes.compress_weights import CompressionSetting, compress_array

    name = const.weight.data
    packed = compress_array(value, CompressionSetting.make(mode), use, name)
    arrays = [a for _, a, _ in packed.inputs]
    dense = (
        lut_to_dense(arrays[0], arrays[1], None)
        if mode.startswith("lut")
        else blockwise_shift_scale(arrays[0], arrays[1], None)
    )
    return file_layout(const, dense, original), packed.stored_bits


def compress(module, weights, calibration, mode: str, head: str):
    """`module`'s weights compressed as `auto:BITS` plans them (in place;
    the compressed tensors join `weights`): the `CompressionReport`, its
    `auto` the `AutoReport`."""
    from xdsl_ane.api.w8a8 import samples
    from xdsl_ane.passes.compress_weights import (
        CompressionPlan,
        CompressionSetting,
        compress_module,
    )

    settings, auto = plan_auto(
        module, weights, samples(module, calibration), mode, head
    )
    plan = CompressionPlan(
        CompressionSetting.make("int8"), None, None, per_weight=settings
    )
    report = compress_module(module, plan, weights)
    report.auto = auto
    return report
