"""Reading a Hugging Face decoder's config.json with the architecture
table: `FAMILIES` (one row per transformers class and how it differs),
`llm_config` (every field that changes the math honoured or refused in one
line naming it; IGNORED_FIELDS lists those that do not) and the checks of
the checkpoint's tables against it."""

from __future__ import annotations

import math
from typing import Any

from xdsl_ane.dialects import rlx
from xdsl_ane.errors import XdslAneError
from xdsl_ane.models.configs import (
    FAMILIES,
    DeltaShape,
    Family,
    LlmConfig,
    MoeConfig,
    SsmShape,
)
from xdsl_ane.models.layer_fields import layer_fields
from xdsl_ane.models.xielu import XIELU
from xdsl_ane.weights.checkpoint import Checkpoint

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
the same function; any other name but XIELU (Apertus's, with learned
parameters: models/xielu.py) is refused."""


ROPE_TYPES = ("default", "linear", "llama3", "yarn", "longrope", "proportional")


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
    "time_step_rank": "Mamba2's mixer does not read it",
    "time_step_min": "initialization only",
    "time_step_max": "initialization only",
    "time_step_floor": "initialization only",
    "rescale_prenorm_residual": "initialization only",
    "chunk_size": "how the reference kernel splits the same sums; a prefill call "
    "here is one chunk",
    "mamba_chunk_size": "how the reference kernel splits the same sums; a "
    "prefill call here is one chunk",
    "residual_in_fp32": "the residual's precision in half-precision runs of "
    "transformers; the programs here are fp32, or fp16 with calibrated scales",
    "router_aux_loss_coef": "training only: the weight of the experts' "
    "load-balancing loss",
    "output_router_logits": "training only: the router logits for the "
    "load-balancing loss",
    "router_jitter_noise": "training only: Mixtral scales the router's input by "
    "noise in training alone",
    "vision_config": "the image encoder of a multimodal checkpoint, not run for "
    "text (its tensors: Family.other_towers)",
    "audio_config": "the audio encoder of a multimodal checkpoint, not run for text",
    "boi_token_id": "a token of the text vocabulary, embedded as any other",
    "eoi_token_id": "a token of the text vocabulary, embedded as any other",
    "boa_token_id": "a token of the text vocabulary, embedded as any other",
    "eoa_token_index": "a token of the text vocabulary, embedded as any other",
}
"""Fields of the supported families' configs (transformers 5.23) that do not
change what the model computes; every other field of theirs is read by
`llm_config`: honoured, or refused in one line naming it."""


QKV = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")


OUT = ("self_attn.o_proj",)


MLP = ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


CONV = ("conv.in_proj", "conv.conv", "conv.out_proj")
"""A short convolution's projections and convolution (LFM2's `conv_bias`
puts a bias on each)."""


class ConfigReader:
    """Typed fields of config.json; a wrong one is an error naming it."""

    def __init__(
        self,
        config: dict[str, Any],
        where: str,
        aliases: dict[str, str] | None = None,
        defaults: dict[str, bool] | None = None,
        prefix: str = "",
    ):
        self.c, self.where, self.prefix = config, where, prefix
        """`prefix` names the object of config.json that holds the fields
        (`text_config.`), in errors."""
        self.defaults = defaults or {}
        """Flags whose default is true in the family's config class."""
        self.aliases = aliases or {}
        """A family's own names of the fields (GPT-2's `n_embd` for
        `hidden_size`): read, and named in errors, by those."""

    def error(self, name: str, message: str) -> XdslAneError:
        name = self.aliases.get(name, name)
        return XdslAneError(f"{self.where}: field '{self.prefix}{name}' {message}")

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
        if value is None:  # the config class's default: false but for a few
            return self.defaults.get(name, False)
        if not isinstance(value, bool):
            raise self.error(name, f"is {value!r}; expected true or false")
        return value


def llm_config(checkpoint: Checkpoint) -> LlmConfig:
    """The model from config.json. Every field that changes what the model
    computes is honoured, or refused in one line naming it (an unsupported
    architecture lists the supported ones); IGNORED_FIELDS says which do
    not."""
    family, read = config_reader(checkpoint)
    c = read.c
    refuse_unsupported(read)
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
    if not isinstance(activation, str) or activation not in {*ACTIVATIONS, XIELU}:
        raise read.error(
            family.activation_field,
            f"is {activation!r}; supported: " + ", ".join([*ACTIVATIONS, XIELU]),
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
    attention_scale = attention_scale_of(read, family, head_dim)
    multiplier = multipliers(read, family)
    biases = config_biases(read, family)
    rotary_dim = rotary_dim_of(read, family, head_dim)
    window = sliding_window(read, family, num_layers)
    vocab = read.integer("vocab_size")
    per_layer = (
        layer_fields(read, heads, kv_heads, head_dim, vocab, window)
        if family.layer_fields
        else {}
    )
    parallel = family.parallel_residual and c.get("use_parallel_residual", True)
    if not isinstance(parallel, bool):
        raise read.error(
            "use_parallel_residual", f"is {parallel!r}; expected true or false"
        )
    return LlmConfig(
        family=family,
        hidden_size=hidden,
        num_layers=num_layers,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        ffn_size=ffn_size_of(read, family, hidden),
        vocab_size=vocab,
        rms_eps=(
            read.number("layer_norm_eps", 1e-5, positive=True)
            if family.layer_norm
            else read.number("rms_norm_eps", 1e-6, positive=True)
        ),
        rope_theta=theta,
        rope_scaling=scaling,
        max_positions=read.integer("max_position_embeddings", 2**31 - 1),
        tied=read.flag("tie_word_embeddings"),
        biases=frozenset(biases),
        activation=activation,
        parallel_residual=parallel,
        rotary_dim=rotary_dim,
        scale_by_layer=read.flag("scale_attn_by_inverse_layer_idx"),
        embedding_multiplier=multiplier["embedding_multiplier"],
        residual_multiplier=multiplier["residual_multiplier"],
        logits_divisor=multiplier["logits_scaling"],
        nope_layers=nope_layers(read, family, num_layers, window["sliding_layers"]),
        query_scale_from=query_scale_from(read, family),
        **short_convs(read, family, num_layers),
        **ssm_shape(read, family, hidden, num_layers),
        **delta_shape(read, family, num_layers),
        attention_scale=attention_scale,
        final_softcap=softcap(read, "final_logit_softcapping"),
        attention_softcap=softcap(read, "attn_logit_softcapping"),
        local_rope=local_rope,
        mrope_section=mrope_section(read, rotary_dim or head_dim),
        moe=moe_config(read, family, num_layers),
        **window,
        **per_layer,
        **placeholders(read, family),
    )


def config_reader(checkpoint: Checkpoint) -> tuple[Family, ConfigReader]:
    """The family of config.json and the reader of its decoder's fields:
    its own, or a multimodal checkpoint's `text_config` (Family.text_config)."""
    where = str(checkpoint.directory / "config.json")
    family = config_family(checkpoint.config, where)
    read = ConfigReader(
        decoder_fields(checkpoint.config, family, where),
        where,
        dict(family.aliases),
        dict(family.defaults),
        "text_config." if family.text_config else "",
    )
    return family, read


def decoder_fields(
    c: dict[str, Any], family: Family, where: str = "config.json"
) -> dict[str, Any]:
    """config.json's fields of the decoder: the whole of it, or of a
    multimodal checkpoint (Family.text_config) its `text_config` with the
    placeholders of the other modalities (the multimodal model embeds
    them as padding) and the tying of the head (the multimodal model's
    own, which transformers reads)."""
    if not family.text_config:
        return c
    text = c.get("text_config")
    if not isinstance(text, dict):
        raise XdslAneError(
            f"{where}: field 'text_config' is {text!r}; expected an object"
        )
    shared = {n: c[n] for n in (*PLACEHOLDERS, "tie_word_embeddings") if n in c}
    return text | shared | {"architectures": c.get("architectures")}


PLACEHOLDERS = ("image_token_id", "video_token_id", "audio_token_id")
"""A multimodal checkpoint's tokens that stand for an image, video or
audio, embedded as padding without their media."""


def placeholders(read: ConfigReader, family: Family) -> dict[str, Any]:
    """padded_ids and pad_id of a multimodal checkpoint read for its text."""
    if not family.text_config:
        return {}
    ids = tuple(read.integer(n, minimum=0) for n in PLACEHOLDERS if n in read.c)
    return {"padded_ids": ids, "pad_id": read.integer("pad_token_id", minimum=0)}


def config_family(c: dict[str, Any], where: str) -> Family:
    """The row of FAMILIES of config.json's `architectures`."""
    architectures = c.get("architectures") or []
    if not isinstance(architectures, list):
        architectures = [architectures]
    arch = next((a for a in architectures if str(a) in FAMILIES), None)
    if arch is None:
        raise XdslAneError(
            f"{where}: field 'architectures' is {architectures}; supported: "
            + ", ".join(FAMILIES)
        )
    return FAMILIES[str(arch)]


def refuse_unsupported(read: ConfigReader) -> None:
    """One line naming a field that asks for what no family here computes."""
    if read.flag("add_cross_attention"):
        raise read.error(
            "add_cross_attention", "is true: cross-attention layers are not supported"
        )
    # "vision": image tokens see each other both ways; text stays causal
    bidirectional = read.c.get("use_bidirectional_attention")
    if bidirectional not in (None, False, "vision"):
        raise read.error(
            "use_bidirectional_attention",
            f"is {bidirectional!r}: only causal (decoder) attention is supported",
        )
    if read.c.get("quantization_config"):
        raise read.error(
            "quantization_config",
            "is set: quantized checkpoints are not supported (give the "
            "unquantized weights)",
        )
    if read.c.get("clip_qkv") is not None:
        raise read.error(
            "clip_qkv",
            f"is {read.c['clip_qkv']!r}: clamping q, k and v is not supported",
        )
    if read.flag("use_qk_norm"):
        raise read.error(
            "use_qk_norm", "is true: Cohere's per-head QK LayerNorm is not supported"
        )


def moe_config(read: ConfigReader, family: Family, num_layers: int) -> MoeConfig | None:
    """The mixture of experts of a family with experts (None: none, or
    Qwen3-MoE with `num_experts` 0): E (`num_experts`, or as Mixtral names
    it and transformers 5 writes it, `num_local_experts`), k, each
    expert's width, the routing, and which layers are MoE."""
    if not family.experts:
        return None
    if family.experts_switch and not read.flag(family.experts_switch):
        return None
    name = (
        "num_experts" if read.c.get("num_experts") is not None else "num_local_experts"
    )
    experts = read.integer(
        name, minimum=0 if family.sparse_layers or family.shared_mlp else 1
    )
    top_k = read.integer(family.topk_field)
    if experts and top_k > experts:
        raise read.error(
            family.topk_field, f"is {top_k}; more than the {experts} experts"
        )
    layers = set(range(num_layers)) if experts else set()
    if family.sparse_layers:
        dense = read.c.get("mlp_only_layers") or []
        if not isinstance(dense, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in dense
        ):
            raise read.error("mlp_only_layers", f"is {dense!r}; expected layer indices")
        step = read.integer("decoder_sparse_step", 1)
        layers = {i for i in layers if i not in dense and (i + 1) % step == 0}
    if not layers:
        return None
    return MoeConfig(
        experts=experts,
        top_k=top_k,
        ffn_size=read.integer(family.expert_width),
        renormalize=read.flag("norm_topk_prob") if family.norm_topk_field else True,
        topk_of_logits=family.topk_of_logits,
        layers=frozenset(layers),
        swiglu=(
            (
                read.number("swiglu_alpha", 1.702, positive=True),
                read.number("swiglu_limit", 7.0, positive=True),
            )
            if family.expert_layout == "gpt_oss"
            else None
        ),
    )


def attention_scale_of(
    read: ConfigReader, family: Family, head_dim: int
) -> float | None:
    """Attention's scale where it is not head_dim^−½ (None)."""
    scale = None
    if family.unscaled_scores:
        return 1.0
    if family.query_scale:
        scale = read.number("query_pre_attn_scalar", head_dim, positive=True) ** -0.5
    if read.c.get("scale_attn_weights") is False:  # GPT-2's: unscaled scores
        scale = 1.0
    if family.multipliers:
        scale = read.number("attention_multiplier", head_dim**-0.5, positive=True)
    return scale


def multipliers(read: ConfigReader, family: Family) -> dict[str, float | None]:
    """The embedding, residual and logit multipliers (None: 1), the logits'
    as a divisor."""
    multiplier: dict[str, float | None] = {}
    for name in ("embedding_multiplier", "residual_multiplier", "logits_scaling"):
        value = read.number(name, 1.0, positive=True) if family.multipliers else 1.0
        multiplier[name] = None if value == 1.0 else value
    if family.logit_scale:  # logits × logit_scale: as a divisor
        multiplier["logits_scaling"] = 1 / read.number(
            "logit_scale", 1.0, positive=True
        )
    return multiplier


def config_biases(read: ConfigReader, family: Family) -> set[str]:
    """The projections with a bias, by their name in a layer."""
    c = read.c
    biases: set[str] = set(QKV) if family.qkv_bias else set()
    if family.attention_bias and read.flag("attention_bias"):
        biases |= {*QKV, *(OUT if family.o_bias else ())}
    if family.mlp_bias and read.flag("mlp_bias"):
        biases |= set(MLP)
    if family.all_biases:
        biases |= set(MLP)
        if c.get("attention_bias", True) is not False:
            biases |= {"self_attn.qkv_proj", *OUT}
    if family.short_convs and read.flag("conv_bias"):
        biases |= set(CONV)
    if family.ssm_mixers:
        fields = dict(family.ssm_fields)
        if read.flag(fields.get("use_bias", "use_bias")):
            biases |= {"mixer.in_proj", "mixer.out_proj"}
        if c.get(fields.get("use_conv_bias", "use_conv_bias"), True) is not False:
            biases.add("mixer.conv1d")
    if family.o_bias_switch and read.flag(family.o_bias_switch):
        biases |= set(OUT)
    if family.bias_switch and c.get(family.bias_switch, True) is not False:
        biases |= {*QKV, *OUT, *MLP}
    if family.fused:
        biases = {b for b in biases if b not in QKV}
        if family.qkv_bias:
            biases.add("self_attn.qkv_proj")
    return biases


def rotary_dim_of(read: ConfigReader, family: Family, head_dim: int) -> int | None:
    """The leading dims of each head RoPE rotates (None: all of it)."""
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
    return rotary_dim


def nope_layers(
    read: ConfigReader, family: Family, num_layers: int, sliding: frozenset[int]
) -> frozenset[int]:
    """The layers without RoPE: where `no_rope_layers` has 0, or every
    `no_rope_layer_interval`-th when it is null (SmolLM3's rule); with a
    sliding window, the layers that do not slide (EXAONE 4's)."""
    if family.nope_full_layers and read.c.get("sliding_window") is not None:
        return frozenset(range(num_layers)) - sliding
    if family.rope_switch and read.c.get(family.rope_switch) != "rope":
        return frozenset(range(num_layers))
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


def ffn_size_of(read: ConfigReader, family: Family, hidden: int) -> int:
    """The MLP's width: `intermediate_size` (this × hidden when null, where
    the family says), or LFM2's adjustment of it."""
    if not family.mlp:  # the mixer's inner width
        return read.integer("expand", 2) * hidden
    default = None if family.ffn_multiple is None else family.ffn_multiple * hidden
    size = read.integer(family.ffn_field, default)
    if not (family.ffn_auto_adjust and read.c.get("block_auto_adjust_ff_dim", True)):
        return size
    size = int(2 * size / 3)
    multiplier = read.c.get("block_ffn_dim_multiplier", 1.0)
    if multiplier is not None:
        size = int(read.number("block_ffn_dim_multiplier", 1.0, positive=True) * size)
        multiple = read.integer("block_multiple_of", 256)
        size = multiple * ((size + multiple - 1) // multiple)
    return size


def saved_float(value: Any) -> Any:
    """A float as transformers saves it in config.json: a number, or
    {"__float__": "Infinity"} for one JSON has no literal for."""
    if isinstance(value, dict) and set(value) == {"__float__"}:
        try:
            return float(value["__float__"])
        except (TypeError, ValueError):
            return value
    return value


def ssm_shape(read: ConfigReader, family: Family, hidden: int, num_layers: int) -> dict:
    """A Mamba2 mixer's sizes (`ssm`), checked as Mamba2Config checks them,
    and the layers that have it (`ssm_layers`)."""
    if not family.ssm_mixers:
        return {}
    if read.c.get("hidden_act", "silu") != "silu":
        raise read.error("hidden_act", "is not silu: Mamba2's mixer is built with silu")
    name = dict(family.ssm_fields)
    field = lambda n: name.get(n, n)  # noqa: E731
    heads = read.integer(field("num_heads"))
    inner = read.integer(field("expand"), 2) * hidden
    head_dim = read.c.get(field("head_dim"))
    head_dim = inner // heads if head_dim == "auto" else read.integer(field("head_dim"))
    if heads * head_dim != inner:
        raise read.error(
            field("num_heads"), f"times the head dim must be expand × hidden ({inner})"
        )
    groups = read.integer(field("n_groups"))
    if heads % groups:
        raise read.error(
            field("n_groups"), f"is {groups}; it must divide the {heads} heads"
        )
    ssm = SsmShape(
        heads=heads,
        head_dim=head_dim,
        state_size=read.integer(field("state_size")),
        groups=groups,
        conv_taps=read.integer(field("conv_kernel"), 4, minimum=2),
        inner=inner,
        eps=read.number(field("layer_norm_epsilon"), 1e-5, positive=True),
        dt_limit=time_step_limit(read),
    )
    return {"ssm": ssm, "ssm_layers": ssm_layers(read, family, num_layers)}


def delta_shape(read: ConfigReader, family: Family, num_layers: int) -> dict:
    """A gated delta-net's sizes (`delta`) and the layers that have it
    (`delta_layers`: `layer_types` "linear_attention"; without it all but
    every `full_attention_interval`-th, as Qwen3.5's config class)."""
    if not family.delta_nets:
        return {}
    types = read.c.get("layer_types")
    if types is None:
        every = read.integer("full_attention_interval", 4)
        types = [
            "full_attention" if (i + 1) % every == 0 else "linear_attention"
            for i in range(num_layers)
        ]
    kinds = ("linear_attention", "full_attention")
    if (
        not isinstance(types, list)
        or len(types) != num_layers
        or not set(types) <= set(kinds)
    ):
        raise read.error(
            "layer_types",
            f"must list linear_attention or full_attention for each of the "
            f"{num_layers} layers",
        )
    k_heads = read.integer("linear_num_key_heads")
    v_heads = read.integer("linear_num_value_heads")
    if v_heads % k_heads:
        raise read.error(
            "linear_num_value_heads",
            f"is {v_heads}; it must be a multiple of linear_num_key_heads {k_heads}",
        )
    delta = DeltaShape(
        k_heads=k_heads,
        v_heads=v_heads,
        k_dim=read.integer("linear_key_head_dim"),
        v_dim=read.integer("linear_value_head_dim"),
        conv_taps=read.integer("linear_conv_kernel_dim", 4, minimum=2),
        eps=read.number("rms_norm_eps", 1e-6, positive=True),
    )
    layers = frozenset(i for i, t in enumerate(types) if t == "linear_attention")
    return {"delta": delta, "delta_layers": layers}


def time_step_limit(read: ConfigReader) -> tuple[float, float]:
    limit = read.c.get("time_step_limit", [0.0, float("inf")])
    if isinstance(limit, list | tuple):
        limit = [saved_float(v) for v in limit]
    if (
        not isinstance(limit, list)
        or len(limit) != 2
        or not all(isinstance(v, int | float) for v in limit)
        or not 0 <= limit[0] <= limit[1]
    ):
        raise read.error("time_step_limit", "must be [low, high], 0 ≤ low ≤ high")
    return float(limit[0]), float(limit[1])


SSM_LAYER_TYPES = ("linear_attention", "attention", "full_attention")


def ssm_layers(read: ConfigReader, family: Family, num_layers: int) -> frozenset[int]:
    """Every layer (Mamba2), or those of `layer_types` "linear_attention"
    (the others attend; all of them where it is absent, as transformers)."""
    if family.ssm_mixers == "all":
        return frozenset(range(num_layers))
    types = read.c.get("layer_types") or ["linear_attention"] * num_layers
    if (
        not isinstance(types, list)
        or len(types) != num_layers
        or not set(types) <= set(SSM_LAYER_TYPES)
    ):
        raise read.error(
            "layer_types",
            f"must list one of {', '.join(SSM_LAYER_TYPES)} for each of the "
            f"{num_layers} layers",
        )
    return frozenset(i for i, t in enumerate(types) if t == "linear_attention")


def short_convs(read: ConfigReader, family: Family, num_layers: int) -> dict:
    """LFM2's convolution layers (`layer_types` "conv", else those not in
    `full_attn_idxs`) and their taps (`conv_L_cache`)."""
    if not family.short_convs:
        return {}
    types = read.c.get("layer_types")
    if types is None:
        full = read.c.get("full_attn_idxs")
        full = range(num_layers) if full is None else full
        if not isinstance(full, list | range) or not all(
            isinstance(i, int) for i in full
        ):
            raise read.error("full_attn_idxs", "must list layer indices")
        types = ["full_attention" if i in full else "conv" for i in range(num_layers)]
    if (
        not isinstance(types, list)
        or len(types) != num_layers
        or not set(types) <= {"conv", "full_attention"}
    ):
        raise read.error(
            "layer_types",
            f"must list 'conv' or 'full_attention' for each of the {num_layers} layers",
        )
    taps = read.integer("conv_L_cache", 3, minimum=2)
    conv = frozenset(i for i, t in enumerate(types) if t == "conv")
    return {"conv_layers": conv, "conv_taps": taps}


def query_scale_from(read: ConfigReader, family: Family) -> int | None:
    """The first position Ministral 3's query scale 1 + β·log(1 + ⌊p / P⌋)
    changes (P `original_max_position_embeddings` of rope_parameters), or
    None where β is 0 or the family has no such scale."""
    field = "rope_parameters" if read.c.get("rope_parameters") else "rope_scaling"
    if not family.query_position_scale:
        return None
    if not read.number("llama_4_scaling_beta", 0.0, field):
        return None
    longest = read.integer("max_position_embeddings", 2**31 - 1)
    return int(read.number("original_max_position_embeddings", longest, field))


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
        rope = read.c.get(field)
        # proportional RoPE's factor zeroes angles of the whole head instead
        if isinstance(rope, dict) and rope.get("rope_type") != "proportional":
            partial = read.number("partial_rotary_factor", partial, field)
    if not 0 < partial <= 1:
        raise read.error("partial_rotary_factor", f"is {partial}; expected (0, 1]")
    return partial


MROPE_MODEL_TYPES = ("qwen2_vl_text", "qwen2_5_vl_text")
"""The text models whose RoPE is multimodal (3-D positions)."""


def mrope_section(read: ConfigReader, rotated: int) -> tuple[int, ...] | None:
    """The multimodal RoPE's three runs of half-dims (LlmConfig.mrope_section)
    of a Qwen2-VL-style text model: `mrope_section` of its RoPE field,
    [16, 24, 24] where it has none (transformers' default); None for
    other models."""
    if read.c.get("model_type") not in MROPE_MODEL_TYPES:
        return None
    field = "rope_parameters" if read.c.get("rope_parameters") else "rope_scaling"
    section = (read.c.get(field) or {}).get("mrope_section", [16, 24, 24])
    if (
        not isinstance(section, list)
        or len(section) != 3
        or not all(isinstance(n, int) and n >= 0 for n in section)
        or sum(section) != rotated // 2
    ):
        raise read.error(
            f"{field}.mrope_section",
            f"is {section!r}; expected three counts summing to half the "
            f"rotated head dims ({rotated // 2})",
        )
    return tuple(section)


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
    if rope_type == "mrope":  # (older configs: default RoPE of 3-D positions)
        rope_type = "default"
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
        "proportional": [],
    }[rope_type]
    scaling: dict[str, Any] = {"rope_type": rope_type}
    for key in keys:
        if rope.get(key) is None:
            raise read.error(f"{field}.{key}", f"is missing (rope type {rope_type})")
        scaling[key] = read.number(key, 0.0, field, positive=True)
    if rope_type == "proportional":  # the rotated share of each head's angles
        scaling["factor"] = read.number("factor", 1.0, field, positive=True)
        partial = read.number("partial_rotary_factor", 1.0, field)
        if not 0 <= partial <= 1:
            raise read.error(
                f"{field}.partial_rotary_factor", f"is {partial}; expected [0, 1]"
            )
        scaling["partial_rotary_factor"] = partial
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
    when absent), else every layer when `sliding_window` is set (and
    `use_sliding_window`, Qwen3-MoE)."""
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
    if c.get("sliding_window") is None and family.default_window is None:
        return none
    if (family.layer_types and family.window_switch) or family.sliding_switch:
        if not read.flag("use_sliding_window"):
            return none
    window = read.integer("sliding_window", family.default_window)
    if not family.layer_types:
        layers = set(range(num_layers))
    elif types is None:
        layers = default_sliding_layers(read, family, num_layers)
    else:
        layers = {i for i, t in enumerate(types) if t == "sliding_attention"}
    if family.layer_fields:  # Gemma 4's config class makes the last layer full
        layers.discard(num_layers - 1)
    if not layers:
        return none
    return {"sliding_window": window, "sliding_layers": frozenset(layers)}


def default_sliding_layers(
    read: ConfigReader, family: Family, num_layers: int
) -> set[int]:
    """The layers that slide where config.json has no `layer_types`, by the
    family's config class's rule: all but every `sliding_window_pattern`-th
    (Gemma, OLMo 3, EXAONE 4), those without RoPE (SmolLM3), or those from
    `max_window_layers` on (Qwen)."""
    if family.window_pattern is not None:
        every = read.integer("sliding_window_pattern", family.window_pattern)
        return {i for i in range(num_layers) if (i + 1) % every}
    if family.nope_layers:
        return set(nope_layers(read, family, num_layers, frozenset()))
    first = read.integer("max_window_layers", 28, minimum=0)
    return set(range(first, num_layers))


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
