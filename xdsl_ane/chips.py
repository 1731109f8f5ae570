"""The Neural Engine of each Apple chip: its limits and its speed, for the
placement rules (`passes/ane_rules.py`) and the latency estimate
(`xdsl_ane/estimator`).

Every number comes from ANE_FACTS.md; the comment beside it names the fact.
Where the facts give no figure for a chip, the value is taken from the
nearest chip that has one and the comment says so. The facts give no memory
bandwidth: it is derived from the FLOP-per-byte knee (a layer below about
141 FLOP per byte moved is bandwidth-bound, measured on M1) as peak / knee,
with M1's knee for every chip. That gives M1 78 GB/s and M4 132 GB/s.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl_ane.errors import XdslAneError

KNEE_FLOP_PER_BYTE = 141.0
"""Below about 141 FLOP per byte moved a layer is bandwidth-bound (ane-guide
ch. 9, measured on M1); the only knee in the facts, used for every chip."""

DISPATCH_S = 0.15e-3
"""One ANE program invocation costs about 0.07–0.23 ms (ane-guide); the
middle of that range, for every chip (the facts give no per-chip figure)."""

MB = 1 << 20


@dataclass(frozen=True)
class Chip:
    """One chip's Neural Engine. Dimension limits follow Core ML's axis
    names: channels is the third axis from the end of a rank ≥ 3 tensor
    ([N, C, H, W]), height and width (and every other axis) use
    `max_spatial`."""

    name: str
    title: str
    tops_fp16: float
    """Peak fp16 throughput, 10¹² FLOP/s."""
    max_spatial: int
    max_channels: int
    sram_bytes: int
    sin_cos: bool
    """Whether sin and cos run on the ANE (from A15)."""
    mixed_state_shapes: bool
    """Whether one model may hold states of different shapes."""
    dispatch_s: float = DISPATCH_S
    knee: float = KNEE_FLOP_PER_BYTE

    @property
    def peak_flops(self) -> float:
        return self.tops_fp16 * 1e12

    @property
    def bandwidth(self) -> float:
        """Bytes per second: peak / knee (the facts give no bandwidth)."""
        return self.peak_flops / self.knee


# Peaks: Apple's stated TOPS (hollance/neural-engine supported-devices.md) are
# fp16 up to A16/M3 and int8 from A17/M4 on ("int8 figures from A17/M4 on"),
# so those chips' fp16 peak is half the int8 figure; M4's is the measured
# 18.6 TOPS fp16 (maderix/ANE README; Apple states 38 int8).
# Dimensions: "W and H ≤ 16384 and C ≤ 65536 through A15/M2; 65536 on every
# axis from A16" (M3 is of the A17 generation).
# SRAM: ~16 MB (M1), ~24 MB (M2), ~24–32 MB (M4), spills start near 32 MB
# (maderix/ANE ANE_INTERNALS.md); A14 shares M1's ANE generation, A15 M2's;
# A16, A17, A18 and M3 have no figure and take M2's 24 MB.
# sin/cos: "sin/cos from A15". States: "M1/A14 cannot compile states of
# different shapes in one model".
CHIPS: dict[str, Chip] = {
    c.name: c
    for c in (
        Chip("a14", "A14", 11.0, 16384, 65536, 16 * MB, False, False),
        Chip("a15", "A15", 15.8, 16384, 65536, 24 * MB, True, True),
        Chip("a16", "A16", 17.0, 65536, 65536, 24 * MB, True, True),
        Chip("a17", "A17 Pro", 35.0 / 2, 65536, 65536, 24 * MB, True, True),
        Chip("a18", "A18", 35.0 / 2, 65536, 65536, 24 * MB, True, True),
        Chip("m1", "M1", 11.0, 16384, 65536, 16 * MB, False, False),
        Chip("m2", "M2", 15.8, 16384, 65536, 24 * MB, True, True),
        Chip("m3", "M3", 15.8, 65536, 65536, 24 * MB, True, True),
        Chip("m4", "M4", 18.6, 65536, 65536, 32 * MB, True, True),
    )
}

DEFAULT_CHIP = "m4"


def get_chip(name: str | Chip) -> Chip:
    """The chip of that name (case-insensitive); an unknown name is an error
    listing the known ones."""
    if isinstance(name, Chip):
        return name
    found = CHIPS.get(str(name).lower())
    if found is None:
        raise XdslAneError(f"unknown chip '{name}' (known: {', '.join(CHIPS)})")
    return found
