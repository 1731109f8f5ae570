"""The PyTorch twin of `xdsl_ane.models.transformer.build_decoder_stack`.

The same math, op for op, as the rlx builder: RMSNorm with weight, q/k/v
projections stored [out, in] and applied as x·Wᵀ, per-head QK-norm, RoPE
"half" from the same cos/sin tables, causal grouped-query attention (query
head h reads key/value head h // (H/Hkv), Hugging Face's repeat_kv), o_proj,
residual, RMSNorm, SwiGLU FFN, residual, and the final norm. Its state dict
has exactly the names `make_weights` produces, so the bench loads the same
random weights into both (shared with numpy, not copied).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch import nn

from xdsl_ane.ane.limits import MASKED
from xdsl_ane.models.configs import LlmConfig


class RMSNorm(nn.Module):
    """x · rsqrt(mean(x², last axis) + eps) · weight."""

    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * scale * self.weight


def linear(in_features: int, out_features: int) -> nn.Linear:
    return nn.Linear(in_features, out_features, bias=False)


class Rope(nn.Module):
    """The cos and sin tables [S, D/2] (`rope.cos`, `rope.sin`); "half"
    pairs (i, i + D/2): x·[cos, cos] + rotate_half(x)·[sin, sin]."""

    def __init__(self, config: LlmConfig):
        super().__init__()
        half = (config.seq_len, config.head_dim // 2)
        self.register_buffer("cos", torch.zeros(half))
        self.register_buffer("sin", torch.zeros(half))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cos = torch.cat([self.cos, self.cos], dim=-1)
        sin = torch.cat([self.sin, self.sin], dim=-1)
        lo, hi = x.chunk(2, dim=-1)
        return x * cos + torch.cat([-hi, lo], dim=-1) * sin


class Attention(nn.Module):
    def __init__(self, config: LlmConfig):
        super().__init__()
        c = config
        self.config = c
        self.q_proj = linear(c.hidden_size, c.q_dim)
        self.k_proj = linear(c.hidden_size, c.kv_dim)
        self.v_proj = linear(c.hidden_size, c.kv_dim)
        self.o_proj = linear(c.q_dim, c.hidden_size)
        self.q_norm = RMSNorm(c.head_dim, c.rms_eps)
        self.k_norm = RMSNorm(c.head_dim, c.rms_eps)
        mask = torch.triu(torch.full((c.seq_len, c.seq_len), MASKED), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def split_heads(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        """[1, S, heads·D] -> [1, heads, S, D]."""
        c = self.config
        return x.view(1, c.seq_len, heads, c.head_dim).transpose(1, 2)

    def forward(self, h: torch.Tensor, rope: Rope) -> torch.Tensor:
        c = self.config
        q = self.q_norm(self.split_heads(self.q_proj(h), c.num_heads))
        k = self.k_norm(self.split_heads(self.k_proj(h), c.num_kv_heads))
        v = self.split_heads(self.v_proj(h), c.num_kv_heads)
        q, k = rope(q), rope(k)
        repeats = c.num_heads // c.num_kv_heads
        k = k.repeat_interleave(repeats, dim=1)
        v = v.repeat_interleave(repeats, dim=1)
        scores = q @ k.transpose(-1, -2) * c.head_dim**-0.5 + self.mask
        a = torch.softmax(scores, dim=-1) @ v
        a = a.transpose(1, 2).reshape(1, c.seq_len, c.q_dim)
        return self.o_proj(a)


class Mlp(nn.Module):
    def __init__(self, config: LlmConfig):
        super().__init__()
        c = config
        self.gate_proj = linear(c.hidden_size, c.ffn_size)
        self.up_proj = linear(c.hidden_size, c.ffn_size)
        self.down_proj = linear(c.ffn_size, c.hidden_size)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        gate = nn.functional.silu(self.gate_proj(h))
        return self.down_proj(gate * self.up_proj(h))


class DecoderLayer(nn.Module):
    def __init__(self, config: LlmConfig):
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_eps)
        self.self_attn = Attention(config)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_eps)
        self.mlp = Mlp(config)

    def forward(self, x: torch.Tensor, rope: Rope) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), rope)
        return x + self.mlp(self.post_attention_layernorm(x))


class DecoderStack(nn.Module):
    """`decoder(x: [1, S, hidden]) -> [1, S, hidden]`."""

    def __init__(self, config: LlmConfig, layers: int):
        super().__init__()
        assert config.family.rope_style == "half" and config.family.qk_norm
        self.rope = Rope(config)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, self.rope)
        return self.norm(x)


def decoder_stack(
    config: LlmConfig, layers: int, weights: Mapping[str, np.ndarray]
) -> DecoderStack:
    """The stack in eval mode with `weights` (make_weights' names) loaded as
    views of the numpy arrays; fails unless the names match exactly."""
    with torch.device("meta"):
        model = DecoderStack(config, layers)
    state = {
        name: torch.from_numpy(np.ascontiguousarray(w)) for name, w in weights.items()
    }
    model.load_state_dict(state, strict=True, assign=True)
    model.layers.apply(lambda m: _materialize_mask(m, config))
    return model.eval().requires_grad_(False)


def _materialize_mask(module: nn.Module, config: LlmConfig) -> None:
    """The non-persistent causal mask, built on the meta device above."""
    if isinstance(module, Attention):
        s = config.seq_len
        module.mask = torch.triu(torch.full((s, s), MASKED), diagonal=1)
