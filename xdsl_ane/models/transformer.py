"""The stateless programs of a decoder, built by the one builder
(`models.llm.LlmBuilder`) without a cache: one attention block, one layer,
the stack of layers and its final norm, over a sequence of
`config.seq_len` tokens at positions 0..S−1 with rlx.attention's causal
mask (`xdsl-ane compile-model`, the bench, the pipeline's tests).

Weights are `rlx.param`s named as in transformers' base model
(`layers.{i}.self_attn.q_proj.weight`, stored [out, in] and applied as
x·Wᵀ; `norm.weight`), so a real checkpoint's tensors drop in by name. The
RoPE tables are params too (`rope.cos`, `rope.sin`, [S, D/2], from
`models.rope.rope_tables`); `make_weights` computes them and draws the
learned weights from a seeded generator.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, SSAValue

from xdsl_ane.dialects import ane, mil, rlx
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import shape_of, tensor
from xdsl_ane.models.configs import (  # noqa: F401 (the builders' names)
    CONFIGS,
    QWEN3_0_6B,
    LlmConfig,
)
from xdsl_ane.models.llm import ROPE_TABLES, LlmBuilder, LlmShape
from xdsl_ane.models.rope import rope_tables


def stateless_builder(
    config: LlmConfig,
    layers: tuple[int, int] | None = None,
    dtype: Attribute = f32,
) -> LlmBuilder:
    """The builder of config's programs over seq_len tokens (of `layers`,
    [first, end), default all), no cache, weights named as in the base
    model, of `dtype`."""
    shape = LlmShape(config.seq_len, config.seq_len, layers=layers)
    return LlmBuilder(config, shape, base="", dtype=dtype)


def decoder_function(
    name: str, b: LlmBuilder, body: Callable[[SSAValue], SSAValue]
) -> builtin.ModuleOp:
    """`name(x: [1, S, hidden]) -> [1, S, hidden]` computing body(x)."""
    x_type = tensor((1, b.c.seq_len, b.c.hidden_size), b.dtype)
    f = build_function(name, [x_type], lambda x: [body(x)], ["x"])
    return builtin.ModuleOp([f])


def build_attention_block(config: LlmConfig, layer: int = 0) -> builtin.ModuleOp:
    """`attention_block(x)`: the input norm, QKV projections, (QK-norm),
    RoPE, causal grouped-query attention, output projection and residual
    of a pre-norm layer."""

    b = stateless_builder(config)

    def body(x: SSAValue) -> SSAValue:
        tables, masks = b.positions(None, config.seq_len)
        cos, sin = tables.get("full", (None, None))
        h = b.rms_norm(x, f"layers.{layer}.input_layernorm", 2 * layer)
        a = b.attention(h, layer, cos, sin, masks["full"], None, None)
        return b.residual(x, a)

    return decoder_function("attention_block", b, body)


def build_decoder_layer(
    config: LlmConfig, layer: int = 0, dtype: Attribute = f32
) -> builtin.ModuleOp:
    """`decoder_layer(x)`: layer `layer`, attention and MLP with their norms
    and residual adds, in `dtype`."""
    b = stateless_builder(config, (layer, layer + 1), dtype)
    return decoder_function("decoder_layer", b, b.stack)


def build_decoder_stack(
    config: LlmConfig, layers: int | None = None
) -> builtin.ModuleOp:
    """`decoder(x) -> last_hidden_state`: `layers` decoder layers (default:
    the config's) and the final norm (`norm.weight`)."""
    count = config.num_layers if layers is None else layers
    b = stateless_builder(config, (0, count))
    module = decoder_function("decoder", b, lambda x: b.final_norm(b.stack(x)))
    ane.record_result_names(module.body.block.first_op, ["last_hidden_state"])
    return module


def rope_weights(config: LlmConfig) -> dict[str, np.ndarray]:
    """The RoPE tables of the config's stateless programs by weight name
    (`rope.cos`, `rope.sin` [S, D/2]; `rope.local.*` for the sliding layers
    of a family with their own RoPE)."""
    weights = {}
    for kind, prefix in ROPE_TABLES.items():
        cos, sin = rope_tables(config, config.seq_len, local=kind == "sliding")
        weights |= {f"{prefix}.cos": cos, f"{prefix}.sin": sin}
    return weights


def make_weights(
    module: builtin.ModuleOp, config: LlmConfig, seed: int = 0
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
