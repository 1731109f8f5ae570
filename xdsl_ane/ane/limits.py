"""The ANE's limits (ANE_FACTS.md), and the values the compiler uses to stay
within them: one place for every pass, model builder and frontend. The
dimension limits are the chip table's (`ane/chips.py`): the smallest chip's
and the largest chip's."""

from __future__ import annotations

from xdsl_ane.ane.chips import CHIPS

MAX_DIMENSION = min(min(c.max_spatial, c.max_channels) for c in CHIPS.values())
"""Largest tensor dimension on every chip's ANE (16384: M1/M2-class ANEs)."""

MAX_DIMENSION_NEWER = max(max(c.max_spatial, c.max_channels) for c in CHIPS.values())
"""Largest tensor dimension on any chip's ANE (65536: newer ANEs)."""

PREFERRED_RANK = 4
"""The rank the ANE prefers ([1, C, 1, S])."""

MAX_RANK = 5
"""Core ML supports rank ≤ 5."""

MAX_GATHER_TABLE = 32768
"""Largest embedding table (size of the lookup axis) the ANE gathers from."""

MAX_OPS = 18000
"""About the most ops (consts excluded) one program runs on the ANE."""

WEIGHTS_WARNING_BYTES = 1 << 30
"""About the most weights per program on iOS."""

WEIGHTS_ERROR_BYTES = 2 << 30
"""About the most weights per program on macOS."""

MAX_KERNEL_WIDTH = 13
"""Conv kernel width ≤ 13 (hollance/neural-engine, ane-guide)."""

MAX_POOL_KERNEL = 13
"""Pooling kernels up to 13 run on the ANE."""

MAX_POOL_STRIDE = 2
"""Pooling strides up to 2 run on the ANE."""

MAX_UPSAMPLE = 2
"""Upsampling by up to 2× runs on the ANE."""

MAX_ARGMAX = 2048
"""argmax over ≤ 2048 elements."""

STATE_ALIGNMENT = 32
"""ANE compilation fails when a state dimension is not a multiple of 32
(coremltools #2631); read as the last axis, the one that must be 64-byte
aligned (32 fp16 values)."""

MASKED = -1.0e4
"""The additive score of a masked key: exp(−1e4 − max) is 0 in fp16 and
fp32, and −1e4 plus any realistic score stays finite in fp16."""
