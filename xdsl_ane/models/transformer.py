"""Config-driven builders of Llama/Qwen-style transformer blocks in rlx.

Weights are `rlx.param`s named as in Hugging Face checkpoints
(`layers.{i}.self_attn.q_proj.weight`, stored [out, in] and applied as
x·Wᵀ), so a real checkpoint's tensors drop in by name. The RoPE tables are
params too (`rope.cos`, `rope.sin`, [S, D/2]); `make_weights` computes them
from the config and draws the learned weights from a seeded generator.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import FunctionType, f32
from xdsl.ir import Attribute, Block, Region, SSAValue

from xdsl_ane.dialects import ane, mil, rlx
from xdsl_ane.dialects.typing import shape_of, tensor
from xdsl_ane.models.configs import (  # noqa: F401 (the builders' names)
    CONFIGS,
    QWEN3_0_6B,
    TransformerConfig,
)


class BlockBuilder:
    """Emits the rlx ops of one decoder layer into the current block."""

    def __init__(self, config: TransformerConfig, layer: int, dtype: Attribute = f32):
        self.config = config
        self.prefix = f"layers.{layer}."
        self.dtype = dtype

    def param(
        self, name: str, shape: tuple[int, ...], prefixed: bool = True
    ) -> SSAValue:
        full = self.prefix + name if prefixed else name
        return rlx.ParamOp(full, tensor(shape, self.dtype)).result

    def linear(self, x: SSAValue, name: str, out_features: int) -> SSAValue:
        """x·Wᵀ with W [out, in] as stored by Hugging Face."""
        in_features = shape_of(x)[-1]
        w = self.param(name + ".weight", (out_features, in_features))
        return rlx.MatmulOp(x, w, transpose_rhs=True).result

    def rms_norm(self, x: SSAValue, name: str) -> SSAValue:
        gamma = self.param(name + ".weight", (shape_of(x)[-1],))
        return rlx.RmsNormOp(x, gamma, self.config.rms_eps).result

    def split_heads(self, x: SSAValue, heads: int) -> SSAValue:
        """[1, S, heads·D] -> [1, heads, S, D]."""
        c = self.config
        x = rlx.ReshapeOp(x, (1, c.seq_len, heads, c.head_dim)).result
        return rlx.TransposeOp(x, (0, 2, 1, 3)).result

    def attention(self, x: SSAValue) -> SSAValue:
        """x + o_proj(attention(rope(q), rope(k), v)) with pre-RMSNorm."""
        c = self.config
        h = self.rms_norm(x, "input_layernorm")
        q = self.split_heads(self.linear(h, "self_attn.q_proj", c.q_dim), c.num_heads)
        k = self.split_heads(
            self.linear(h, "self_attn.k_proj", c.kv_dim), c.num_kv_heads
        )
        v = self.split_heads(
            self.linear(h, "self_attn.v_proj", c.kv_dim), c.num_kv_heads
        )
        if c.qk_norm:
            q = self.rms_norm(q, "self_attn.q_norm")
            k = self.rms_norm(k, "self_attn.k_norm")
        half = (c.seq_len, c.head_dim // 2)
        cos = self.param("rope.cos", half, prefixed=False)
        sin = self.param("rope.sin", half, prefixed=False)
        q = rlx.RopeOp(q, cos, sin, c.rope_style).result
        k = rlx.RopeOp(k, cos, sin, c.rope_style).result
        a = rlx.AttentionOp(q, k, v, mask="causal").result
        a = rlx.TransposeOp(a, (0, 2, 1, 3)).result
        a = rlx.ReshapeOp(a, (1, c.seq_len, c.q_dim)).result
        o = self.linear(a, "self_attn.o_proj", c.hidden_size)
        return rlx.AddOp(x, o).result

    def ffn(self, x: SSAValue) -> SSAValue:
        """x + down(silu(gate(h)) · up(h)) with pre-RMSNorm (SwiGLU)."""
        c = self.config
        h = self.rms_norm(x, "post_attention_layernorm")
        gate = rlx.SiluOp(self.linear(h, "mlp.gate_proj", c.ffn_size)).result
        up = self.linear(h, "mlp.up_proj", c.ffn_size)
        down = self.linear(rlx.MulOp(gate, up).result, "mlp.down_proj", c.hidden_size)
        return rlx.AddOp(x, down).result


def build_function(
    name: str,
    input_types: list[Attribute],
    body: Callable[..., list[SSAValue]],
    arg_names: list[str] | None = None,
) -> func.FuncOp:
    """A func.func whose body `body(*args)` emits ops and returns the results."""
    block = Block(arg_types=input_types)
    for arg, hint in zip(block.args, arg_names or []):
        arg.name_hint = hint
    with ImplicitBuilder(block) as args:
        results = body(*args)
        func.ReturnOp(*results)
    function_type = FunctionType.from_lists(input_types, [r.type for r in results])
    return func.FuncOp(name, function_type, Region(block))


def build_attention_block(
    config: TransformerConfig, layer: int = 0
) -> builtin.ModuleOp:
    """`attention_block(x: [1, S, hidden]) -> [1, S, hidden]`: RMSNorm, QKV
    projections, (QK-norm), RoPE, causal grouped-query attention, output
    projection and residual."""
    b = BlockBuilder(config, layer)
    x_type = tensor((1, config.seq_len, config.hidden_size), f32)
    f = build_function("attention_block", [x_type], lambda x: [b.attention(x)], ["x"])
    return builtin.ModuleOp([f])


def build_decoder_layer(config: TransformerConfig, layer: int = 0) -> builtin.ModuleOp:
    """`decoder_layer(x: [1, S, hidden]) -> [1, S, hidden]`: the attention
    block followed by RMSNorm, the SwiGLU FFN and the second residual."""
    b = BlockBuilder(config, layer)
    x_type = tensor((1, config.seq_len, config.hidden_size), f32)
    f = build_function(
        "decoder_layer", [x_type], lambda x: [b.ffn(b.attention(x))], ["x"]
    )
    return builtin.ModuleOp([f])


def build_decoder_stack(
    config: TransformerConfig, layers: int | None = None
) -> builtin.ModuleOp:
    """`decoder(x: [1, S, hidden]) -> [1, S, hidden]`: `layers` decoder layers
    (default: the config's) and the final RMSNorm (`norm.weight`)."""
    count = config.num_layers if layers is None else layers
    x_type = tensor((1, config.seq_len, config.hidden_size), f32)

    def body(x: SSAValue) -> list[SSAValue]:
        for layer in range(count):
            b = BlockBuilder(config, layer)
            x = b.ffn(b.attention(x))
        final = BlockBuilder(config, 0)
        final.prefix = ""
        return [final.rms_norm(x, "norm")]

    function = build_function("decoder", [x_type], body, ["x"])
    ane.record_result_names(function, ["last_hidden_state"])  # as transformers'
    return builtin.ModuleOp([function])


def rope_tables(config: TransformerConfig) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [S, D/2] of θ_{s,i} = s · base^(−2i/D)."""
    d = config.head_dim
    inv_freq = config.rope_base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.arange(config.seq_len, dtype=np.float64)[:, None] * inv_freq[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def rope_weights(config: TransformerConfig) -> dict[str, np.ndarray]:
    """The RoPE tables of the config by weight name: `rope.cos`, `rope.sin`
    [S, D/2]."""
    cos, sin = rope_tables(config)
    return {"rope.cos": cos, "rope.sin": sin}


def make_weights(
    module: builtin.ModuleOp, config: TransformerConfig, seed: int = 0
) -> dict[str, np.ndarray]:
    """Weights for every `rlx.param` (or `mil.const weight`, once lowered) of
    `module`: RoPE tables from the config (`rope_weights`),
    norm scales near 1 and projections from N(0, 0.02²), seeded."""
    rng = np.random.default_rng(seed)
    tables = rope_weights(config)
    weights: dict[str, np.ndarray] = {}
    for op in module.walk():
        if isinstance(op, rlx.ParamOp):
            name, shape = op.param_name.data, shape_of(op.result)
        elif isinstance(op, mil.ConstOp) and op.weight is not None:
            name, shape = op.weight.data, op.file_shape()
        else:
            continue
        if name in weights:
            continue
        if name in tables:
            weights[name] = tables[name]
        elif "norm" in name:
            weights[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            weights[name] = (0.02 * rng.standard_normal(shape)).astype(np.float32)
    return weights
