"""The one description of a dense decoder (`LlmConfig`) and the named
shapes `xdsl-ane compile-model NAME` builds; a module of its own, so that
the command line lists the names without loading the builders."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class LlmConfig:
    """One dense decoder: what `llm_config` reads from a checkpoint's
    config.json (its family's row of `models.hf_config.FAMILIES`) or a named
    shape of CONFIGS. The one builder, `models.llm.LlmBuilder`, builds
    every program of it from this: compile-llm's stateful prefill and
    decode, compile-model's stateless stack and the training kernels'
    weights and RoPE tables."""

    family: str
    """The family's short name (`qwen3`), as in FAMILIES."""
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    ffn_size: int
    vocab_size: int
    rms_eps: float
    rope_theta: float
    rope_scaling: dict[str, Any] | None
    max_positions: int
    tied: bool
    qk_norm: bool
    biases: frozenset[str] = frozenset()
    """Projections with a bias, by their name in a layer (`self_attn.q_proj`,
    `mlp.down_proj`)."""
    activation: str = "silu"
    """The MLP's gate activation (an ACTIVATIONS name)."""
    sliding_window: int | None = None
    """The window of the layers with sliding attention (None: none slide)."""
    unit_offset_norms: bool = False
    """RMSNorm scales by (1 + weight) (Family.unit_offset_norms)."""
    scaled_embedding: bool = False
    """The embedding rows are multiplied by √hidden_size."""
    fused: bool = False
    """One qkv and one gate_up projection (Family.fused)."""
    sandwich_norms: bool = False
    """Family.sandwich_norms."""
    attention_scale: float | None = None
    """Attention's scale where it is not head_dim^−½."""
    final_softcap: float | None = None
    """Logits become cap · tanh(logits / cap) (final_logit_softcapping)."""
    attention_softcap: float | None = None
    """Attention scores become cap · tanh(scores / cap) before the mask
    (attn_logit_softcapping, Gemma 2)."""
    layer_norm: bool = False
    """LayerNorm with bias, not RMSNorm (Family.layer_norm)."""
    qkv_per_head: bool = False
    """Family.qkv_per_head."""
    gated_mlp: bool = True
    """Family.gated_mlp."""
    parallel_residual: bool = False
    """Attention and the MLP read the same input (Family.parallel_residual)."""
    rotary_dim: int | None = None
    """The leading dims of each head RoPE rotates (None: all of it)."""
    renames: tuple[tuple[str, str], ...] = ()
    """Family.renames."""
    rope: bool = True
    """RoPE; false: learned absolute positions (Family.rope)."""
    conv1d: bool = False
    """Projection weights [in, out] (Family.conv1d)."""
    embedding_multiplier: float | None = None
    """The embedding times this (Granite)."""
    residual_multiplier: float | None = None
    """Each branch times this before its residual add (Granite)."""
    logits_divisor: float | None = None
    """Logits divided by this (Granite's logits_scaling)."""
    nope_layers: frozenset[int] = frozenset()
    """Layers without RoPE (SmolLM3's no_rope_layers)."""
    post_norms: bool = False
    """Family.post_norms."""
    norm_bias: bool = True
    """Family.norm_bias."""
    shared_norm: bool = False
    """Family.shared_norm."""
    rope_style: str = "half"
    """Family.rope_style."""
    projection_qk_norm: bool = False
    """Family.projection_qk_norm."""
    stream_scale: float | None = None
    """The residual stream is carried times this (α = 2^−k, fp16 safety):
    the embedding times α in the program; each branch's end times α — the
    weights and biases of o_proj and down_proj, scaled as they are read
    (`scaled_weights`), or the scale of its post-norm; the eps of the norms
    that read the stream times α². Every output is unchanged in exact
    arithmetic (`fp16_rescaled`)."""
    norm_input_scales: tuple[float, ...] = ()
    """Per stream RMSNorm (2L: layer L's first, 2L + 1 its second, 2·layers
    the final one), s = 2^k dividing its input, with eps / s²: the same
    output, and x² stays in fp16's range (the lowering squares x in the
    program's precision). Empty: none."""
    scale_by_layer: bool = False
    """Attention's scale is divided by the layer's index + 1
    (scale_attn_by_inverse_layer_idx)."""
    local_rope: tuple[float, dict[str, Any] | None] | None = None
    """RoPE's (theta, scaling) of the sliding layers where it differs
    (rope_parameters per layer type, Gemma 3); None: one RoPE for all."""
    sliding_layers: frozenset[int] = frozenset()
    """The layers whose attention slides (key j visible to query i iff
    i − window < j ≤ i, transformers' sliding_window_overlay)."""

    seq_len: int = 256
    """The sequence of the stateless programs (`models.transformer`'s
    block, layer and stack, and the training kernels); compile-llm's
    functions take theirs from LlmShape."""

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def rotated(self) -> int:
        """The dims of each head RoPE rotates."""
        return self.head_dim if self.rotary_dim is None else self.rotary_dim

    def weight_name(self, name: str) -> str:
        """The checkpoint's name of the builder's (Llama-style) `name`."""
        for ours, theirs in self.renames:
            name = name.replace(ours, theirs)
        return name

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    def with_(self, **changes: Any) -> LlmConfig:
        return replace(self, **changes)


QWEN3_0_6B = LlmConfig(
    family="qwen3",
    hidden_size=1024,
    num_layers=28,
    num_heads=16,
    num_kv_heads=8,
    head_dim=128,
    ffn_size=3072,
    vocab_size=151936,
    rms_eps=1e-6,
    rope_theta=1_000_000.0,
    rope_scaling=None,
    max_positions=40960,
    tied=True,
    qk_norm=True,
)
"""Qwen3-0.6B's shape (its config.json), at sequence 256."""

CONFIGS = {"qwen3-0.6b": QWEN3_0_6B}
