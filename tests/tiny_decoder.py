"""The tiny decoder shape that the layer tests build: Qwen3-0.6B's
architecture (grouped-query attention, QK-norm, gated MLP) at 64 wide, 4
query and 2 key/value heads of 16, an MLP of 96 and 8 positions, small
enough to interpret in milliseconds and large enough that every layout
and grouped-query path is taken."""

from __future__ import annotations

from xdsl_ane.models.transformer import QWEN3_0_6B

TINY_DECODER = QWEN3_0_6B.with_(
    hidden_size=64, num_heads=4, num_kv_heads=2, head_dim=16, ffn_size=96, seq_len=8
)
