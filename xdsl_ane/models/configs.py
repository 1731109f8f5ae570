"""The one description of a decoder (`LlmConfig`) and the named
shapes `xdsl-ane compile-model NAME` builds; a module of its own, so that
the command line lists the names without loading the builders."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


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
    """q, k, v are one projection `self_attn.qkv_proj` ([q; k; v] rows)
    (Phi-3, GPT-NeoX, GPT-2)."""
    gate_up: bool = False
    """gate and up are one projection `mlp.gate_up_proj` ([gate; up])
    (Phi-3, GLM)."""
    o_bias: bool = True
    """`attention_bias` puts a bias on o_proj too (false: GLM's, on q, k
    and v only)."""
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
    o_bias_switch: str | None = None
    """A field (default false) that puts a bias on o_proj (Seed-OSS's
    `attention_out_bias`), whatever `attention_bias` says."""
    nope_full_layers: bool = False
    """With `sliding_window` set, the full-attention layers have no RoPE,
    the sliding ones do (EXAONE 4)."""
    query_position_scale: bool = False
    """Queries at position p are scaled by 1 + β·log(1 + ⌊p / P⌋), β
    `rope_parameters.llama_4_scaling_beta`, P its
    `original_max_position_embeddings` (Ministral 3): 1 below P."""
    default_window: int | None = None
    """The config class's `sliding_window` where config.json leaves it out
    (None: no window; Gemma 4's 512)."""
    window_pattern: int | None = None
    """Where `layer_types` is absent: every window_pattern-th layer is full
    and the others slide (`sliding_window_pattern` where the config sets
    it: Gemma 3, EXAONE 4); None: from `max_window_layers` on (Qwen), or
    the layers without RoPE (SmolLM3)."""
    short_convs: bool = False
    """Layers of `layer_types` "conv" (else `full_attn_idxs` says which are
    attention) mix with a gated short convolution instead of attention
    (LFM2): in_proj to B, C, x; C · conv(B · x), a depthwise causal
    convolution of `conv_L_cache` taps; out_proj. Its last taps are state."""
    ssm_mixers: str | None = None
    """Which layers mix with a Mamba2 state-space mixer (`models/ssm.py`)
    instead of attention: "all" (Mamba2), or those of `layer_types`
    "linear_attention" (Granite 4's hybrids)."""
    ssm_fields: tuple[tuple[str, str], ...] = ()
    """The config's names of the mixer's fields, where they are not
    Mamba2's (`num_heads` is Granite 4's `mamba_n_heads`)."""
    mlp: bool = True
    """Each layer has an MLP after its mixer (false: Mamba2's mixer alone)."""
    ffn_field: str = "intermediate_size"
    """The config field of the MLP's width (Granite 4's shared MLP:
    `shared_intermediate_size`)."""
    rope_switch: str | None = None
    """A field whose value "rope" gives the layers RoPE; any other, none
    (Granite 4's `position_embedding_type`)."""
    attention_gate: bool = False
    """q_proj gives each head's query and an output gate [q_h; g_h];
    attention's output times sigmoid(g) before o_proj (Qwen3.5)."""
    delta_nets: bool = False
    """Layers of `layer_types` "linear_attention" mix with a gated
    delta-net (`models/delta_net.py`) instead of attention (Qwen3.5)."""
    ffn_auto_adjust: bool = False
    """With `block_auto_adjust_ff_dim`, the MLP's width is ⅔ of
    `intermediate_size`, times `block_ffn_dim_multiplier`, rounded up to a
    multiple of `block_multiple_of` (LFM2)."""
    defaults: tuple[tuple[str, bool], ...] = ()
    """The family's config-class defaults of flags that default to true
    (Seed-OSS's `attention_bias`), read where config.json leaves them out."""
    sliding_switch: bool = False
    """Without `layer_types`, `use_sliding_window` (default false) turns on
    the window of every layer (Qwen3-MoE)."""
    experts: bool = False
    """The MLP is a mixture of experts (`MoeConfig`): a router `mlp.gate`
    [E, hidden], the top `num_experts_per_tok` of E experts per token, each
    a gated MLP `mlp.experts.{e}.gate_proj` / `up_proj` / `down_proj`."""
    expert_width: str = "intermediate_size"
    """The config field of an expert's width (Qwen3-MoE:
    `moe_intermediate_size`, its dense layers' being `intermediate_size`)."""
    norm_topk_field: bool = False
    """`norm_topk_prob` (default false) renormalizes the top k
    probabilities (Qwen3-MoE, OLMoE); without the field they always are
    (Mixtral, Granite-MoE)."""
    topk_of_logits: bool = False
    """The top k of the router's logits, then a softmax over the k
    (Granite-MoE), not of the softmax over every expert."""
    sparse_layers: bool = False
    """Which layers are MoE: not those of `mlp_only_layers`, and every
    `decoder_sparse_step`-th (Qwen3-MoE); else all of them."""
    expert_layout: str = "rows"
    """How stacked experts are stored (Family.fused_experts): "rows" as
    Granite-MoE's [E, 2F, H] / [E, H, F] (out by in), or "gpt_oss": its
    `mlp.experts.gate_up_proj` [E, H, 2F] (in by out, gate and up
    interleaved), `down_proj` [E, F, H], each with a bias [E, out]."""
    router_bias: bool = False
    """The router has a bias (GPT-OSS's `mlp.router.bias`)."""
    attention_sinks: bool = False
    """Each head has a learned sink logit `self_attn.sinks` in its
    softmax, dropped after it (GPT-OSS)."""
    shared_mlp: bool = False
    """Beside its experts, each layer has the dense MLP, added (Granite 4's
    hybrids' `shared_mlp`); with 0 experts it is the MLP alone."""
    fused_experts: bool = False
    """The experts' weights are stored stacked, `mlp.experts.gate_up_proj`
    [E, 2·width, hidden] ([gate; up] per expert) and
    `mlp.experts.down_proj` [E, hidden, width] (Granite-MoE's
    `input_linear` and `output_linear`), read an expert at a time."""
    experts_switch: str | None = None
    """A field (default false) that turns the mixture of experts on
    (Gemma 4's `enable_moe_block`)."""
    topk_field: str = "num_experts_per_tok"
    """The config field of the experts a token picks (Gemma 4's
    `top_k_experts`)."""
    normed_experts: bool = False
    """Gemma 4's mixture beside the dense MLP (`models/moe.py`,
    `normed_experts`): the router reads the residual stream RMS-normed
    without a weight, times `router.scale` · hidden^−½, and scales each
    picked weight by `router.per_expert_scale`; the experts read
    `pre_feedforward_layernorm_2` of the stream; the dense MLP's and the
    experts' outputs are normed (`post_feedforward_layernorm_1`, `_2`)
    before their sum."""
    unscaled_scores: bool = False
    """Attention's scores are not scaled (scale 1: the QK-norms set their
    size; Gemma 4)."""
    value_norm: bool = False
    """v is RMS-normed over each head without a weight (Gemma 4)."""
    layer_scalar: bool = False
    """Each layer's output, the whole stream, times its `layer_scalar`
    (Gemma 4)."""
    text_config: bool = False
    """A multimodal checkpoint read for its text decoder: the fields are
    config.json's `text_config`, the image, video and audio placeholders
    are embedded as padding (as the multimodal model embeds them without
    their media) and the tensors of `other_towers` are not read."""
    other_towers: tuple[str, ...] = ()
    """Name prefixes of the checkpoint's tensors of the other modalities'
    encoders (Family.text_config)."""
    layer_fields: bool = False
    """Gemma 4's per-layer fields (`models/layer_fields.py`): the full
    layers' own head size and KV heads (`global_head_dim`,
    `num_global_key_value_heads` or `per_layer_config`), keys that are the
    values there too (`attention_k_eq_v`), the last layers reading an
    earlier layer's keys and values (`num_kv_shared_layers`) with MLPs
    twice as wide (`use_double_wide_mlp`), per-layer inputs
    (`hidden_size_per_layer_input`); the last layer always full."""


FAMILIES = {
    "Qwen3ForCausalLM": Family(
        "qwen3", qk_norm=True, attention_bias=True, layer_types=True
    ),
    "Qwen2ForCausalLM": Family("qwen2", qkv_bias=True, layer_types=True),
    "LlamaForCausalLM": Family("llama", attention_bias=True, mlp_bias=True),
    "MistralForCausalLM": Family("mistral"),
    "Phi3ForCausalLM": Family("phi3", fused=True, gate_up=True, partial_rotary=True),
    "GlmForCausalLM": Family(
        "glm",
        attention_bias=True,
        o_bias=False,
        gate_up=True,
        partial_rotary=True,
        rope_style="interleaved",
    ),
    "Glm4ForCausalLM": Family(
        "glm4",
        attention_bias=True,
        o_bias=False,
        gate_up=True,
        partial_rotary=True,
        rope_style="interleaved",
        sandwich_norms=True,
        renames=(
            ("post_attention_layernorm.", "post_self_attn_layernorm."),
            ("pre_feedforward_layernorm.", "post_attention_layernorm."),
            ("post_feedforward_layernorm.", "post_mlp_layernorm."),
        ),
    ),
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
    "Olmo3ForCausalLM": Family(
        "olmo3",
        window_pattern=4,
        attention_bias=True,
        post_norms=True,
        projection_qk_norm=True,
        layer_types=True,
        window_switch=False,
    ),
    "Exaone4ForCausalLM": Family(
        "exaone4",
        window_pattern=4,
        qk_norm=True,
        post_norms=True,
        layer_types=True,
        window_switch=False,
        nope_full_layers=True,
    ),
    "SeedOssForCausalLM": Family(
        "seed_oss",
        attention_bias=True,
        o_bias=False,
        o_bias_switch="attention_out_bias",
        mlp_bias=True,
        defaults=(("attention_bias", True),),
    ),
    "Ministral3ForCausalLM": Family("ministral3", query_position_scale=True),
    "Lfm2ForCausalLM": Family(
        "lfm2",
        qk_norm=True,
        short_convs=True,
        ffn_auto_adjust=True,
        renames=(
            ("model.norm.", "model.embedding_norm."),
            ("input_layernorm.", "operator_norm."),
            ("post_attention_layernorm.", "ffn_norm."),
            ("self_attn.o_proj.", "self_attn.out_proj."),
            ("self_attn.q_norm.", "self_attn.q_layernorm."),
            ("self_attn.k_norm.", "self_attn.k_layernorm."),
            ("mlp.gate_proj.", "feed_forward.w1."),
            ("mlp.up_proj.", "feed_forward.w3."),
            ("mlp.down_proj.", "feed_forward.w2."),
        ),
        aliases=(("rms_norm_eps", "norm_eps"),),
    ),
    "Mamba2ForCausalLM": Family(
        "mamba2",
        ssm_mixers="all",
        mlp=False,
        rope=False,
        renames=(
            ("model.embed_tokens.", "backbone.embeddings."),
            ("model.layers.", "backbone.layers."),
            ("model.norm.", "backbone.norm_f."),
            ("input_layernorm.", "norm."),
        ),
        aliases=(
            ("num_attention_heads", "num_heads"),
            ("rms_norm_eps", "layer_norm_epsilon"),
        ),
    ),
    "GraniteMoeHybridForCausalLM": Family(
        "granitemoehybrid",
        multipliers=True,
        attention_bias=True,
        ssm_mixers="layer_types",
        gate_up=True,
        ffn_field="shared_intermediate_size",
        rope_switch="position_embedding_type",
        experts=True,
        shared_mlp=True,
        topk_of_logits=True,
        fused_experts=True,
        renames=(
            ("mixer.", "mamba."),
            ("mlp.gate.", "block_sparse_moe.router.layer."),
            ("mlp.experts.gate_up_proj.", "block_sparse_moe.input_linear."),
            ("mlp.experts.down_proj.", "block_sparse_moe.output_linear."),
            ("mlp.gate_up_proj.", "shared_mlp.input_linear."),
            ("mlp.down_proj.", "shared_mlp.output_linear."),
        ),
        ssm_fields=(
            ("num_heads", "mamba_n_heads"),
            ("head_dim", "mamba_d_head"),
            ("state_size", "mamba_d_state"),
            ("n_groups", "mamba_n_groups"),
            ("conv_kernel", "mamba_d_conv"),
            ("expand", "mamba_expand"),
            ("use_conv_bias", "mamba_conv_bias"),
            ("use_bias", "mamba_proj_bias"),
            ("layer_norm_epsilon", "rms_norm_eps"),
        ),
    ),
    "Qwen3_5ForCausalLM": Family(
        "qwen3_5",
        qk_norm=True,
        attention_bias=True,
        unit_offset_norms=True,
        partial_rotary=True,
        attention_gate=True,
        delta_nets=True,
    ),
    "GptOssForCausalLM": Family(
        "gpt_oss",
        attention_bias=True,
        layer_types=True,
        window_switch=False,
        window_pattern=2,
        attention_sinks=True,
        experts=True,
        topk_of_logits=True,
        fused_experts=True,
        expert_layout="gpt_oss",
        router_bias=True,
        renames=(("mlp.gate.", "mlp.router."),),
    ),
    "ApertusForCausalLM": Family(
        "apertus",
        qk_norm=True,
        attention_bias=True,
        gated_mlp=False,
        renames=(
            ("input_layernorm.", "attention_layernorm."),
            ("post_attention_layernorm.", "feedforward_layernorm."),
        ),
    ),
    "Qwen3MoeForCausalLM": Family(
        "qwen3_moe",
        qk_norm=True,
        attention_bias=True,
        sliding_switch=True,
        experts=True,
        expert_width="moe_intermediate_size",
        norm_topk_field=True,
        sparse_layers=True,
    ),
    "MixtralForCausalLM": Family(
        "mixtral",
        experts=True,
        renames=(
            ("mlp.", "block_sparse_moe."),
            ("gate_proj.", "w1."),
            ("up_proj.", "w3."),
            ("down_proj.", "w2."),
        ),
    ),
    "OlmoeForCausalLM": Family(
        "olmoe",
        attention_bias=True,
        projection_qk_norm=True,
        experts=True,
        norm_topk_field=True,
    ),
    "GraniteMoeForCausalLM": Family(
        "granitemoe",
        attention_bias=True,
        multipliers=True,
        experts=True,
        topk_of_logits=True,
        fused_experts=True,
        renames=(
            ("mlp.gate.", "block_sparse_moe.router.layer."),
            ("mlp.experts.gate_up_proj.", "block_sparse_moe.input_linear."),
            ("mlp.experts.down_proj.", "block_sparse_moe.output_linear."),
        ),
    ),
    "GemmaForCausalLM": Family(
        "gemma", attention_bias=True, unit_offset_norms=True, scaled_embedding=True
    ),
    "Gemma2ForCausalLM": Family(
        "gemma2",
        window_pattern=2,
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
        window_pattern=6,
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
    "Gemma4ForCausalLM": Family(
        "gemma4_text",
        window_pattern=6,
        default_window=512,
        qk_norm=True,
        attention_bias=True,
        layer_types=True,
        window_switch=False,
        scaled_embedding=True,
        sandwich_norms=True,
        activation_field="hidden_activation",
        unscaled_scores=True,
        value_norm=True,
        layer_scalar=True,
        layer_fields=True,
        experts=True,
        experts_switch="enable_moe_block",
        topk_field="top_k_experts",
        expert_width="moe_intermediate_size",
        fused_experts=True,
        normed_experts=True,
        defaults=(("tie_word_embeddings", True),),
        renames=(
            ("mlp.experts.gate_up_proj.weight", "experts.gate_up_proj"),
            ("mlp.experts.down_proj.weight", "experts.down_proj"),
        ),
    ),
}
FAMILIES["Gemma4ForConditionalGeneration"] = replace(
    FAMILIES["Gemma4ForCausalLM"],
    name="gemma4",
    text_config=True,
    renames=(
        *FAMILIES["Gemma4ForCausalLM"].renames,
        ("model.", "model.language_model."),
    ),
    other_towers=(
        "model.vision_tower.",
        "model.audio_tower.",
        "model.embed_vision.",
        "model.embed_audio.",
    ),
)
"""Gemma 4's multimodal checkpoints (as Google publishes them), read for
their text decoder."""


@dataclass(frozen=True)
class SsmShape:
    """A Mamba2 mixer's sizes and switches (Mamba2Config)."""

    heads: int
    head_dim: int
    state_size: int
    groups: int
    conv_taps: int
    inner: int
    """expand · hidden = heads · head_dim."""
    eps: float
    dt_limit: tuple[float, float] = (0.0, float("inf"))

    @property
    def conv_width(self) -> int:
        return self.inner + 2 * self.groups * self.state_size

    @property
    def projection(self) -> int:
        return self.inner + self.conv_width + self.heads


@dataclass(frozen=True)
class DeltaShape:
    """A gated delta-net's sizes (Qwen3.5's `linear_*` fields)."""

    k_heads: int
    v_heads: int
    k_dim: int
    v_dim: int
    conv_taps: int
    eps: float

    @property
    def conv_width(self) -> int:
        return 2 * self.k_heads * self.k_dim + self.v_heads * self.v_dim


EXPERTS = ("dense", "routed")
"""How compile-llm computes a mixture of experts (`--experts`): every
expert on every token, or only the routed ones (not built yet)."""


FAMILY_FIELDS = frozenset(Family.__dataclass_fields__) - {"name"}
"""The flags a `LlmConfig.with_` change sets on the family."""


@dataclass(frozen=True)
class MoeConfig:
    """A mixture-of-experts MLP (Family.experts): per token, the router's
    logits r = h · Gᵀ over E experts; the top k of softmax(r) (of r where
    `topk_of_logits`), their probabilities renormalized to sum to 1 where
    `renormalize` (softmax over the k logits is the same); the output
    Σ_e w_e · expert_e(h), w_e zero for the experts not picked."""

    experts: int
    top_k: int
    ffn_size: int
    """Each expert's width."""
    renormalize: bool
    topk_of_logits: bool
    layers: frozenset[int]
    """The layers whose MLP is MoE (the others: the dense MLP)."""
    swiglu: tuple[float, float] | None = None
    """GPT-OSS's expert activation (α, limit): gate clamped to ≤ limit, up
    to [−limit, limit], (up + 1) · gate · sigmoid(α · gate); None: the
    config's activation, gated."""


@dataclass(frozen=True)
class LlmConfig:
    """One decoder, its MLP dense or a mixture of experts: what `llm_config`
    reads from a checkpoint's config.json (its family's row of
    `models.hf_config.FAMILIES`) or a named shape of CONFIGS. The one
    builder, `models.llm.LlmBuilder`, builds every program of it from
    this: compile-llm's stateful prefill and decode, compile-model's
    stateless stack and the training kernels' weights and RoPE tables."""

    family: Family
    """The family's row of FAMILIES: how its architecture differs from
    Llama's (norms, projections, RoPE, weight names)."""
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
    biases: frozenset[str] = frozenset()
    """Projections with a bias, by their name in a layer (`self_attn.q_proj`,
    `mlp.down_proj`)."""
    activation: str = "silu"
    """The MLP's gate activation (an ACTIVATIONS name, or XIELU)."""
    sliding_window: int | None = None
    """The window of the layers with sliding attention (None: none slide)."""
    attention_scale: float | None = None
    """Attention's scale where it is not head_dim^−½."""
    final_softcap: float | None = None
    """Logits become cap · tanh(logits / cap) (final_logit_softcapping)."""
    attention_softcap: float | None = None
    """Attention scores become cap · tanh(scores / cap) before the mask
    (attn_logit_softcapping, Gemma 2)."""
    parallel_residual: bool = False
    """Attention and the MLP read the same input (Family.parallel_residual)."""
    rotary_dim: int | None = None
    """The leading dims of each head RoPE rotates (None: all of it)."""
    embedding_multiplier: float | None = None
    """The embedding times this (Granite)."""
    residual_multiplier: float | None = None
    """Each branch times this before its residual add (Granite)."""
    logits_divisor: float | None = None
    """Logits divided by this (Granite's logits_scaling)."""
    nope_layers: frozenset[int] = frozenset()
    """Layers without RoPE (SmolLM3's no_rope_layers, EXAONE 4's full
    layers)."""
    query_scale_from: int | None = None
    """The first position whose queries Ministral 3's position scale
    changes (Family.query_position_scale); every position a program holds
    lies below it (None: no such scale)."""
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
    mrope_section: tuple[int, ...] | None = None
    """Multimodal RoPE (Qwen2-VL): the rotated half-dims in three runs,
    each rotated by its own position axis (temporal, height, width) of
    the `rope_position` input; None: one position per token."""
    sliding_layers: frozenset[int] = frozenset()
    """The layers whose attention slides (key j visible to query i iff
    i − window < j ≤ i, transformers' sliding_window_overlay)."""
    moe: MoeConfig | None = None
    """The mixture-of-experts MLP of the layers it lists (None: none)."""
    global_heads: tuple[int, int] | None = None
    """(KV heads, head dim) of the layers that do not slide, where they
    differ from num_kv_heads and head_dim (Gemma 4's full layers)."""
    keys_as_values: bool = False
    """The layers of global_heads have no v_proj: their values are the
    keys' projection, before k's norm (attention_k_eq_v)."""
    kv_sources: tuple[tuple[int, int], ...] = ()
    """(layer, source) pairs: the layer has no keys and values of its own
    and attends over those of the earlier layer `source`, of its kind
    (num_kv_shared_layers)."""
    wide_layers: frozenset[int] = frozenset()
    """The layers whose MLP is twice ffn_size wide (use_double_wide_mlp)."""
    per_layer_width: int | None = None
    """P, the width of each layer's input from the per-layer embedding
    (hidden_size_per_layer_input; `models/per_layer_inputs.py`); None:
    none."""
    per_layer_vocab: int = 0
    """The per-layer embedding's rows (vocab_size_per_layer_input)."""
    padded_ids: tuple[int, ...] = ()
    """Token ids embedded as `pad_id` (the image, video and audio
    placeholders of a multimodal checkpoint read for its text)."""
    pad_id: int = 0

    ssm: SsmShape | None = None
    """A Mamba2 mixer's sizes (Family.ssm_mixers; `models/ssm.py`)."""
    ssm_layers: frozenset[int] = frozenset()
    """The layers that mix with it."""
    delta: DeltaShape | None = None
    """A gated delta-net's sizes (Family.delta_nets; `models/delta_net.py`)."""
    delta_layers: frozenset[int] = frozenset()
    """The layers that mix with it."""
    conv_layers: frozenset[int] = frozenset()
    """The layers that mix with a short convolution, not attention
    (Family.short_convs)."""
    conv_taps: int = 3
    """The short convolution's taps (`conv_L_cache`): its state holds the
    last taps − 1 rows of its input."""
    xielu_constants: tuple[float, float] | None = None
    """(β, ε) of xIELU, the same in every layer, as the training kernels
    (shared by the layers) hold them; read from the checkpoint by
    `train`. None: not read (the decoder builder reads each layer's)."""

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
        for ours, theirs in self.family.renames:
            name = name.replace(ours, theirs)
        return name

    @property
    def recurrent(self) -> bool:
        """Whether the decoder has recurrent state beside its KV cache
        (short convolutions, state-space mixers): a prompt's padded chunk
        would enter it."""
        return bool(self.conv_layers or self.ssm_layers or self.delta_layers)

    def position_problem(self, count: int) -> str | None:
        """Why a program of `count` positions is more than the model takes
        (None: it is not)."""
        if count > self.max_positions:
            return f"is beyond the model's max_position_embeddings {self.max_positions}"
        if self.query_scale_from is not None and count > self.query_scale_from:
            return (
                "is beyond rope_parameters.original_max_position_embeddings "
                f"{self.query_scale_from}, past which the model scales its queries "
                "(llama_4_scaling_beta), which is not supported"
            )
        return None

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    def heads_of(self, layer: int) -> tuple[int, int]:
        """(KV heads, head dim) of layer `layer`'s attention."""
        if self.global_heads is not None and layer not in self.sliding_layers:
            return self.global_heads
        return self.num_kv_heads, self.head_dim

    def kv_source(self, layer: int) -> int | None:
        """The earlier layer whose keys and values layer `layer` reads
        (None: its own)."""
        return dict(self.kv_sources).get(layer)

    def ffn_of(self, layer: int) -> int:
        """The width of layer `layer`'s dense MLP."""
        return 2 * self.ffn_size if layer in self.wide_layers else self.ffn_size

    def rotated_of(self, local: bool) -> int:
        """The dims of each head RoPE rotates in the sliding layers
        (`local`) or the others."""
        if self.global_heads is not None and not local:
            return self.global_heads[1]
        return self.rotated

    @property
    def own_local_rope(self) -> bool:
        """Whether the sliding layers read RoPE tables of their own: another
        RoPE, or heads of another size."""
        return self.local_rope is not None or self.global_heads is not None

    def with_(self, **changes: Any) -> LlmConfig:
        """A copy with `changes`, the family's flags among them."""
        family = {k: changes.pop(k) for k in list(changes) if k in FAMILY_FIELDS}
        if family:
            changes["family"] = replace(self.family, **family)
        return replace(self, **changes)


QWEN3_0_6B = LlmConfig(
    family=FAMILIES["Qwen3ForCausalLM"],
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
)
"""Qwen3-0.6B's shape (its config.json), at sequence 256."""

CONFIGS = {"qwen3-0.6b": QWEN3_0_6B}
