"""The shapes of the transformer decoders `models.transformer` builds, by
name (`xdsl-ane compile-model NAME`); a module of its own, so that the
command line lists the names without loading the builders."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class TransformerConfig:
    """The shape of a Llama/Qwen-style decoder."""

    name: str
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    ffn_size: int
    num_layers: int
    vocab_size: int
    seq_len: int
    rms_eps: float = 1e-6
    rope_base: float = 1_000_000.0
    rope_style: str = "half"
    qk_norm: bool = True
    """Qwen3 normalizes each query and key head with RMSNorm before RoPE."""

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    def with_(self, **changes: object) -> TransformerConfig:
        return replace(self, **changes)  # type: ignore[arg-type]


QWEN3_0_6B = TransformerConfig(
    name="qwen3-0.6b",
    hidden_size=1024,
    num_heads=16,
    num_kv_heads=8,
    head_dim=128,
    ffn_size=3072,
    num_layers=28,
    vocab_size=151936,
    seq_len=256,
)

CONFIGS = {QWEN3_0_6B.name: QWEN3_0_6B}
