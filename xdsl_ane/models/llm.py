"""Decoder-only LLMs from Hugging Face checkpoints as stateful rlx programs:
`prefill` (N tokens at a start position) and `decode` (one token) over a
KV cache held as state.

Each function takes `input_ids` (i32 [S]) and `position` (i32 [1], the
position of the first token) and the states `key_cache` and `value_cache`
([L, Hkv, context, D]). Per layer it computes q, k, v for the S tokens,
writes k and v into the cache at rows position.. (`slice_update` with a
runtime begin), and attends over the whole cache under a mask built from
the position inside the model: key j is visible to query i iff
j ≤ position + i (later rows are stale or zero and get −∞). RoPE angles
are gathered from cos/sin tables [context, D/2] at the same positions.
The embedding and the LM head are split into row chunks of at most
`chunk` (the ANE's 16384 per dimension); the head gives one logits output
per chunk ([S, rows]), or, with `argmax`, the next token (i32 [S]) computed
in the model.

Families (config.json's `architectures`): Qwen3 (QK-norm), Qwen2 (q/k/v
bias), Llama (Llama 3 rope scaling), Mistral; tied or separate embeddings.
Weights keep their checkpoint names (`model.layers.0.self_attn.q_proj.weight`);
the RoPE tables and the chunk views are added by `llm_weights`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32, i32
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.typing import shape_of, tensor
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.checkpoint import Checkpoint
from xdsl_ane.limits import MASKED, MAX_DIMENSION
from xdsl_ane.models.transformer import build_function

FAMILIES = {
    "Qwen3ForCausalLM": "qwen3",
    "Qwen2ForCausalLM": "qwen2",
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
}


@dataclass(frozen=True)
class LlmConfig:
    family: str
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
    qkv_bias: bool
    qk_norm: bool
    sliding_window: int | None = None

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim


def config_field(config: dict[str, Any], name: str, where: str, default: Any = None):
    value = config.get(name, default)
    if value is None:
        raise XdslAneError(f"{where}: field '{name}' is missing")
    return value


def llm_config(checkpoint: Checkpoint) -> LlmConfig:
    """The model's shape from config.json; an unsupported architecture is
    an error listing the supported ones."""
    c = checkpoint.config
    where = str(checkpoint.directory / "config.json")
    architectures = c.get("architectures") or []
    family = next((FAMILIES[a] for a in architectures if a in FAMILIES), None)
    if family is None:
        raise XdslAneError(
            f"{where}: field 'architectures' is {architectures}; supported: "
            + ", ".join(FAMILIES)
        )
    hidden = int(config_field(c, "hidden_size", where))
    heads = int(config_field(c, "num_attention_heads", where))
    rope = c.get("rope_parameters") or c.get("rope_scaling") or {}
    theta = rope.get("rope_theta", c.get("rope_theta", 10000.0))
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type not in ("default", "llama3"):
        raise XdslAneError(
            f"{where}: rope type '{rope_type}' is not supported (default, llama3)"
        )
    return LlmConfig(
        family=family,
        hidden_size=hidden,
        num_layers=int(config_field(c, "num_hidden_layers", where)),
        num_heads=heads,
        num_kv_heads=int(c.get("num_key_value_heads") or heads),
        head_dim=int(c.get("head_dim") or hidden // heads),
        ffn_size=int(config_field(c, "intermediate_size", where)),
        vocab_size=int(config_field(c, "vocab_size", where)),
        rms_eps=float(c.get("rms_norm_eps", 1e-6)),
        rope_theta=float(theta),
        rope_scaling=dict(rope) if rope_type == "llama3" else None,
        max_positions=int(c.get("max_position_embeddings") or 2**31 - 1),
        tied=bool(c.get("tie_word_embeddings", False)),
        qkv_bias=family == "qwen2" or bool(c.get("attention_bias", False)),
        qk_norm=family == "qwen3",
        sliding_window=c.get("sliding_window")
        if c.get("use_sliding_window", True)
        else None,
    )


def check_context(config: LlmConfig, context: int, prefill: int, where: str) -> None:
    if context > config.max_positions:
        raise XdslAneError(
            f"{where}: context {context} is beyond the model's "
            f"max_position_embeddings {config.max_positions}"
        )
    if config.sliding_window is not None and context > config.sliding_window:
        raise XdslAneError(
            f"{where}: context {context} is beyond the model's sliding_window "
            f"{config.sliding_window} (sliding-window attention is not supported)"
        )
    if context > MAX_DIMENSION:
        raise XdslAneError(
            f"{where}: context {context} is beyond the ANE's {MAX_DIMENSION} per dimension"
        )
    if not 1 <= prefill <= context:
        raise XdslAneError(f"{where}: prefill {prefill} must lie in [1, {context}]")


def inverse_frequencies(config: LlmConfig) -> np.ndarray:
    """base^(−2i/D), rescaled by Llama 3's rule (low frequencies divided by
    `factor`, high ones kept, a smooth blend between)."""
    d = config.head_dim
    inv = config.rope_theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    s = config.rope_scaling
    if s is None:
        return inv
    factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old = s["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    scaled = np.where(wavelen > old / low, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= old / high) & (wavelen <= old / low)
    return np.where(medium, blended, scaled)


def rope_tables(config: LlmConfig, context: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [context, D/2] of θ = position · inv_freq, computed in
    float32 as Hugging Face does."""
    inv = inverse_frequencies(config).astype(np.float32)
    angles = np.arange(context, dtype=np.float32)[:, None] * inv[None, :]
    return np.cos(angles), np.sin(angles)


def chunks(rows: int, limit: int) -> list[tuple[int, int]]:
    """[start, end) row ranges of at most `limit` rows, as equal as possible."""
    count = math.ceil(rows / limit)
    size = math.ceil(rows / count)
    return [(s, min(s + size, rows)) for s in range(0, rows, size)]


EMBED = "model.embed_tokens.weight"


def head_name(config: LlmConfig) -> str:
    return EMBED if config.tied else "lm_head.weight"


def chunk_name(name: str, start: int, end: int) -> str:
    return f"{name}[{start}:{end}]"


@dataclass(frozen=True)
class LlmShape:
    """What the compiled functions are built for."""

    context: int
    prefill: int
    chunk: int = MAX_DIMENSION
    argmax: bool = False
    layers: tuple[int, int] | None = None
    """[first, end) layers of a part of the stack (None: all)."""
    part: str = "all"
    """What the functions compute (PARTS): the whole model, or one package
    of a split model: the embedding, a range of layers, or the head."""


PARTS = ("all", "embed", "layers", "head")


def split_parts(
    config: LlmConfig, layers_per_package: int
) -> list[tuple[str, str, tuple[int, int] | None]]:
    """The packages of a split model in calling order: (name, part, layer
    range) for `embed`, `layers_F-L` for each run of at most
    `layers_per_package` layers (F..L inclusive) and `head`."""
    parts: list[tuple[str, str, tuple[int, int] | None]] = [("embed", "embed", None)]
    for first in range(0, config.num_layers, layers_per_package):
        end = min(first + layers_per_package, config.num_layers)
        parts.append((f"layers_{first}-{end - 1}", "layers", (first, end)))
    parts.append(("head", "head", None))
    return parts


def const(value: np.ndarray) -> SSAValue:
    dtype = f32 if value.dtype.kind == "f" else i32
    return rlx.ConstantOp(dense_from_numpy(value, dtype)).result


class LlmBuilder:
    def __init__(self, config: LlmConfig, shape: LlmShape):
        self.c = config
        self.shape = shape

    def param(self, name: str, shape: tuple[int, ...]) -> SSAValue:
        return rlx.ParamOp(name, tensor(shape, f32)).result

    def linear(self, x: SSAValue, name: str, out: int, bias: bool = False) -> SSAValue:
        w = self.param(name + ".weight", (out, shape_of(x)[-1]))
        y = rlx.MatmulOp(x, w, transpose_rhs=True).result
        if bias:
            y = rlx.AddOp(y, self.param(name + ".bias", (out,))).result
        return y

    def rms_norm(self, x: SSAValue, name: str) -> SSAValue:
        gamma = self.param(name + ".weight", (shape_of(x)[-1],))
        return rlx.RmsNormOp(x, gamma, self.c.rms_eps).result

    def embed(self, ids: SSAValue) -> SSAValue:
        """Rows of the table by id, gathered from chunks of ≤ chunk rows:
        Σ_chunks where(start ≤ id < end, table_chunk[clamp(id − start)], 0)."""
        c, s = self.c, shape_of(ids)[0]
        parts = chunks(c.vocab_size, self.shape.chunk)
        if len(parts) == 1:
            return rlx.GatherOp(
                self.param(EMBED, (c.vocab_size, c.hidden_size)), ids
            ).result
        total = None
        zero = const(np.zeros((1, 1), np.float32))
        for start, end in parts:
            table = self.param(
                chunk_name(EMBED, start, end), (end - start, c.hidden_size)
            )
            local = rlx.SubOp(ids, const(np.array([start], np.int32))).result
            clamped = rlx.MinOp(
                rlx.MaxOp(local, const(np.array([0], np.int32))).result,
                const(np.array([end - start - 1], np.int32)),
            ).result
            rows = rlx.GatherOp(table, clamped).result
            inside = rlx.CompareOp(
                rlx.ReshapeOp(local, (s, 1)).result,
                const(np.array([[end - start]], np.int32)),
                "lt",
            ).result
            above = rlx.CompareOp(
                rlx.ReshapeOp(local, (s, 1)).result,
                const(np.array([[0]], np.int32)),
                "ge",
            ).result
            rows = rlx.WhereOp(
                inside, rlx.WhereOp(above, rows, zero).result, zero
            ).result
            total = rows if total is None else rlx.AddOp(total, rows).result
        assert total is not None
        return total

    def split_heads(self, x: SSAValue, heads: int) -> SSAValue:
        s = shape_of(x)[1]
        x = rlx.ReshapeOp(x, (1, s, heads, self.c.head_dim)).result
        return rlx.TransposeOp(x, (0, 2, 1, 3)).result

    def cached(self, state, layer: int, new: SSAValue, position: SSAValue) -> SSAValue:
        """Writes k or v [1, Hkv, S, D] into the cache at [layer, 0, position,
        0] and returns this layer's whole cache [1, Hkv, context, D]."""
        first = self.shape.layers[0] if self.shape.layers else 0
        index = layer - first
        old = rlx.ReadStateOp(state).result
        zero = const(np.zeros(1, np.int32))
        begin = rlx.ConcatOp(
            [const(np.array([index], np.int32)), zero, position, zero], 0
        ).result
        updated = rlx.SliceUpdateOp(old, new, begin).result
        rlx.WriteStateOp(state, updated)
        return rlx.NarrowOp(updated, 0, index, 1).result

    def layer(self, x, layer: int, cos, sin, mask, position, key_cache, value_cache):
        c, p = self.c, f"model.layers.{layer}."
        h = self.rms_norm(x, p + "input_layernorm")
        q = self.split_heads(
            self.linear(h, p + "self_attn.q_proj", c.q_dim, c.qkv_bias), c.num_heads
        )
        k = self.split_heads(
            self.linear(h, p + "self_attn.k_proj", c.kv_dim, c.qkv_bias), c.num_kv_heads
        )
        v = self.split_heads(
            self.linear(h, p + "self_attn.v_proj", c.kv_dim, c.qkv_bias), c.num_kv_heads
        )
        if c.qk_norm:
            q = self.rms_norm(q, p + "self_attn.q_norm")
            k = self.rms_norm(k, p + "self_attn.k_norm")
        q = rlx.RopeOp(q, cos, sin, "half").result
        k = rlx.RopeOp(k, cos, sin, "half").result
        keys = self.cached(key_cache, layer, k, position)
        values = self.cached(value_cache, layer, v, position)
        a = rlx.AttentionOp(q, keys, values, mask, mask="bias").result
        s = shape_of(x)[1]
        a = rlx.ReshapeOp(
            rlx.TransposeOp(a, (0, 2, 1, 3)).result, (1, s, c.q_dim)
        ).result
        x = rlx.AddOp(x, self.linear(a, p + "self_attn.o_proj", c.hidden_size)).result
        h = self.rms_norm(x, p + "post_attention_layernorm")
        gate = rlx.SiluOp(self.linear(h, p + "mlp.gate_proj", c.ffn_size)).result
        up = self.linear(h, p + "mlp.up_proj", c.ffn_size)
        down = self.linear(
            rlx.MulOp(gate, up).result, p + "mlp.down_proj", c.hidden_size
        )
        return rlx.AddOp(x, down).result

    def head(self, h: SSAValue) -> list[SSAValue]:
        c = self.c
        name = head_name(c)
        parts = chunks(c.vocab_size, self.shape.chunk)
        logits = []
        for start, end in parts:
            w_name = name if len(parts) == 1 else chunk_name(name, start, end)
            w = self.param(w_name, (end - start, c.hidden_size))
            logits.append(rlx.MatmulOp(h, w, transpose_rhs=True).result)
        if not self.shape.argmax:
            return logits
        return [self.next_token(logits, parts)]

    def next_token(self, logits: list[SSAValue], parts) -> SSAValue:
        """argmax over the chunks: each chunk's best (value, index + start),
        then the chunk whose best is largest (the first on ties)."""
        s = shape_of(logits[0])[0]
        best = [rlx.ReduceMaxOp(x, [1], keep_dims=True).result for x in logits]
        index = [
            rlx.AddOp(
                rlx.ReshapeOp(rlx.ArgmaxOp(x, axis=1).result, (s, 1)).result,
                const(np.array([[start]], np.int32)),
            ).result
            for x, (start, _) in zip(logits, parts)
        ]
        if len(logits) == 1:
            return rlx.ReshapeOp(index[0], (s,)).result
        values = rlx.ConcatOp(best, 1).result
        indices = rlx.ConcatOp(index, 1).result
        winner = rlx.ReshapeOp(rlx.ArgmaxOp(values, axis=1).result, (s, 1)).result
        picked = rlx.CompareOp(
            winner, const(np.arange(len(logits), dtype=np.int32)[None, :]), "eq"
        ).result
        chosen = rlx.WhereOp(picked, indices, const(np.zeros((1, 1), np.int32))).result
        return rlx.ReduceSumOp(chosen, [1]).result

    def positions(self, position: SSAValue, tokens: int):
        """cos, sin [S, D/2] at positions position + i, and the additive
        causal mask [1, 1, S, context] (0 where key j ≤ position + i)."""
        context, half = self.shape.context, (self.shape.context, self.c.head_dim // 2)
        positions = rlx.AddOp(position, const(np.arange(tokens, dtype=np.int32))).result
        cos = rlx.GatherOp(self.param("rope.cos", half), positions).result
        sin = rlx.GatherOp(self.param("rope.sin", half), positions).result
        keys = const(np.arange(context, dtype=np.int32)[None, :])
        visible = rlx.CompareOp(
            keys, rlx.ReshapeOp(positions, (tokens, 1)).result, "le"
        ).result
        mask = rlx.WhereOp(
            visible,
            const(np.zeros((1, 1), np.float32)),
            const(np.full((1, 1), MASKED, np.float32)),
        ).result
        return cos, sin, rlx.ReshapeOp(mask, (1, 1, tokens, context)).result

    def stack(self, x, position, key_cache, value_cache) -> SSAValue:
        """The layers of shape.layers over hidden states x [1, S, hidden]."""
        first, end = self.shape.layers or (0, self.c.num_layers)
        cos, sin, mask = self.positions(position, shape_of(x)[1])
        for layer in range(first, end):
            x = self.layer(x, layer, cos, sin, mask, position, key_cache, value_cache)
        return x

    def final(self, x: SSAValue) -> list[SSAValue]:
        """The final norm and the head over x [1, S, hidden]."""
        tokens = shape_of(x)[1]
        h = self.rms_norm(x, "model.norm")
        return self.head(rlx.ReshapeOp(h, (tokens, self.c.hidden_size)).result)

    def function(self, name: str, tokens: int):
        """`name` over `tokens` tokens computing shape.part: "all" takes
        input_ids, position and the caches and gives the head's outputs;
        "embed" takes input_ids, "layers" hidden_states, position and its
        slice of the caches, "head" hidden_states; the parts between give
        hidden_states [1, S, hidden]."""
        c, shape = self.c, self.shape
        first, end = shape.layers or (0, c.num_layers)
        cache = rlx.StateType(
            tensor((end - first, c.num_kv_heads, shape.context, c.head_dim), f32)
        )
        ids, position = tensor((tokens,), i32), tensor((1,), i32)
        hidden = tensor((1, tokens, c.hidden_size), f32)

        def embedded(ids):
            return rlx.ReshapeOp(self.embed(ids), (1, tokens, c.hidden_size)).result

        caches = ["key_cache", "value_cache"]
        if shape.part == "embed":
            return build_function(name, [ids], lambda i: [embedded(i)], ["input_ids"])
        if shape.part == "layers":
            return build_function(
                name,
                [hidden, position, cache, cache],
                lambda x, p, k, v: [self.stack(x, p, k, v)],
                ["hidden_states", "position", *caches],
            )
        if shape.part == "head":
            return build_function(name, [hidden], self.final, ["hidden_states"])
        return build_function(
            name,
            [ids, position, cache, cache],
            lambda i, p, k, v: self.final(self.stack(embedded(i), p, k, v)),
            ["input_ids", "position", *caches],
        )


def build_llm(config: LlmConfig, shape: LlmShape) -> builtin.ModuleOp:
    """The module with `prefill` (shape.prefill tokens) and `decode` (one)."""
    b = LlmBuilder(config, shape)
    return builtin.ModuleOp(
        [b.function("prefill", shape.prefill), b.function("decode", 1)]
    )


def output_names(config: LlmConfig, shape: LlmShape) -> list[str]:
    if shape.part in ("embed", "layers"):
        return ["hidden_states"]
    if shape.argmax:
        return ["next_token"]
    parts = chunks(config.vocab_size, shape.chunk)
    return ["logits"] if len(parts) == 1 else [f"logits_{i}" for i in range(len(parts))]


def llm_weights(
    checkpoint: Checkpoint, config: LlmConfig, shape: LlmShape, module: builtin.ModuleOp
) -> dict[str, np.ndarray]:
    """Every weight the module's params name: checkpoint tensors (shapes
    checked against the config), chunk views of the embedding and the head,
    and the RoPE tables."""
    cos, sin = rope_tables(config, shape.context)
    weights: dict[str, np.ndarray] = {"rope.cos": cos, "rope.sin": sin}
    for op in module.walk():
        if not isinstance(op, rlx.ParamOp) or op.param_name.data in weights:
            continue
        name = op.param_name.data
        if name.endswith("]"):
            base, rows = name[:-1].split("[")
            start, end = (int(v) for v in rows.split(":"))
            full = weights.get(base)
            if full is None:
                full = checkpoint.tensor(base, (config.vocab_size, config.hidden_size))
                weights[base] = full
            weights[name] = full[start:end]
        else:
            weights[name] = checkpoint.tensor(name, shape_of(op.result))
    used = {op.param_name.data for op in module.walk() if isinstance(op, rlx.ParamOp)}
    return {k: v for k, v in weights.items() if k in used}
