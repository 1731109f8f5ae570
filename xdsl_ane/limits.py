"""The ANE's limits (ANE_FACTS.md), and the values the compiler uses to stay
within them: one place for every pass, model builder and frontend."""

from __future__ import annotations

MAX_DIMENSION = 16384
"""Largest tensor dimension on M1/M2-class ANEs."""

MAX_DIMENSION_NEWER = 65536
"""Largest tensor dimension on newer ANEs."""

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

MASKED = -1.0e4
"""The additive score of a masked key: exp(−1e4 − max) is 0 in fp16 and
fp32, and −1e4 plus any realistic score stays finite in fp16."""
