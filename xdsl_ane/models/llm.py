"""Decoder-only LLMs from Hugging Face checkpoints as stateful rlx programs:
`prefill` (N tokens at a start position) and `decode` (one token) over a
KV cache held as state.

Each function takes `input_ids` (i32 [S]) and `position` (i32 [1], the
position of the first token) and the states `key_cache` and `value_cache`
([L, Hkv, context, D]), and, for sliding layers whose window W is below
the context, `local_key_cache` and `local_value_cache` ([L, Hkv, W, D],
rings written at position mod W; `local_window`). Per layer it computes q, k, v for the S tokens,
writes k and v into the cache at rows position.. (`slice_update` with a
runtime begin), and attends over the whole cache under a mask built from
the position inside the model: key j is visible to query i iff
j ≤ position + i (later rows are stale or zero and get −∞). RoPE angles
are gathered from cos/sin tables [context, D/2] at the same positions.
The embedding and the LM head are split into row chunks of at most
`chunk` (the ANE's 16384 per dimension); the head gives one logits output
per chunk ([S, rows]), or, with `argmax`, the next token (i32 [S]) computed
in the model.

Families (config.json's `architectures`, FAMILIES: one row each, the
transformers class and how it differs): Qwen3 (QK-norm, `attention_bias`),
Qwen2 (q/k/v bias), Llama (`attention_bias`, `mlp_bias`), Mistral, Phi-3
(fused qkv and gate_up projections, partial RoPE), GPT-NeoX (LayerNorm,
parallel residual, qkv fused per head, a plain GELU MLP, partial RoPE, its
own weight names), GPT-2 (learned absolute positions, no RoPE, Conv1D
weights [in, out], its own field and weight names), Starcoder2
(LayerNorm, a plain MLP, `use_bias`), Granite (embedding, residual,
attention and logit multipliers), SmolLM3 (layers without RoPE), OLMo 2
(norms after attention and the MLP only, QK-norm over the projections),
Cohere (LayerNorm without bias, one norm for a parallel attention and MLP,
interleaved RoPE, logit_scale), Gemma ((1 + w) RMSNorm, the
embedding times √hidden), Gemma 2 (also sandwich norms, a
query_pre_attn_scalar scale, soft-capped attention scores and logits),
Gemma 3 text (Gemma 2's without the score cap, with QK-norm and its own
RoPE for the sliding layers); tied or separate
embeddings; the MLP's activation from `hidden_act` (ACTIVATIONS); RoPE
default, linear, Llama 3, YaRN or LongRoPE scaled (at the static context); sliding-window layers (a ring cache of
their window, or a second mask over the full cache).
Every config field that changes the math is honoured or refused in one
line naming it (IGNORED_FIELDS lists those that do not), and every
checkpoint tensor is read or named in an error (`check_all_used`).
Weights keep their checkpoint names (`model.layers.0.self_attn.q_proj.weight`);
the RoPE tables and the chunk views are added by `llm_weights`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32, i1, i32
from xdsl.ir import Attribute, SSAValue

from xdsl_ane.ane.limits import MASKED, MAX_DIMENSION
from xdsl_ane.backend.weights import LazyWeight
from xdsl_ane.dialects import ane, rlx
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import shape_of, tensor
from xdsl_ane.errors import XdslAneError, option
from xdsl_ane.frontend.checkpoint import Checkpoint
from xdsl_ane.models.configs import LlmConfig


@dataclass(frozen=True)
class Family:
    """What one architecture reads from config.json beyond the fields every
    family reads (transformers' modeling_*.py for each)."""

    name: str
    qk_norm: bool = False
    """RMSNorm over each head of q and k (Qwen3)."""
    qkv_bias: bool = False
    """q, k and v always have biases (Qwen2), whatever `attention_bias` says."""
    attention_bias: bool = False
    """`attention_bias` puts biases on q, k, v and o."""
    mlp_bias: bool = False
    """`mlp_bias` puts biases on gate, up and down."""
    layer_types: bool = False
    """Full or sliding attention per layer (`layer_types`, else from
    `use_sliding_window` and `max_window_layers`); without it every layer
    slides when `sliding_window` is set (Mistral)."""
    unit_offset_norms: bool = False
    """RMSNorm scales by (1 + weight), computed in float32 (Gemma)."""
    scaled_embedding: bool = False
    """The embedding is multiplied by √hidden_size (Gemma)."""
    fused: bool = False
    """q, k, v are one projection `self_attn.qkv_proj` ([q; k; v] rows) and
    gate, up one `mlp.gate_up_proj` ([gate; up]) (Phi-3)."""
    window_switch: bool = True
    """With `layer_types`, `use_sliding_window` turns the windows on (Qwen);
    without it `layer_types` alone says (Gemma 3)."""
    sandwich_norms: bool = False
    """Norms after attention and the MLP too, before their residual adds
    (`post_attention_layernorm` on attention's output,
    `pre_feedforward_layernorm`, `post_feedforward_layernorm`; Gemma 2, 3)."""
    query_scale: bool = False
    """Attention scales by query_pre_attn_scalar^−½, not head_dim^−½."""
    activation_field: str = "hidden_act"
    """The config field naming the MLP's activation."""
    layer_norm: bool = False
    """LayerNorm with weight and bias (eps `layer_norm_eps`), not RMSNorm."""
    qkv_per_head: bool = False
    """The fused qkv projection's rows are per head [q_h; k_h; v_h]
    (GPT-NeoX), not [q; k; v]."""
    gated_mlp: bool = True
    """down(act(gate(h)) · up(h)); false: down(act(up(h))) (GPT-NeoX)."""
    parallel_residual: bool = False
    """`use_parallel_residual` (default true) adds attention and the MLP of
    the same input: x + attn(ln1(x)) + mlp(ln2(x))."""
    partial_rotary: bool = False
    """RoPE over the first `partial_rotary_factor` of each head, the rest
    passed through (GPT-NeoX, Phi-3)."""
    all_biases: bool = False
    """Every projection of the MLP has a bias; `attention_bias` (default
    true) those of attention (GPT-NeoX)."""
    renames: tuple[tuple[str, str], ...] = ()
    """The checkpoint's names for the Llama-style ones the builder uses
    (`model.layers.` -> `gpt_neox.layers.`), substring by substring."""
    aliases: tuple[tuple[str, str], ...] = ()
    """The config's own names of fields (`hidden_size` is `n_embd`)."""
    rope: bool = True
    """Positions by RoPE; false: by learned absolute position embeddings
    added to the token embeddings (`model.embed_positions`; GPT-2)."""
    conv1d: bool = False
    """Projection weights stored [in, out] (GPT-2's Conv1D), applied x · W."""
    ffn_multiple: int | None = None
    """The MLP's width when `intermediate_size` is null: this × hidden."""
    bias_switch: str | None = None
    """A field (default true) that puts biases on every projection
    (Starcoder2's `use_bias`)."""
    multipliers: bool = False
    """Granite's `embedding_multiplier`, `residual_multiplier` (on each
    branch before its add), `attention_multiplier` (attention's scale) and
    `logits_scaling` (logits divided by it)."""
    nope_layers: bool = False
    """`no_rope_layers` (1: RoPE, 0: none), else a NoPE layer every
    `no_rope_layer_interval` (SmolLM3)."""
    post_norms: bool = False
    """Norms only after attention and the MLP, before their residual adds,
    none before (OLMo 2)."""
    norm_bias: bool = True
    """LayerNorm has a bias (false: Cohere's LayerNorm, weight only)."""
    shared_norm: bool = False
    """With a parallel residual, attention and the MLP read one norm
    (input_layernorm) of the same input (Cohere)."""
    rope_style: str = "half"
    """rlx.rope's pairing: "half" (i, i + D/2) or "interleaved" (2i, 2i+1)."""
    logit_scale: bool = False
    """Logits are multiplied by `logit_scale` (Cohere)."""
    projection_qk_norm: bool = False
    """QK-norm over the whole q and k projections, before the head split
    (OLMo 2), not per head."""


FAMILIES = {
    "Qwen3ForCausalLM": Family(
        "qwen3", qk_norm=True, attention_bias=True, layer_types=True
    ),
    "Qwen2ForCausalLM": Family("qwen2", qkv_bias=True, layer_types=True),
    "LlamaForCausalLM": Family("llama", attention_bias=True, mlp_bias=True),
    "MistralForCausalLM": Family("mistral"),
    "Phi3ForCausalLM": Family("phi3", fused=True, partial_rotary=True),
    "GPTNeoXForCausalLM": Family(
        "gpt_neox",
        fused=True,
        qkv_per_head=True,
        layer_norm=True,
        gated_mlp=False,
        parallel_residual=True,
        partial_rotary=True,
        all_biases=True,
        renames=(
            ("model.embed_tokens.", "gpt_neox.embed_in."),
            ("model.layers.", "gpt_neox.layers."),
            ("model.norm.", "gpt_neox.final_layer_norm."),
            ("self_attn.qkv_proj.", "attention.query_key_value."),
            ("self_attn.o_proj.", "attention.dense."),
            ("mlp.up_proj.", "mlp.dense_h_to_4h."),
            ("mlp.down_proj.", "mlp.dense_4h_to_h."),
            ("lm_head.", "embed_out."),
        ),
    ),
    "GPT2LMHeadModel": Family(
        "gpt2",
        fused=True,
        layer_norm=True,
        gated_mlp=False,
        all_biases=True,
        rope=False,
        conv1d=True,
        ffn_multiple=4,
        activation_field="activation_function",
        aliases=(
            ("hidden_size", "n_embd"),
            ("num_hidden_layers", "n_layer"),
            ("num_attention_heads", "n_head"),
            ("intermediate_size", "n_inner"),
            ("max_position_embeddings", "n_positions"),
            ("layer_norm_eps", "layer_norm_epsilon"),
        ),
        renames=(
            ("model.embed_tokens.", "transformer.wte."),
            ("model.embed_positions.", "transformer.wpe."),
            ("model.layers.", "transformer.h."),
            ("model.norm.", "transformer.ln_f."),
            ("input_layernorm.", "ln_1."),
            ("post_attention_layernorm.", "ln_2."),
            ("self_attn.qkv_proj.", "attn.c_attn."),
            ("self_attn.o_proj.", "attn.c_proj."),
            ("mlp.up_proj.", "mlp.c_fc."),
            ("mlp.down_proj.", "mlp.c_proj."),
        ),
    ),
    "Starcoder2ForCausalLM": Family(
        "starcoder2",
        layer_norm=True,
        gated_mlp=False,
        bias_switch="use_bias",
        aliases=(("layer_norm_eps", "norm_epsilon"),),
        renames=(("mlp.up_proj.", "mlp.c_fc."), ("mlp.down_proj.", "mlp.c_proj.")),
    ),
    "GraniteForCausalLM": Family(
        "granite", attention_bias=True, mlp_bias=True, multipliers=True
    ),
    "SmolLM3ForCausalLM": Family(
        "smollm3",
        attention_bias=True,
        mlp_bias=True,
        layer_types=True,
        nope_layers=True,
    ),
    "Olmo2ForCausalLM": Family(
        "olmo2", attention_bias=True, post_norms=True, projection_qk_norm=True
    ),
    "CohereForCausalLM": Family(
        "cohere",
        attention_bias=True,
        layer_norm=True,
        norm_bias=False,
        parallel_residual=True,
        shared_norm=True,
        rope_style="interleaved",
        logit_scale=True,
    ),
    "GemmaForCausalLM": Family(
        "gemma", attention_bias=True, unit_offset_norms=True, scaled_embedding=True
    ),
    "Gemma2ForCausalLM": Family(
        "gemma2",
        attention_bias=True,
        layer_types=True,
        window_switch=False,
        unit_offset_norms=True,
        scaled_embedding=True,
        sandwich_norms=True,
        query_scale=True,
        activation_field="hidden_activation",
    ),
    "Gemma3ForCausalLM": Family(
        "gemma3_text",
        qk_norm=True,
        attention_bias=True,
        layer_types=True,
        window_switch=False,
        unit_offset_norms=True,
        scaled_embedding=True,
        sandwich_norms=True,
        query_scale=True,
        activation_field="hidden_activation",
    ),
}

ACTIVATIONS: dict[str, type[rlx.UnaryOp]] = {
    "silu": rlx.SiluOp,
    "swish": rlx.SiluOp,
    "gelu": rlx.GeluOp,
    "gelu_python": rlx.GeluOp,
    "gelu_new": rlx.GeluTanhOp,
    "gelu_pytorch_tanh": rlx.GeluTanhOp,
    "gelu_python_tanh": rlx.GeluTanhOp,
    # 0.7978845608 · (x + 0.044715 x³) is the tanh form with √(2/π) cut
    # to ten digits (3e-12 off: below fp32's resolution)
    "gelu_fast": rlx.GeluTanhOp,
    "relu": rlx.ReluOp,
    "sigmoid": rlx.SigmoidOp,
    "tanh": rlx.TanhOp,
}
"""transformers' `hidden_act` names (activations.ACT2CLS) -> the rlx op of
the same function; any other name is refused."""

ROPE_TYPES = ("default", "linear", "llama3", "yarn", "longrope")

IGNORED_FIELDS = {
    "attention_dropout": "dropout is off at inference",
    "initializer_range": "initialization only",
    "use_cache": "how transformers runs, not what it computes",
    "pad_token_id": "tokenizer ids: generation, not the math",
    "bos_token_id": "tokenizer ids: generation, not the math",
    "eos_token_id": "tokenizer ids: generation, not the math",
    "embd_pdrop": "dropout is off at inference",
    "hidden_dropout": "dropout is off at inference",
    "classifier_dropout": "dropout is off at inference (and no classifier here)",
    "is_decoder": "a causal LM is a decoder by its class",
    "attn_pdrop": "dropout is off at inference",
    "reorder_and_upcast_attn": "the order of the same products, in float32",
    "summary_type": "GPT2DoubleHeadsModel's summary head, not the causal LM's",
    "summary_use_proj": "GPT2DoubleHeadsModel's summary head, not the causal LM's",
    "summary_activation": "GPT2DoubleHeadsModel's summary head, not the causal LM's",
    "summary_proj_to_labels": "GPT2DoubleHeadsModel's summary head, not the causal "
    "LM's",
    "summary_first_dropout": "dropout is off at inference",
    "embedding_dropout": "dropout is off at inference",
    "residual_dropout": "dropout is off at inference",
    "resid_pdrop": "dropout is off at inference",
    "original_max_position_embeddings": "read by longrope scaling alone, which is "
    "refused (llama3 scaling reads its own, in rope_parameters)",
    "pretraining_tp": "transformers 5 no longer reads it (it only split the "
    "matmuls of the same linear layers)",
}
"""Fields of the supported families' configs (transformers 5.23) that do not
change what the model computes; every other field of theirs is read by
`llm_config`: honoured, or refused in one line naming it."""


QKV = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")
OUT = ("self_attn.o_proj",)
MLP = ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


class ConfigReader:
    """Typed fields of config.json; a wrong one is an error naming it."""

    def __init__(
        self, config: dict[str, Any], where: str, aliases: dict[str, str] | None = None
    ):
        self.c, self.where = config, where
        self.aliases = aliases or {}
        """A family's own names of the fields (GPT-2's `n_embd` for
        `hidden_size`): read, and named in errors, by those."""

    def error(self, name: str, message: str) -> XdslAneError:
        name = self.aliases.get(name, name)
        return XdslAneError(f"{self.where}: field '{name}' {message}")

    def integer(self, name: str, default: int | None = None, minimum: int = 1) -> int:
        value = self.c.get(self.aliases.get(name, name))
        if value is None:
            if default is None:
                raise self.error(name, "is missing")
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.error(name, f"is {value!r}; expected an integer ≥ {minimum}")
        return value

    def number(
        self,
        name: str,
        default: float,
        table: str | None = None,
        positive: bool = False,
    ) -> float:
        """A finite float (> 0 if `positive`: a size, an epsilon, a base, a
        factor): field `name`, or key `name` of the object field `table`
        (rope_parameters) when given."""
        source = self.c
        for part in [] if table is None else table.split("."):
            source = source.get(part) or {}
        value = source.get(self.aliases.get(name, name) if table is None else name)
        if value is None:
            return default
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            label = name if table is None else f"{table}.{name}"
            raise self.error(label, f"is {value!r}; expected a number")
        if positive and value <= 0:
            label = name if table is None else f"{table}.{name}"
            raise self.error(label, f"is {value!r}; expected a number > 0")
        return float(value)

    def flag(self, name: str) -> bool:
        value = self.c.get(name)
        if value is None:  # transformers' default for every flag read here
            return False
        if not isinstance(value, bool):
            raise self.error(name, f"is {value!r}; expected true or false")
        return value


def llm_config(checkpoint: Checkpoint) -> LlmConfig:
    """The model from config.json. Every field that changes what the model
    computes is honoured, or refused in one line naming it (an unsupported
    architecture lists the supported ones); IGNORED_FIELDS says which do
    not."""
    c = checkpoint.config
    where = str(checkpoint.directory / "config.json")
    read = ConfigReader(c, where)
    architectures = c.get("architectures") or []
    if not isinstance(architectures, list):
        architectures = [architectures]
    arch = next((a for a in architectures if str(a) in FAMILIES), None)
    if arch is None:
        raise XdslAneError(
            f"{where}: field 'architectures' is {architectures}; supported: "
            + ", ".join(FAMILIES)
        )
    family = FAMILIES[str(arch)]
    read = ConfigReader(c, where, dict(family.aliases))
    if read.flag("add_cross_attention"):
        raise read.error(
            "add_cross_attention", "is true: cross-attention layers are not supported"
        )
    if read.flag("use_bidirectional_attention"):
        raise read.error(
            "use_bidirectional_attention",
            "is true: only causal (decoder) attention is supported",
        )
    if c.get("quantization_config"):
        raise read.error(
            "quantization_config",
            "is set: quantized checkpoints are not supported (give the "
            "unquantized weights)",
        )
    hidden = read.integer("hidden_size")
    heads = read.integer("num_attention_heads")
    kv_heads = read.integer("num_key_value_heads", heads)
    if heads % kv_heads:
        raise read.error(
            "num_key_value_heads",
            f"is {kv_heads}; num_attention_heads {heads} must be a multiple of it",
        )
    if c.get("head_dim") is None and hidden % heads:
        raise read.error(
            "head_dim",
            f"is missing and hidden_size {hidden} is not a multiple of "
            f"num_attention_heads {heads}",
        )
    head_dim = read.integer("head_dim", hidden // heads)
    if head_dim % 2 and family.rope:
        raise read.error("head_dim", f"is {head_dim}; RoPE needs an even one")
    activation = c.get(family.activation_field, "silu")
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise read.error(
            family.activation_field,
            f"is {activation!r}; supported: " + ", ".join(ACTIVATIONS),
        )
    num_layers = read.integer("num_hidden_layers")
    per_type = c.get("rope_parameters") or {}
    if isinstance(per_type, dict) and set(per_type) & set(LAYER_TYPES):
        theta, scaling = rope_config(read, "full_attention")
        local = rope_config(read, "sliding_attention")
        local_rope = None if local == (theta, scaling) else local
    else:
        theta, scaling = rope_config(read)
        local_rope = None
    attention_scale = None
    if family.query_scale:
        attention_scale = (
            read.number("query_pre_attn_scalar", head_dim, positive=True) ** -0.5
        )
    if c.get("scale_attn_weights") is False:  # GPT-2's: unscaled scores
        attention_scale = 1.0
    multiplier: dict[str, float | None] = {}
    for name in ("embedding_multiplier", "residual_multiplier", "logits_scaling"):
        value = read.number(name, 1.0, positive=True) if family.multipliers else 1.0
        multiplier[name] = None if value == 1.0 else value
    if family.logit_scale:  # logits × logit_scale: as a divisor
        multiplier["logits_scaling"] = 1 / read.number(
            "logit_scale", 1.0, positive=True
        )
    if read.flag("use_qk_norm"):
        raise read.error(
            "use_qk_norm", "is true: Cohere's per-head QK LayerNorm is not supported"
        )
    if family.multipliers:
        attention_scale = read.number(
            "attention_multiplier", head_dim**-0.5, positive=True
        )
    biases: set[str] = set(QKV) if family.qkv_bias else set()
    if family.attention_bias and read.flag("attention_bias"):
        biases |= {*QKV, *OUT}
    if family.mlp_bias and read.flag("mlp_bias"):
        biases |= set(MLP)
    if family.all_biases:
        biases |= set(MLP)
        if c.get("attention_bias", True) is not False:
            biases |= {"self_attn.qkv_proj", *OUT}
    if family.bias_switch and c.get(family.bias_switch, True) is not False:
        biases |= {*QKV, *OUT, *MLP}
    if family.fused:
        biases = {b for b in biases if b not in QKV}
        if family.qkv_bias:
            biases.add("self_attn.qkv_proj")
    rotary_dim = None
    partial = rope_partial(read)
    if partial != 1.0 and family.rope:
        if not family.partial_rotary:
            raise read.error(
                "rope_parameters.partial_rotary_factor",
                f"is {partial}; a {family.name} model rotates the whole head (1.0)",
            )
        rotary_dim = int(head_dim * partial)
        if rotary_dim < 2 or rotary_dim % 2:
            raise read.error(
                "rope_parameters.partial_rotary_factor",
                f"is {partial}: it rotates {rotary_dim} of {head_dim} dims; RoPE "
                "needs an even number, at least 2",
            )
    parallel = family.parallel_residual and c.get("use_parallel_residual", True)
    if not isinstance(parallel, bool):
        raise read.error(
            "use_parallel_residual", f"is {parallel!r}; expected true or false"
        )
    return LlmConfig(
        family=family.name,
        hidden_size=hidden,
        num_layers=num_layers,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        ffn_size=read.integer(
            "intermediate_size",
            None if family.ffn_multiple is None else family.ffn_multiple * hidden,
        ),
        vocab_size=read.integer("vocab_size"),
        rms_eps=(
            read.number("layer_norm_eps", 1e-5, positive=True)
            if family.layer_norm
            else read.number("rms_norm_eps", 1e-6, positive=True)
        ),
        rope_theta=theta,
        rope_scaling=scaling,
        max_positions=read.integer("max_position_embeddings", 2**31 - 1),
        tied=read.flag("tie_word_embeddings"),
        qk_norm=family.qk_norm,
        biases=frozenset(biases),
        activation=activation,
        unit_offset_norms=family.unit_offset_norms,
        scaled_embedding=family.scaled_embedding,
        fused=family.fused,
        sandwich_norms=family.sandwich_norms,
        layer_norm=family.layer_norm,
        qkv_per_head=family.qkv_per_head,
        gated_mlp=family.gated_mlp,
        parallel_residual=parallel,
        rotary_dim=rotary_dim,
        renames=family.renames,
        rope=family.rope,
        conv1d=family.conv1d,
        scale_by_layer=read.flag("scale_attn_by_inverse_layer_idx"),
        embedding_multiplier=multiplier["embedding_multiplier"],
        residual_multiplier=multiplier["residual_multiplier"],
        logits_divisor=multiplier["logits_scaling"],
        nope_layers=nope_layers(read, family, num_layers),
        post_norms=family.post_norms,
        norm_bias=family.norm_bias,
        shared_norm=family.shared_norm,
        rope_style=family.rope_style,
        projection_qk_norm=family.projection_qk_norm,
        attention_scale=attention_scale,
        final_softcap=softcap(read, "final_logit_softcapping"),
        attention_softcap=softcap(read, "attn_logit_softcapping"),
        local_rope=local_rope,
        **sliding_window(read, family, num_layers),
    )


def nope_layers(read: ConfigReader, family: Family, num_layers: int) -> frozenset[int]:
    """The layers without RoPE: where `no_rope_layers` has 0, or every
    `no_rope_layer_interval`-th when it is null (SmolLM3's rule)."""
    if not family.nope_layers:
        return frozenset()
    flags = read.c.get("no_rope_layers")
    if flags is None:
        every = read.integer("no_rope_layer_interval", 4)
        return frozenset(i for i in range(num_layers) if (i + 1) % every == 0)
    if (
        not isinstance(flags, list)
        or len(flags) != num_layers
        or any(f not in (0, 1) for f in flags)
    ):
        raise read.error(
            "no_rope_layers", f"must list 0 or 1 for each of the {num_layers} layers"
        )
    return frozenset(i for i, f in enumerate(flags) if f == 0)


def softcap(read: ConfigReader, name: str) -> float | None:
    """A soft-capping field: None (off) or a positive number."""
    if read.c.get(name) is None:
        return None
    cap = read.number(name, 0.0)
    if cap <= 0:
        raise read.error(name, f"is {cap}; expected a positive number or null")
    return cap


def rope_partial(read: ConfigReader) -> float:
    """partial_rotary_factor: top-level or in rope_parameters (default 1)."""
    partial = read.number("partial_rotary_factor", 1.0)
    for field in ("rope_parameters", "rope_scaling"):
        if isinstance(read.c.get(field), dict):
            partial = read.number("partial_rotary_factor", partial, field)
    if not 0 < partial <= 1:
        raise read.error("partial_rotary_factor", f"is {partial}; expected (0, 1]")
    return partial


def rope_config(
    read: ConfigReader, layer_type: str | None = None
) -> tuple[float, dict[str, Any] | None]:
    """rope_theta and the scaling (None: default RoPE) from `rope_parameters`
    (transformers 5; its entry for `layer_type` where it has one per layer
    type) or `rope_scaling` with a top-level `rope_theta`."""
    c = read.c
    field = "rope_parameters" if c.get("rope_parameters") else "rope_scaling"
    rope = c.get(field) or {}
    if layer_type is not None and isinstance(rope, dict):
        rope = rope.get(layer_type) or {}
        field = f"{field}.{layer_type}"
    if not isinstance(rope, dict):
        raise read.error(field, f"is {rope!r}; expected an object")
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type not in ROPE_TYPES:
        raise read.error(
            field,
            f"has rope type {rope_type!r}, which is not supported ("
            + ", ".join(ROPE_TYPES)
            + ")",
        )
    theta = read.number("rope_theta", 10000.0, positive=True)
    theta = read.number("rope_theta", theta, field, positive=True)
    if rope_type == "default":
        return theta, None
    keys = {
        "linear": ["factor"],
        "llama3": [
            "factor",
            "low_freq_factor",
            "high_freq_factor",
            "original_max_position_embeddings",
        ],
        "yarn": ["original_max_position_embeddings"],
        "longrope": ["original_max_position_embeddings"],
    }[rope_type]
    scaling: dict[str, Any] = {"rope_type": rope_type}
    for key in keys:
        if rope.get(key) is None:
            raise read.error(f"{field}.{key}", f"is missing (rope type {rope_type})")
        scaling[key] = read.number(key, 0.0, field, positive=True)
    if rope_type in ("yarn", "longrope"):
        # transformers' defaults: factor from the two lengths, the rest None
        old = scaling["original_max_position_embeddings"]
        longest = read.integer("max_position_embeddings", int(old))
        scaling["factor"] = read.number("factor", longest / old, field, positive=True)
        for key in ("attention_factor", "mscale", "mscale_all_dim"):
            scaling[key] = (
                None if rope.get(key) is None else read.number(key, 0.0, field)
            )
        scaling["beta_fast"] = read.number("beta_fast", 32.0, field) or 32.0
        scaling["beta_slow"] = read.number("beta_slow", 1.0, field) or 1.0
        scaling["truncate"] = rope.get("truncate", True) is not False
    if rope_type == "longrope":
        for key in ("long_factor", "short_factor"):
            factors = rope.get(key)
            if not isinstance(factors, list) or not all(
                isinstance(f, (int, float)) and f > 0 for f in factors
            ):
                raise read.error(
                    f"{field}.{key}", "must list a number > 0 per frequency"
                )
            scaling[key] = [float(f) for f in factors]
    return theta, scaling


LAYER_TYPES = ("full_attention", "sliding_attention")


def sliding_window(read: ConfigReader, family: Family, num_layers: int) -> dict:
    """The window and the layers that slide, as transformers picks them: per
    `layer_types` (Qwen; from `use_sliding_window` and `max_window_layers`
    when absent), else every layer when `sliding_window` is set."""
    c = read.c
    types = c.get("layer_types") if family.layer_types else None
    if types is not None:
        if not isinstance(types, list) or len(types) != num_layers:
            raise read.error(
                "layer_types", f"must list one type per layer ({num_layers})"
            )
        unknown = sorted(set(map(str, types)) - set(LAYER_TYPES))
        if unknown:
            raise read.error(
                "layer_types", f"has {unknown}; supported: " + ", ".join(LAYER_TYPES)
            )
    none: dict[str, Any] = {"sliding_window": None, "sliding_layers": frozenset()}
    if c.get("sliding_window") is None:
        return none
    if family.layer_types and family.window_switch:
        if not read.flag("use_sliding_window"):
            return none
    window = read.integer("sliding_window")
    if not family.layer_types:
        layers = set(range(num_layers))
    elif types is None:  # transformers' default: layers from max_window_layers on
        first = read.integer("max_window_layers", 28, minimum=0)
        layers = set(range(first, num_layers))
    else:
        layers = {i for i, t in enumerate(types) if t == "sliding_attention"}
    if not layers:
        return none
    return {"sliding_window": window, "sliding_layers": frozenset(layers)}


def check_shape(config: LlmConfig, shape: LlmShape, where: str) -> None:
    """--context, --prefill and --chunk against each other, the model
    (config.json at `where`) and the ANE; each error names the option."""
    context, prefill = shape.context, shape.prefill
    for name, value in [("context", context), ("prefill", prefill)]:
        if value < 1:
            raise XdslAneError(f"{option(name, value)}: must be at least 1")
    if not 1 <= shape.chunk <= MAX_DIMENSION:
        raise XdslAneError(
            f"{option('chunk', shape.chunk)}: must lie in [1, {MAX_DIMENSION}]"
        )
    context_text, prefill_text = option("context", context), option("prefill", prefill)
    if context > config.max_positions:
        raise XdslAneError(
            f"{context_text} is beyond the model's max_position_embeddings "
            f"{config.max_positions} ({where})"
        )
    if context > MAX_DIMENSION:
        raise XdslAneError(
            f"{context_text} is beyond the ANE's {MAX_DIMENSION} per dimension"
        )
    if prefill > context:
        raise XdslAneError(f"{prefill_text} is more than {context_text}")
    # prefill calls start at 0, N, 2N, ...: the last one's N rows must end
    # inside the cache and the RoPE tables
    if context % prefill:
        raise XdslAneError(f"{prefill_text} must divide {context_text}")


def inverse_frequencies(
    config: LlmConfig, local: bool = False, context: int | None = None
) -> np.ndarray:
    """base^(−2i/D); rope type linear divides them all by `factor`, llama3
    rescales by Llama 3's rule (low frequencies divided by `factor`, high
    ones kept, a smooth blend between), yarn blends interpolated and
    extrapolated frequencies over a ramp of dims, longrope divides by its
    long factors where the `context` passes the original length, else by
    its short ones (transformers' rule for a sequence of that length)."""
    d = config.rotated
    theta, s = rope_of(config, local)
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    if s is None:
        return inv
    if s["rope_type"] == "linear":
        return inv / s["factor"]
    if s["rope_type"] == "yarn":
        return yarn_frequencies(inv, theta, d, s)
    if s["rope_type"] == "longrope":
        old = s["original_max_position_embeddings"]
        long = context is not None and context > old
        factors = np.asarray(s["long_factor" if long else "short_factor"])
        if factors.shape != inv.shape:
            raise XdslAneError(
                f"rope_parameters.{'long' if long else 'short'}_factor has "
                f"{factors.size} factors; RoPE over {d} dims needs {inv.size}"
            )
        return inv / factors
    factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old = s["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    scaled = np.where(wavelen > old / low, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= old / high) & (wavelen <= old / low)
    return np.where(medium, blended, scaled)


def rope_of(config: LlmConfig, local: bool) -> tuple[float, dict[str, Any] | None]:
    """(theta, scaling) of the full layers or, `local`, the sliding ones."""
    if local and config.local_rope:
        return config.local_rope
    return config.rope_theta, config.rope_scaling


def yarn_frequencies(inv: np.ndarray, base: float, d: int, s: dict) -> np.ndarray:
    """YaRN (transformers' _compute_yarn_parameters): inv / factor below
    the correction range, inv above it, a linear ramp between."""
    factor, old = s["factor"], s["original_max_position_embeddings"]

    def correction_dim(rotations: float) -> float:
        return (d * math.log(old / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(s["beta_fast"]), correction_dim(s["beta_slow"])
    if s["truncate"]:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d // 2, dtype=np.float32) - low) / (high - low), 0, 1)
    extrapolated = 1 - ramp
    return (inv / factor) * (1 - extrapolated) + inv * extrapolated


def attention_factor(config: LlmConfig, local: bool = False) -> float:
    """The factor yarn and longrope scale cos and sin by (1 otherwise)."""
    _, s = rope_of(config, local)
    if s is None or s["rope_type"] not in ("yarn", "longrope"):
        return 1.0
    if s["attention_factor"] is not None:
        return s["attention_factor"]
    factor, old = s["factor"], s["original_max_position_embeddings"]
    if s["rope_type"] == "longrope":
        return 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(old))

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if s["mscale"] and s["mscale_all_dim"]:
        return mscale(factor, s["mscale"]) / mscale(factor, s["mscale_all_dim"])
    return mscale(factor)


def rope_tables(
    config: LlmConfig, context: int, local: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [context, D/2] of θ = position · inv_freq, computed in
    float32 as Hugging Face does (`local`: the sliding layers' RoPE), times
    the scaling's attention factor (yarn, longrope)."""
    inv = inverse_frequencies(config, local, context).astype(np.float32)
    angles = np.arange(context, dtype=np.float32)[:, None] * inv[None, :]
    factor = np.float32(attention_factor(config, local))
    return np.cos(angles) * factor, np.sin(angles) * factor


def chunks(rows: int, limit: int) -> list[tuple[int, int]]:
    """[start, end) row ranges of at most `limit` rows, as equal as possible."""
    count = math.ceil(rows / limit)
    size = math.ceil(rows / count)
    return [(s, min(s + size, rows)) for s in range(0, rows, size)]


EMBED = "model.embed_tokens.weight"


def head_name(config: LlmConfig) -> str:
    return EMBED if config.tied else "lm_head.weight"


def check_table_shapes(checkpoint: Checkpoint, config: LlmConfig) -> None:
    """config.json's vocab_size and hidden_size against the embedding's and
    the head's shapes in the checkpoint, before any work sized by them."""
    wanted = (config.vocab_size, config.hidden_size)
    for name in dict.fromkeys([EMBED, head_name(config)]):
        full = config.weight_name(name)
        got = checkpoint.shape(full)
        if got != wanted:
            raise XdslAneError(
                f"{checkpoint.directory / 'config.json'}: vocab_size {wanted[0]} and "
                f"hidden_size {wanted[1]} do not match tensor '{full}' of the "
                f"checkpoint, of shape {list(got)}"
            )


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
    probe: bool = False
    """Also return the largest |hidden state| of the embedding and after
    each layer (`stream_max_i`, f32 [1]): the calibration program of
    `residual_maxima`."""


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


def largest_magnitude(x: SSAValue) -> SSAValue:
    """max |x| over all of x, as [1]."""
    axes = list(range(len(shape_of(x))))
    largest = rlx.ReduceMaxOp(rlx.AbsOp(x).result, axes, True).result
    return rlx.ReshapeOp(largest, (1,)).result


def scaled(x: SSAValue, factor: float) -> SSAValue:
    """x · factor (a float32 constant), in x's rank."""
    return rlx.MulOp(
        x, const(np.full((1,) * len(shape_of(x)), factor, np.float32))
    ).result


def softcapped(x: SSAValue, cap: float) -> SSAValue:
    """cap · tanh(x / cap), in x's rank."""
    c = const(np.full((1,) * len(shape_of(x)), cap, np.float32))
    return rlx.MulOp(rlx.TanhOp(rlx.DivOp(x, c).result).result, c).result


ROPE_TABLES = {"full": "rope", "sliding": "rope.local"}
"""The RoPE tables' weight names (`rope.cos`, `rope.local.sin`) by the
layers that read them; `rope.local` only where config.local_rope is set."""


def additive_mask(visible: np.ndarray) -> np.ndarray:
    """0 where `visible` [S, K], MASKED elsewhere, as [1, 1, S, K] float32."""
    mask = np.where(visible, 0.0, MASKED).astype(np.float32)
    return mask[None, None]


def const(value: np.ndarray) -> SSAValue:
    dtype = f32 if value.dtype.kind == "f" else i1 if value.dtype == np.bool_ else i32
    return rlx.ConstantOp(dense_from_numpy(value, dtype)).result


class LlmBuilder:
    """The one builder of a decoder's rlx ops. Stateful (compile-llm's
    functions): positions at a runtime `position`, k and v written into
    cache states, additive masks over the context. Stateless (position and
    caches None: `models.transformer`'s programs): positions 0..S−1, RoPE
    tables [S, D/2] read whole and rlx.attention's own causal mask; `base`
    "" names the weights as transformers' base model does (`layers.0.…`,
    `norm.weight`); `dtype` is the weights' (f32; f16 for the stateless
    programs of the lowering's fp16 tests)."""

    def __init__(
        self,
        config: LlmConfig,
        shape: LlmShape,
        base: str = "model.",
        dtype: Attribute = f32,
    ):
        self.c = config
        self.shape = shape
        self.base = base
        self.dtype = dtype
        self.ring: tuple[SSAValue, SSAValue] | None = None
        """The local cache's write index and mask of the last `stack`."""
        self.maxima: list[SSAValue] = []
        """The probes of the last `stack` (shape.probe)."""

    def param(self, name: str, shape: tuple[int, ...]) -> SSAValue:
        """The weight the builder calls `name`, by its checkpoint name."""
        return rlx.ParamOp(self.c.weight_name(name), tensor(shape, self.dtype)).result

    def linear(self, x: SSAValue, layer: int, name: str, out: int) -> SSAValue:
        """x · Wᵀ (+ b when config.biases has `name`) of layer `layer`'s
        projection `name` (`self_attn.q_proj`)."""
        full = f"{self.base}layers.{layer}.{name}"
        if self.c.conv1d:  # [in, out]
            w = self.param(full + ".weight", (shape_of(x)[-1], out))
            y = rlx.MatmulOp(x, w).result
        else:
            w = self.param(full + ".weight", (out, shape_of(x)[-1]))
            y = rlx.MatmulOp(x, w, transpose_rhs=True).result
        if name in self.c.biases:
            y = rlx.AddOp(y, self.param(full + ".bias", (out,))).result
        return y

    def rms_norm(
        self,
        x: SSAValue,
        name: str,
        stream: int | None = None,
        branch: bool = False,
    ) -> SSAValue:
        """The family's norm over the last axis: RMSNorm (its weight + 1
        with unit_offset_norms) or LayerNorm with bias. Under stream_scale
        α, a norm that reads the residual `stream` has its eps times α², and
        one that ends a `branch` (sandwich and post norms) its scale times α.
        `stream` is its index in norm_input_scales."""
        eps = self.c.rms_eps
        if stream is not None and self.c.stream_scale is not None:
            eps *= self.c.stream_scale**2
        scales = self.c.norm_input_scales
        if (
            stream is not None
            and scales
            and scales[stream] != 1.0
            and not self.c.layer_norm
        ):
            x = scaled(x, 1 / scales[stream])
            eps /= scales[stream] ** 2
        gamma = self.param(name + ".weight", (shape_of(x)[-1],))
        if self.c.layer_norm:
            width = shape_of(x)[-1]
            beta = (
                self.param(name + ".bias", (width,))
                if self.c.norm_bias
                else const(np.zeros(width, np.float32))
            )
            if branch and self.c.stream_scale is not None:
                gamma = scaled(gamma, self.c.stream_scale)
                beta = scaled(beta, self.c.stream_scale)
            return rlx.LayerNormOp(x, gamma, beta, eps).result
        if self.c.unit_offset_norms:
            gamma = rlx.AddOp(gamma, const(np.ones(1, np.float32))).result
        if branch and self.c.stream_scale is not None:
            gamma = scaled(gamma, self.c.stream_scale)
        return rlx.RmsNormOp(x, gamma, eps).result

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
        0] and returns this layer's whole cache [1, Hkv, context, D]; without
        a cache (stateless), k or v itself."""
        if state is None:
            return new
        index = cache_layers(self.c, self.shape)["key_cache"].index(layer)
        old = rlx.ReadStateOp(state).result
        zero = const(np.zeros(1, np.int32))
        begin = rlx.ConcatOp(
            [const(np.array([index], np.int32)), zero, position, zero], 0
        ).result
        updated = rlx.SliceUpdateOp(old, new, begin).result
        rlx.WriteStateOp(state, updated)
        return rlx.NarrowOp(updated, 0, index, 1).result

    def ring_cached(
        self, state, layer: int, new: SSAValue, index: SSAValue
    ) -> SSAValue:
        """Writes k or v [1, Hkv, S, D] into layer's ring [1, Hkv, W, D] of
        the local cache (slot of position q: q mod W) and returns the keys
        it attends over: the ring before the write followed by the new
        rows, [1, Hkv, W + S, D]. The write is one gather along the slots
        of that concatenation (`index`, from `ring_positions`)."""
        row = cache_layers(self.c, self.shape)["local_key_cache"].index(layer)
        old = rlx.ReadStateOp(state).result
        keys = rlx.ConcatOp([rlx.NarrowOp(old, 0, row, 1).result, new], 2).result
        ring = rlx.GatherOp(keys, index, axis=2).result
        zero = np.zeros(3, np.int32)
        begin = const(np.concatenate([[row], zero]).astype(np.int32))
        rlx.WriteStateOp(state, rlx.SliceUpdateOp(old, ring, begin).result)
        return keys

    def ring_positions(self, position: SSAValue, tokens: int):
        """The local cache's write index [W] and additive mask [1, 1, S, W +
        S] for S tokens at position p. The ring holds positions p − W .. p −
        1, slot j the one at t_j = (j − p) mod W from the oldest, p − W +
        t_j; query i sees it iff t_j > i (within its window) and p − W + t_j
        ≥ 0, and new row i' iff i' ≤ i. After the write slot j holds new
        row t_j where t_j < S, else its old row (index W + t_j or j)."""
        w = local_window(self.c, self.shape)
        assert w is not None
        context = self.shape.context
        first = rlx.GatherOp(
            const(np.arange(context, dtype=np.int32) % w), position
        ).result  # p mod W, [1]
        slots = const(np.arange(w, dtype=np.int32))
        t = rlx.SubOp(slots, first).result
        t = rlx.WhereOp(
            rlx.CompareOp(t, const(np.zeros(1, np.int32)), "lt").result,
            rlx.AddOp(t, const(np.array([w], np.int32))).result,
            t,
        ).result
        index = rlx.WhereOp(
            rlx.CompareOp(t, const(np.array([tokens], np.int32)), "lt").result,
            rlx.AddOp(t, const(np.array([w], np.int32))).result,
            slots,
        ).result
        row = rlx.ReshapeOp(t, (1, w)).result
        newer = rlx.CompareOp(
            row, const(np.arange(tokens, dtype=np.int32)[:, None]), "gt"
        ).result  # [S, W]
        stored = rlx.CompareOp(
            rlx.AddOp(row, rlx.ReshapeOp(position, (1, 1)).result).result,
            const(np.array([[w]], np.int32)),
            "ge",
        ).result  # [1, W]
        old = rlx.WhereOp(newer, stored, const(np.zeros((1, 1), np.bool_))).result
        causal = const(np.tril(np.ones((tokens, tokens), np.bool_)))
        visible = rlx.ConcatOp([old, causal], 1).result
        return index, self.additive(visible, tokens)

    def layer(self, x, layer: int, cos, sin, mask, position, caches):
        """One decoder layer: pre-norm attention and MLP with their residual
        adds, the MLP after attention or, with parallel_residual, beside it."""
        c, p = self.c, f"{self.base}layers.{layer}."
        h = x if c.post_norms else self.rms_norm(x, p + "input_layernorm", 2 * layer)
        a = self.attention(h, layer, cos, sin, mask, position, caches)
        if c.sandwich_norms or c.post_norms:
            a = self.rms_norm(a, p + "post_attention_layernorm", branch=True)
        if c.parallel_residual:
            m = self.mlp(
                h
                if c.shared_norm
                else self.rms_norm(x, p + "post_attention_layernorm", 2 * layer + 1),
                layer,
            )
            return self.residual(self.residual(x, a), m)
        x = self.residual(x, a)
        if c.post_norms:
            m = self.mlp(x, layer)
        else:
            second = (
                "pre_feedforward_layernorm"
                if c.sandwich_norms
                else "post_attention_layernorm"
            )
            m = self.mlp(self.rms_norm(x, p + second, 2 * layer + 1), layer)
        if c.sandwich_norms or c.post_norms:
            m = self.rms_norm(m, p + "post_feedforward_layernorm", branch=True)
        return self.residual(x, m)

    def residual(self, x: SSAValue, branch: SSAValue) -> SSAValue:
        """x + branch (times residual_multiplier where set)."""
        if self.c.residual_multiplier is not None:
            branch = scaled(branch, self.c.residual_multiplier)
        return rlx.AddOp(x, branch).result

    def projections(self, h: SSAValue, layer: int, qk_norm: str | None = None):
        """q, k, v [1, heads, S, D] of the normed input h [1, S, hidden];
        with `qk_norm` (the layer's prefix), q and k RMS-normed over their
        whole projection before the head split (OLMo 2)."""
        c = self.c
        s = shape_of(h)[1]
        if c.fused and c.qkv_per_head:  # rows [q_h; k_h; v_h] per head
            qkv = self.linear(h, layer, "self_attn.qkv_proj", 3 * c.q_dim)
            qkv = rlx.ReshapeOp(qkv, (1, s, c.num_heads, 3 * c.head_dim)).result
            return tuple(
                rlx.TransposeOp(
                    rlx.NarrowOp(qkv, 3, i * c.head_dim, c.head_dim).result,
                    (0, 2, 1, 3),
                ).result
                for i in range(3)
            )
        if c.fused:
            qkv = self.linear(h, layer, "self_attn.qkv_proj", c.q_dim + 2 * c.kv_dim)
            q, k, v = (
                rlx.NarrowOp(qkv, 2, start, size).result
                for start, size in [
                    (0, c.q_dim),
                    (c.q_dim, c.kv_dim),
                    (c.q_dim + c.kv_dim, c.kv_dim),
                ]
            )
        else:
            q = self.linear(h, layer, "self_attn.q_proj", c.q_dim)
            k = self.linear(h, layer, "self_attn.k_proj", c.kv_dim)
            v = self.linear(h, layer, "self_attn.v_proj", c.kv_dim)
        if qk_norm is not None:
            q = self.rms_norm(q, qk_norm + "self_attn.q_norm")
            k = self.rms_norm(k, qk_norm + "self_attn.k_norm")
        return (
            self.split_heads(q, c.num_heads),
            self.split_heads(k, c.num_kv_heads),
            self.split_heads(v, c.num_kv_heads),
        )

    def rope(self, x: SSAValue, cos: SSAValue, sin: SSAValue) -> SSAValue:
        """RoPE ("half") over the first config.rotated dims of each head."""
        d, r = self.c.head_dim, self.c.rotated
        style = self.c.rope_style
        if r == d:
            return rlx.RopeOp(x, cos, sin, style).result
        rotated = rlx.RopeOp(rlx.NarrowOp(x, 3, 0, r).result, cos, sin, style).result
        return rlx.ConcatOp([rotated, rlx.NarrowOp(x, 3, r, d - r).result], 3).result

    def attention(self, h, layer: int, cos, sin, mask, position, caches):
        """o_proj(attention(rope(q), rope(k), v)) over the cache, [1, S, hidden]."""
        c, p = self.c, f"{self.base}layers.{layer}."
        q, k, v = self.projections(h, layer, p if c.projection_qk_norm else None)
        if c.qk_norm:
            q = self.rms_norm(q, p + "self_attn.q_norm")
            k = self.rms_norm(k, p + "self_attn.k_norm")
        if c.rope and layer not in c.nope_layers:
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
        if caches is None:  # stateless
            keys, values = k, v
        elif layer in cache_layers(c, self.shape).get("local_key_cache", ()):
            index, mask = self.ring
            keys = self.ring_cached(caches["local_key_cache"], layer, k, index)
            values = self.ring_cached(caches["local_value_cache"], layer, v, index)
        else:
            keys = self.cached(caches["key_cache"], layer, k, position)
            values = self.cached(caches["value_cache"], layer, v, position)
        scale = c.attention_scale
        if c.scale_by_layer:
            scale = (c.head_dim**-0.5 if scale is None else scale) / (layer + 1)
        if mask is None and c.attention_softcap is None:  # stateless, causal
            a = rlx.AttentionOp(q, keys, values, mask="causal", scale=scale).result
        elif c.attention_softcap is None:
            a = rlx.AttentionOp(q, keys, values, mask, mask="bias", scale=scale).result
        else:
            a = self.capped_attention(q, keys, values, mask)
        s = shape_of(h)[1]
        a = rlx.ReshapeOp(
            rlx.TransposeOp(a, (0, 2, 1, 3)).result, (1, s, c.q_dim)
        ).result
        return self.linear(a, layer, "self_attn.o_proj", c.hidden_size)

    def mlp(self, h: SSAValue, layer: int) -> SSAValue:
        """down(act(gate(h)) · up(h)), or down(act(up(h))) when not gated."""
        c = self.c
        activation = ACTIVATIONS[c.activation]
        if not c.gated_mlp:
            up = self.linear(h, layer, "mlp.up_proj", c.ffn_size)
            return self.linear(
                activation(up).result, layer, "mlp.down_proj", c.hidden_size
            )
        if c.fused:
            both = self.linear(h, layer, "mlp.gate_up_proj", 2 * c.ffn_size)
            gate = rlx.NarrowOp(both, 2, 0, c.ffn_size).result
            up = rlx.NarrowOp(both, 2, c.ffn_size, c.ffn_size).result
        else:
            gate = self.linear(h, layer, "mlp.gate_proj", c.ffn_size)
            up = self.linear(h, layer, "mlp.up_proj", c.ffn_size)
        gate = activation(gate).result
        return self.linear(
            rlx.MulOp(gate, up).result, layer, "mlp.down_proj", c.hidden_size
        )

    def capped_attention(self, q, keys, values, mask) -> SSAValue:
        """softmax(cap · tanh(q·kᵀ·scale / cap) + mask) · v, written out
        (rlx.attention has no soft-capping). Query head h reads key/value
        head h // G (G = H / Hkv): q [1, H, S, D] is viewed as [1, Hkv, G·S,
        D], so each key/value head meets its G query heads in one matmul."""
        c = self.c
        s, context = shape_of(q)[2], shape_of(keys)[2]
        if mask is None:  # stateless: causal
            mask = const(additive_mask(np.tril(np.ones((s, s), np.bool_))))
        groups = c.num_heads // c.num_kv_heads
        scale = c.attention_scale or c.head_dim**-0.5
        grouped = rlx.ReshapeOp(q, (1, c.num_kv_heads, groups * s, c.head_dim)).result
        scores = rlx.MatmulOp(grouped, keys, transpose_rhs=True).result
        scores = rlx.MulOp(
            scores, const(np.full((1, 1, 1, 1), scale, np.float32))
        ).result
        scores = softcapped(scores, c.attention_softcap)
        scores = rlx.ReshapeOp(scores, (1, c.num_heads, s, context)).result
        weights = rlx.SoftmaxOp(rlx.AddOp(scores, mask).result, -1).result
        weights = rlx.ReshapeOp(
            weights, (1, c.num_kv_heads, groups * s, context)
        ).result
        out = rlx.MatmulOp(weights, values).result
        return rlx.ReshapeOp(out, (1, c.num_heads, s, c.head_dim)).result

    def head(self, h: SSAValue) -> list[SSAValue]:
        c = self.c
        name = head_name(c)
        parts = chunks(c.vocab_size, self.shape.chunk)
        logits = []
        for start, end in parts:
            w_name = name if len(parts) == 1 else chunk_name(name, start, end)
            w = self.param(w_name, (end - start, c.hidden_size))
            y = rlx.MatmulOp(h, w, transpose_rhs=True).result
            if c.logits_divisor is not None:
                y = scaled(y, 1 / c.logits_divisor)
            if c.final_softcap is not None:
                y = softcapped(y, c.final_softcap)
            logits.append(y)
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
        masks [1, 1, S, context]: causal (0 where key j ≤ position + i) and,
        when a layer slides with a window below the context, sliding (0
        where also j > position + i − window). Stateless (position None):
        the tables' first S rows whole, and the masks constants, the causal
        one None (rlx.attention's own)."""
        if position is None:
            return self.stateless_positions(tokens)
        context, half = self.shape.context, (self.shape.context, self.c.rotated // 2)
        positions = rlx.AddOp(position, const(np.arange(tokens, dtype=np.int32))).result
        tables = {
            kind: tuple(
                rlx.GatherOp(self.param(f"{prefix}.{f}", half), positions).result
                for f in ("cos", "sin")
            )
            for kind, prefix in ROPE_TABLES.items()
            if self.c.rope and (kind == "full" or self.c.local_rope is not None)
        }
        keys = const(np.arange(context, dtype=np.int32)[None, :])
        queries = rlx.ReshapeOp(positions, (tokens, 1)).result
        visible = rlx.CompareOp(keys, queries, "le").result
        masks = {"full": self.additive(visible, tokens)}
        window = self.c.sliding_window
        ring = local_window(self.c, self.shape) is not None
        if window is not None and window < context and not ring:
            oldest = rlx.SubOp(queries, const(np.array([[window]], np.int32))).result
            recent = rlx.CompareOp(keys, oldest, "gt").result
            inside = rlx.WhereOp(
                recent, visible, const(np.zeros((1, 1), np.bool_))
            ).result
            masks["sliding"] = self.additive(inside, tokens)
        return tables, masks

    def stateless_positions(self, tokens: int):
        """`positions` of tokens 0..S−1 in a stateless program."""
        half = (tokens, self.c.rotated // 2)
        tables = {
            kind: tuple(self.param(f"{prefix}.{f}", half) for f in ("cos", "sin"))
            for kind, prefix in ROPE_TABLES.items()
            if self.c.rope and (kind == "full" or self.c.local_rope is not None)
        }
        masks: dict[str, SSAValue | None] = {"full": None}
        window = self.c.sliding_window
        if window is not None and window < tokens:
            i = np.arange(tokens)
            inside = (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - window)
            masks["sliding"] = const(additive_mask(inside))
        return tables, masks

    def additive(self, visible: SSAValue, tokens: int) -> SSAValue:
        """0 where `visible` [S, K], MASKED elsewhere, as [1, 1, S, K] (K:
        the context, or the ring's W + S)."""
        mask = rlx.WhereOp(
            visible,
            const(np.zeros((1, 1), np.float32)),
            const(np.full((1, 1), MASKED, np.float32)),
        ).result
        return rlx.ReshapeOp(mask, (1, 1, tokens, shape_of(visible)[-1])).result

    def learned_positions(self, position: SSAValue, tokens: int) -> SSAValue:
        """The position embeddings [1, S, hidden] of positions position + i."""
        c = self.c
        table = self.param(
            self.base + "embed_positions.weight", (c.max_positions, c.hidden_size)
        )
        positions = const(np.arange(tokens, dtype=np.int32))
        if position is not None:
            positions = rlx.AddOp(position, positions).result
        rows = rlx.GatherOp(table, positions).result
        return rlx.ReshapeOp(rows, (1, tokens, c.hidden_size)).result

    def stack(self, x, position=None, caches=None) -> SSAValue:
        """The layers of shape.layers over hidden states x [1, S, hidden]
        with `caches` (the states by name, `cache_layers`), or stateless
        without position and caches."""
        first, end = self.shape.layers or (0, self.c.num_layers)
        tables, masks = self.positions(position, shape_of(x)[1])
        if caches and "local_key_cache" in caches:
            self.ring = self.ring_positions(position, shape_of(x)[1])
        if not self.c.rope and first == 0:
            x = rlx.AddOp(x, self.learned_positions(position, shape_of(x)[1])).result
        if self.c.stream_scale is not None and not self.c.rope and first == 0:
            x = scaled(x, self.c.stream_scale)
        self.maxima = []
        if self.shape.probe:
            self.maxima.append(largest_magnitude(x))
        for layer in range(first, end):
            sliding = layer in self.c.sliding_layers
            mask = masks["sliding" if sliding and "sliding" in masks else "full"]
            kind = "sliding" if sliding and "sliding" in tables else "full"
            cos, sin = tables.get(kind, (None, None))
            x = self.layer(x, layer, cos, sin, mask, position, caches)
            if self.shape.probe:
                self.maxima.append(largest_magnitude(x))
        return x

    def final(self, x: SSAValue) -> list[SSAValue]:
        """The final norm and the head over x [1, S, hidden]."""
        tokens = shape_of(x)[1]
        h = self.final_norm(x)
        return self.head(rlx.ReshapeOp(h, (tokens, self.c.hidden_size)).result)

    def final_norm(self, x: SSAValue) -> SSAValue:
        return self.rms_norm(x, self.base + "norm", 2 * self.c.num_layers)

    def function(self, name: str, tokens: int):
        """`name` over `tokens` tokens computing shape.part: "all" takes
        input_ids, position and the caches and gives the head's outputs;
        "embed" takes input_ids, "layers" hidden_states, position and its
        slice of the caches, "head" hidden_states; the parts between give
        hidden_states [1, S, hidden]."""
        c, shape = self.c, self.shape
        caches = {
            name: rlx.StateType(tensor(shape_, f32))
            for name, shape_ in cache_shapes(c, shape).items()
        }
        ids, position = tensor((tokens,), i32), tensor((1,), i32)
        hidden = tensor((1, tokens, c.hidden_size), f32)

        def embedded(ids):
            x = rlx.ReshapeOp(self.embed(ids), (1, tokens, c.hidden_size)).result
            if c.scaled_embedding:  # √hidden rounded to float32, as Gemma's
                scale = np.full((1, 1, 1), np.sqrt(c.hidden_size), np.float32)
                x = rlx.MulOp(x, const(scale)).result
            if c.embedding_multiplier is not None:
                x = scaled(x, c.embedding_multiplier)
            if c.stream_scale is not None and c.rope:  # (else after positions)
                x = scaled(x, c.stream_scale)
            return x

        names = list(caches)
        if shape.part == "embed":
            return build_function(name, [ids], lambda i: [embedded(i)], ["input_ids"])
        if shape.part == "layers":
            return build_function(
                name,
                [hidden, position, *caches.values()],
                lambda x, p, *s: [self.stack(x, p, dict(zip(names, s)))],
                ["hidden_states", "position", *names],
            )
        if shape.part == "head":
            return build_function(name, [hidden], self.final, ["hidden_states"])
        return build_function(
            name,
            [ids, position, *caches.values()],
            lambda i, p, *s: (
                self.final(self.stack(embedded(i), p, dict(zip(names, s))))
                + self.maxima
            ),
            ["input_ids", "position", *names],
        )


def local_window(config: LlmConfig, shape: LlmShape) -> int | None:
    """The window W of the sliding layers' own ring cache [L, Hkv, W, D],
    where it is smaller than the context (None: they share the full
    cache). Needs prefill ≤ W, so that one call's rows fit the ring."""
    window = config.sliding_window
    if window is None or not config.sliding_layers or window >= shape.context:
        return None
    return window if shape.prefill <= window else None


def prompt_calls(
    length: int, prefill: int, window: int | None
) -> list[tuple[str, int, int]]:
    """The calls that run a prompt of `length` tokens: (function, start,
    count), prefill once per `prefill` tokens (chunked prefill) and the last
    chunk padded; with a ring of `window` (local_window), padding rows
    would overwrite slots later tokens still read unless the padded call
    ends within the first window (start + prefill ≤ W), so a shorter last
    chunk past it runs through decode, a token per call."""
    calls = []
    for start in range(0, length, prefill):
        count = min(prefill, length - start)
        if count == prefill or window is None or start + prefill <= window:
            calls.append(("prefill", start, count))
        else:
            calls += [("decode", p, 1) for p in range(start, length)]
    return calls


def cache_layers(config: LlmConfig, shape: LlmShape) -> dict[str, list[int]]:
    """The layers of shape.layers in each cache state, in order: sliding
    layers in `local_*` when they have a ring (local_window), the others in
    `key_cache` / `value_cache`; a state without layers is absent."""
    first, end = shape.layers or (0, config.num_layers)
    ring = local_window(config, shape) is not None
    local = [i for i in range(first, end) if ring and i in config.sliding_layers]
    full = [i for i in range(first, end) if i not in local]
    by_state = {
        "key_cache": full,
        "value_cache": full,
        "local_key_cache": local,
        "local_value_cache": local,
    }
    return {name: layers for name, layers in by_state.items() if layers}


def cache_shapes(config: LlmConfig, shape: LlmShape) -> dict[str, tuple[int, ...]]:
    """The cache states' shapes [layers, Hkv, positions, D] by name: the
    context's positions, or the window's in the ring."""
    window = local_window(config, shape)
    return {
        name: (
            len(layers),
            config.num_kv_heads,
            window if name.startswith("local") else shape.context,
            config.head_dim,
        )
        for name, layers in cache_layers(config, shape).items()
        if shape.part in ("all", "layers")
    }


def build_llm(config: LlmConfig, shape: LlmShape) -> builtin.ModuleOp:
    """The module with `prefill` (shape.prefill tokens) and `decode` (one)."""
    b = LlmBuilder(config, shape)
    functions = [b.function("prefill", shape.prefill), b.function("decode", 1)]
    for f in functions:  # the names of the record's "outputs"
        ane.record_result_names(f, output_names(config, shape))
    return builtin.ModuleOp(functions)


def output_names(config: LlmConfig, shape: LlmShape) -> list[str]:
    if shape.part in ("embed", "layers"):
        return ["hidden_states"]
    # stream_max_0: the embedding's; stream_max_i: after layer i − 1
    count = config.num_layers + 1
    probes = [f"stream_max_{i}" for i in range(count)] if shape.probe else []
    if shape.argmax:
        return ["next_token", *probes]
    parts = chunks(config.vocab_size, shape.chunk)
    logits = (
        ["logits"] if len(parts) == 1 else [f"logits_{i}" for i in range(len(parts))]
    )
    return logits + probes


def llm_weights(
    checkpoint: Checkpoint, config: LlmConfig, shape: LlmShape, module: builtin.ModuleOp
) -> dict[str, np.ndarray]:
    """Every weight the module's params name: checkpoint tensors (shapes
    checked against the config), chunks of the embedding and the head, and
    the RoPE tables. The checkpoint's tensors are not read here: each is a
    `CheckpointTensor` (rows of one for a chunk, scaled by stream_scale
    where it applies), read where it is used, so that the weights are never
    all in memory."""
    weights: dict[str, Any] = {}  # arrays and CheckpointTensors
    for kind, prefix in ROPE_TABLES.items():
        cos, sin = rope_tables(config, shape.context, local=kind == "sliding")
        weights |= {f"{prefix}.cos": cos, f"{prefix}.sin": sin}
    tables: dict[str, Any] = {}
    for op in module.walk():
        if not isinstance(op, rlx.ParamOp) or op.param_name.data in weights:
            continue
        name = op.param_name.data
        if name.endswith("]"):
            base, rows = name[:-1].split("[")
            start, end = (int(v) for v in rows.split(":"))
            if base not in tables:
                tables[base] = checkpoint.lazy(
                    base, (config.vocab_size, config.hidden_size)
                )
            weights[name] = tables[base].rows(start, end)
        else:
            weights[name] = checkpoint.lazy(name, shape_of(op.result))
    used = {op.param_name.data for op in module.walk() if isinstance(op, rlx.ParamOp)}
    scale = config.stream_scale
    return {
        k: v.scaled(scale) if scale and k in scaled_weights(config) else v
        for k, v in weights.items()
        if k in used
    }


def scaled_weights(config: LlmConfig) -> set[str]:
    """The checkpoint tensors a stream_scale multiplies: the weights and
    biases that end each branch (o_proj, down_proj) where no norm follows
    them."""
    if config.stream_scale is None or config.sandwich_norms or config.post_norms:
        return set()
    return {
        config.weight_name(f"model.layers.{layer}.{projection}.{kind}")
        for layer in range(config.num_layers)
        for projection in ("self_attn.o_proj", "mlp.down_proj")
        for kind in ("weight", "bias")
    }


HARMLESS = ("rotary_emb.inv_freq",)
"""Checkpoint tensors that transformers ignores on load and recomputes
(older checkpoints saved RoPE's inverse frequencies, per layer or once)."""

LAYER_TENSOR = re.compile(r"model\.layers\.(\d+)\.(.+)")


def read_names(modules: list[builtin.ModuleOp]) -> set[str]:
    """The checkpoint tensors the modules' params read (a chunk view
    `name[start:end]` reads `name`)."""
    return {
        op.param_name.data.split("[")[0]
        for module in modules
        for op in module.walk()
        if isinstance(op, rlx.ParamOp)
    }


def check_all_used(
    checkpoint: Checkpoint, config: LlmConfig, modules: list[builtin.ModuleOp]
) -> None:
    """Every tensor of the checkpoint is read by one of `modules` (or is
    HARMLESS), so a tensor the config does not account for (a layer past
    num_hidden_layers, a bias the config turns off) is an error naming it,
    not silently dropped. A tied checkpoint may also hold lm_head.weight
    when it equals the embedding table."""
    used = read_names(modules)
    unused = [
        n for n in checkpoint.tensors if n not in used and not n.endswith(HARMLESS)
    ]
    head, embed = config.weight_name("lm_head.weight"), config.weight_name(EMBED)
    if config.tied and head in unused:
        if checkpoint.equal(head, embed):
            unused.remove(head)
    if not unused:
        return
    name = unused[0]
    more = f"; {len(unused) - 1} more tensors are not used" if len(unused) > 1 else ""
    raise XdslAneError(
        f"{checkpoint.directory}: tensor '{name}' is not used "
        f"({unused_reason(config, name)}){more}"
    )


def unused_reason(config: LlmConfig, name: str) -> str:
    """Which config field leaves tensor `name` out."""
    layer = LAYER_TENSOR.fullmatch(name)
    if layer and int(layer[1]) >= config.num_layers:
        return f"num_hidden_layers is {config.num_layers}"
    if name == "lm_head.weight" and config.tied:
        return f"tie_word_embeddings is true and it differs from {EMBED}"
    family = next(f for f in FAMILIES.values() if f.name == config.family)
    if layer and layer[2].endswith(".bias"):
        projection = layer[2].removesuffix(".bias")
        if projection in QKV + OUT and family.attention_bias:
            return "attention_bias is false"
        if projection in MLP and family.mlp_bias:
            return "mlp_bias is false"
        return f"a {family.name} model has no bias on {projection}"
    return f"a {family.name} model of this config.json has no such tensor"


FP16_HEADROOM = 16384.0
"""The largest |hidden state| the fp16 program may carry: a quarter of
fp16's 65504, for the sums inside a layer."""


def calibration_prompts(config: LlmConfig, shape: LlmShape) -> list[list[int]]:
    """Two prompts of `prefill` ids, drawn from a fixed seed."""
    rng = np.random.default_rng(0)
    return [
        [int(t) for t in rng.integers(0, config.vocab_size, shape.prefill)]
        for _ in range(2)
    ]


def residual_maxima(
    checkpoint: Checkpoint,
    config: LlmConfig,
    shape: LlmShape,
    prompts: list[list[int]],
) -> list[float]:
    """The largest |hidden state| over `prompts` of the embedding and after
    each layer (num_layers + 1 values), from the fp32 program
    (shape.probe) in the interpreter, prefill calls as the package makes
    them. With RoPE (the stream is the embedding's output) the program
    runs a part at a time, the embedding and then each layer over every
    prompt (`part_maxima`), so that one layer's weights are in memory at
    a time rather than all of them."""
    if config.rope:
        return part_maxima(checkpoint, config, shape, prompts)
    return probe_maxima(checkpoint, config, shape, prompts)


def probe_maxima(
    checkpoint: Checkpoint,
    config: LlmConfig,
    shape: LlmShape,
    prompts: list[list[int]],
) -> list[float]:
    """`residual_maxima` from the whole fp32 probe program (every weight
    in memory): the reference `part_maxima` agrees with."""
    from xdsl_ane.interpreter.core import StatefulRuntime

    probe = replace(shape, probe=True, argmax=False, part="all", layers=None)
    module = build_llm(config, probe)
    weights = llm_weights(checkpoint, config, probe, module)
    count = config.num_layers + 1
    maxima = np.zeros(count)
    for prompt in prompts:
        runtime = StatefulRuntime(module, weights)  # a fresh cache each
        for start in range(0, len(prompt), shape.prefill):
            ids = np.zeros(shape.prefill, np.int32)
            part = prompt[start : start + shape.prefill]
            ids[: len(part)] = part
            out = runtime.call("prefill", [ids, np.array([start], np.int32)])
            seen = [float(o.reshape(-1)[0]) for o in out[-count:]]
            maxima = np.maximum(maxima, seen)
    if not np.all(np.isfinite(maxima)):
        first = int(np.flatnonzero(~np.isfinite(maxima))[0])
        check_finite_weights(weights, first)
    return [float(m) for m in maxima]


def part_maxima(
    checkpoint: Checkpoint,
    config: LlmConfig,
    shape: LlmShape,
    prompts: list[list[int]],
) -> list[float]:
    """`residual_maxima` a part at a time: the embedding's program over
    every prompt's prefill calls, then each layer's over the hidden states
    the one before gave (a fresh cache per prompt), the largest |x| of each
    part's output kept."""
    from xdsl_ane.interpreter.core import StatefulRuntime

    base = replace(shape, probe=False, argmax=False)
    calls = [  # (prompt, position, input_ids)
        (p, start, np.array(prompt[start : start + shape.prefill], np.int32))
        for p, prompt in enumerate(prompts)
        for start in range(0, len(prompt), shape.prefill)
    ]
    parts = [("embed", None)]
    parts += [("layers", (i, i + 1)) for i in range(config.num_layers)]
    hidden: list[np.ndarray] = []
    maxima = []
    spare: dict[tuple[Any, ...], list[np.ndarray]] = {}
    for part, layers in parts:
        part_shape = replace(base, part=part, layers=layers)
        if part == "embed":
            module, weights, renumbered = embedding_rows(
                checkpoint, config, base, calls
            )
        else:
            module = build_llm(config, part_shape)
            weights, spare = read_reusing(
                llm_weights(checkpoint, config, part_shape, module), spare
            )
        runtimes: dict[int, StatefulRuntime] = {}
        largest = 0.0
        for i, (p, start, _) in enumerate(calls):
            runtime = runtimes.setdefault(p, StatefulRuntime(module, weights))
            if part == "embed":
                (out,) = runtime.call("prefill", [renumbered[i]])
                hidden.append(out)
            else:
                position = np.array([start], np.int32)
                (out,) = runtime.call("prefill", [hidden[i], position])
                hidden[i] = out
            # np.max, not max(): a NaN must carry on to the check
            largest = float(np.max([largest, np.abs(out).max()]))
        if not np.isfinite(largest):
            check_finite_weights(weights, len(maxima))
        maxima.append(largest)
        del module, weights, runtimes
    return maxima


def check_finite_weights(weights: dict[str, Any], index: int) -> None:
    """Fails naming a checkpoint tensor among `weights` that holds a NaN or
    inf, which is why the hidden states of maxima[index] (`stream_name`)
    are not finite."""
    for name, value in weights.items():
        if isinstance(value, LazyWeight) and value.shape:
            array = np.empty(value.shape, value.dtype)
            value.convert_into(array.reshape(-1), None)
            value = array
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            bad = value[~np.isfinite(value)]
            if bad.size:
                raise XdslAneError(
                    f"checkpoint tensor '{name}' holds {bad.size} non-finite "
                    f"value(s) ({bad.flat[0]}), so {stream_name(index)}'s hidden "
                    "states are not finite"
                )


def embedding_rows(
    checkpoint: Checkpoint,
    config: LlmConfig,
    shape: LlmShape,
    calls: list[tuple[int, int, np.ndarray]],
) -> tuple[builtin.ModuleOp, dict[str, Any], list[np.ndarray]]:
    """The embedding's program for `part_maxima` over a table of just the
    rows the calls read (the prefill's padding id 0 among them), and each
    call's ids renumbered into it: the same values as the whole table's
    program (a gather, then the family's scales), without widening a
    vocabulary's rows to float32 for a few hundred ids."""
    used = sorted({0, *(int(t) for _, _, ids in calls for t in ids)})
    index = {t: i for i, t in enumerate(used)}
    rows = replace(config, vocab_size=len(used))
    module = build_llm(rows, replace(shape, part="embed", layers=None))
    name = config.weight_name(EMBED)  # the family's own (gpt_neox.embed_in)
    table = checkpoint.lazy(name, (config.vocab_size, config.hidden_size))
    weights = {name: np.concatenate([table.read_rows(t, t + 1) for t in used])}
    renumbered = []
    for _, _, ids in calls:
        padded = np.zeros(shape.prefill, np.int32)
        padded[: len(ids)] = [index[int(t)] for t in ids]
        renumbered.append(padded)
    return module, weights, renumbered


def read_reusing(
    weights: dict[str, Any], spare: dict[tuple[Any, ...], list[np.ndarray]]
) -> tuple[dict[str, Any], dict[tuple[Any, ...], list[np.ndarray]]]:
    """`weights` with each checkpoint tensor read once (for every call of
    a part's program, not at each), into an array of `spare` of its shape
    and dtype where there is one (the part before's, whose layers are the
    same shapes), and the arrays now held, to be spare for the next part:
    so calibrating allocates about one layer's weights once rather than
    each layer's (fresh pages fault in slowly while the page cache is
    full of the checkpoint)."""
    held: dict[tuple[Any, ...], list[np.ndarray]] = {}
    read = {}
    for name, value in weights.items():
        if isinstance(value, LazyWeight) and value.shape:
            key = (value.shape, value.dtype)
            free = spare.get(key)
            array = free.pop() if free else np.empty(value.shape, value.dtype)
            value.convert_into(array.reshape(-1), None)
            held.setdefault(key, []).append(array)
            value = array
        read[name] = value
    return read, held


def fp16_rescaled(config: LlmConfig, maxima: list[float], where: str) -> LlmConfig:
    """`config` made safe in fp16 from the calibration's `maxima` (the
    embedding's, then after each layer): where the stream passes
    FP16_HEADROOM it is carried times α = 2^−k (stream_scale); where a
    stream RMSNorm would square values past NORM_HEADROOM its input is
    divided by s = 2^j first (norm_input_scales). Both are exact in
    floating point and leave the outputs unchanged. A family whose layers
    read the stream without a norm first (post_norms) cannot be rescaled
    so: the error names the layer."""
    if not all(np.isfinite(m) for m in maxima):
        layer = next(i for i, m in enumerate(maxima) if not np.isfinite(m))
        raise XdslAneError(
            f"{where}: {stream_name(layer)}'s hidden states are not finite in float32"
        )
    largest = max(maxima, default=0.0)
    alpha = 1.0
    if largest > FP16_HEADROOM:
        if config.post_norms:
            layer = maxima.index(largest)
            raise XdslAneError(
                f"{where}: {stream_name(layer)}'s hidden states reach {largest:.4g}, "
                f"past fp16's range (65504; {FP16_HEADROOM:g} with headroom), and "
                f"the layers of {config.family} read them without a norm, so no "
                "rescaling leaves its outputs unchanged"
            )
        alpha = 2.0 ** -math.ceil(math.log2(largest / FP16_HEADROOM))
    # layer L's first norm reads the stream entering it (maxima[L]), its
    # second the stream after attention (maxima[L + 1] the closest measured;
    # the input with a parallel residual), the final norm maxima[-1]
    second = maxima[:-1] if config.parallel_residual else maxima[1:]
    reads = [m for pair in zip(maxima[:-1], second) for m in pair] + [maxima[-1]]
    scales = tuple(
        2.0 ** math.ceil(math.log2(m * alpha / NORM_HEADROOM))
        if m * alpha > NORM_HEADROOM
        else 1.0
        for m in reads
    )
    if alpha == 1.0 and all(s == 1.0 for s in scales):
        return config
    return replace(
        config,
        stream_scale=None if alpha == 1.0 else alpha,
        norm_input_scales=() if all(s == 1.0 for s in scales) else scales,
    )


NORM_HEADROOM = 128.0
"""The largest |x| an RMSNorm squares in fp16 (128² = 16384, a quarter of
65504, for the mean)."""


def stream_name(index: int) -> str:
    """maxima[index]'s place: the embedding or a layer's output."""
    return "the embedding" if index == 0 else f"layer {index - 1}"
