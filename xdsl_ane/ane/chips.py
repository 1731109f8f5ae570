"""The Neural Engine of each Apple chip: its limits and its speed, for the
placement rules (`ane/rules.py`, applied by `passes/placement.py`), the
lint's dimension limits (`ane/limits.py`) and the latency estimate
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


@dataclass(frozen=True, kw_only=True)
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
    tops_int8: float | None = None
    """Peak int8 × int8 throughput, where the chip computes int8 faster
    than fp16 (None: at its fp16 peak)."""
    dispatch_s: float = DISPATCH_S
    knee: float = KNEE_FLOP_PER_BYTE

    @property
    def peak_flops(self) -> float:
        return self.tops_fp16 * 1e12

    def peak(self, precision: str) -> float:
        """FLOP/s at `precision` ("int8": int8 activations and weights)."""
        if precision == "int8" and self.tops_int8 is not None:
            return self.tops_int8 * 1e12
        return self.peak_flops

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
# int8: Apple's int8 figures (A17 Pro 35, A18 35); M4 the measured W8A8
# 35.1 TOPS (maderix/ANE README: 1.88x its fp16); chips before A17/M4 run
# int8 at their fp16 rate ("int8 figures from A17/M4 on").
# sin/cos: "sin/cos from A15". States: "M1/A14 cannot compile states of
# different shapes in one model".
CHIPS: dict[str, Chip] = {
    c.name: c
    for c in (
        Chip(
            name="a14",
            title="A14",
            tops_fp16=11.0,
            max_spatial=16384,
            max_channels=65536,
            sram_bytes=16 * MB,
            sin_cos=False,
            mixed_state_shapes=False,
        ),
        Chip(
            name="a15",
            title="A15",
            tops_fp16=15.8,
            max_spatial=16384,
            max_channels=65536,
            sram_bytes=24 * MB,
            sin_cos=True,
            mixed_state_shapes=True,
        ),
        Chip(
            name="a16",
            title="A16",
            tops_fp16=17.0,
            max_spatial=65536,
            max_channels=65536,
            sram_bytes=24 * MB,
            sin_cos=True,
            mixed_state_shapes=True,
        ),
        Chip(
            name="a17",
            title="A17 Pro",
            tops_fp16=35.0 / 2,
            max_spatial=65536,
            max_channels=65536,
            sram_bytes=24 * MB,
            sin_cos=True,
            mixed_state_shapes=True,
            tops_int8=35.0,
        ),
        Chip(
            name="a18",
            title="A18",
            tops_fp16=35.0 / 2,
            max_spatial=65536,
            max_channels=65536,
            sram_bytes=24 * MB,
            sin_cos=True,
            mixed_state_shapes=True,
            tops_int8=35.0,
        ),
        Chip(
            name="m1",
            title="M1",
            tops_fp16=11.0,
            max_spatial=16384,
            max_channels=65536,
            sram_bytes=16 * MB,
            sin_cos=False,
            mixed_state_shapes=False,
        ),
        Chip(
            name="m2",
            title="M2",
            tops_fp16=15.8,
            max_spatial=16384,
            max_channels=65536,
            sram_bytes=24 * MB,
            sin_cos=True,
            mixed_state_shapes=True,
        ),
        Chip(
            name="m3",
            title="M3",
            tops_fp16=15.8,
            max_spatial=65536,
            max_channels=65536,
            sram_bytes=24 * MB,
            sin_cos=True,
            mixed_state_shapes=True,
        ),
        Chip(
            name="m4",
            title="M4",
            tops_fp16=18.6,
            max_spatial=65536,
            max_channels=65536,
            sram_bytes=32 * MB,
            sin_cos=True,
            mixed_state_shapes=True,
            tops_int8=35.1,
        ),
    )
}

DEFAULT_CHIP = "m4"
"""The chip an estimate is for when none is named."""


def get_chip(name: str | Chip) -> Chip:
    """The chip of that name (case-insensitive); an unknown name is an error
    listing the known ones."""
    if isinstance(name, Chip):
        return name
    found = CHIPS.get(str(name).lower())
    if found is None:
        raise XdslAneError(f"unknown chip '{name}' (known: {', '.join(CHIPS)})")
    return found
