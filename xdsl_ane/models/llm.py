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
RoPE for the sliding layers), Gemma 4 text (plain-weight norms, full
layers with heads of their own, keys as values, value norms, unscaled
scores, proportional RoPE, per-layer inputs, layers sharing an earlier
layer's keys and values, layer scalars, experts beside the MLP), and with
a mixture of experts (`moe.py`)
Qwen3-MoE, Mixtral, OLMoE and Granite-MoE; tied or separate
embeddings; the MLP's activation from `hidden_act` (ACTIVATIONS); RoPE
default, linear, Llama 3, YaRN or LongRoPE scaled (at the static context); sliding-window layers (a ring cache of
their window, or a second mask over the full cache).
Every config field that changes the math is honoured or refused in one
line naming it (IGNORED_FIELDS lists those that do not), and every
checkpoint tensor is read or named in an error (`check_all_used`, in
`checkpoint_use.py` with the chunks' row views). Weights keep their
checkpoint names (`model.layers.0.self_attn.q_proj.weight`); the RoPE
tables and the chunk views are added by `Decoder.weights`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32, i32
from xdsl.ir import Attribute, SSAValue

from xdsl_ane.ane.limits import MASKED, MAX_DIMENSION
from xdsl_ane.dialects import ane, rlx
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import shape_of, tensor
from xdsl_ane.errors import XdslAneError, option
from xdsl_ane.models.checkpoint_use import (
    chunks,
    row_views,
    scaled_weights,
)
from xdsl_ane.models.configs import LlmConfig
from xdsl_ane.models.constants import const, scaled, softcapped
from xdsl_ane.models.delta_net import delta_net
from xdsl_ane.models.hf_config import ACTIVATIONS, EMBED
from xdsl_ane.models.kv_cache import (
    block_visible,
    cache_layers,
    cache_shapes,
    layer_kv,
    ring_positions,
    shared_inputs,
    shared_names,
    shared_outputs,
)
from xdsl_ane.models.moe import experts_mlp, normed_experts
from xdsl_ane.models.per_layer_inputs import (
    PER_LAYER_INPUTS,
    PER_LAYER_ROWS,
    per_layer_branch,
    per_layer_inputs,
)
from xdsl_ane.models.rope import ROPE_POSITION, rope_tables
from xdsl_ane.models.routed import cuts, segment_function, segment_outputs
from xdsl_ane.models.short_conv import short_conv
from xdsl_ane.models.ssm import ssm_mixer
from xdsl_ane.models.vocab_tables import (
    embedded_rows,
    head_logits,
    padded_placeholders,
)
from xdsl_ane.models.xielu import XIELU, softplus, xielu
from xdsl_ane.weights.checkpoint import Checkpoint


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
    experts: str = "dense"
    """A mixture of experts "dense" (every expert in the program) or
    "routed" (the program cut into segments at its layers, the experts'
    weights inputs: `models/routed.py`)."""
    image_blocks: bool = False
    """Prefill also takes `image_blocks` [S] (i32: the image each row
    belongs to, −1 for text), and rows of one image see each other both
    ways (Gemma 3: `models/vision_language.py`'s block_visible)."""


@dataclass(frozen=True)
class Decoder:
    """A decoder's config with the shape of the programs built of it
    (compile-llm's functions, or one package's part of them): what the
    builder, the caches, the package split and the fp16 check read, as
    ExecuTorch's ModelArgs."""

    config: LlmConfig
    shape: LlmShape

    def part(self, **changes: Any) -> Decoder:
        """The same decoder with other shape fields (`part`, `layers`)."""
        return Decoder(self.config, replace(self.shape, **changes))

    def check(self, where: str) -> None:
        """--context, --prefill and --chunk against each other, the model
        (self.config.json at `where`) and the ANE; each error names the option."""
        context, prefill = self.shape.context, self.shape.prefill
        for name, value in [("context", context), ("prefill", prefill)]:
            if value < 1:
                raise XdslAneError(f"{option(name, value)}: must be at least 1")
        if not 1 <= self.shape.chunk <= MAX_DIMENSION:
            raise XdslAneError(
                f"{option('chunk', self.shape.chunk)}: must lie in [1, {MAX_DIMENSION}]"
            )
        context_text, prefill_text = (
            option("context", context),
            option("prefill", prefill),
        )
        problem = self.config.position_problem(context)
        if problem is not None:
            raise XdslAneError(f"{context_text} {problem} ({where})")
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

    @property
    def local_window(self) -> int | None:
        """The window W of the sliding layers' own ring cache [L, Hkv, W, D],
        where it is smaller than the context (None: they share the full
        cache). Needs prefill ≤ W, so that one call's rows fit the ring."""
        window = self.config.sliding_window
        if (
            window is None
            or not self.config.sliding_layers
            or window >= self.shape.context
        ):
            return None
        return window if self.shape.prefill <= window else None

    def cache_layers(self) -> dict[str, list[int]]:
        """The layers of self.shape.layers in each cache state
        (`kv_cache.cache_layers`)."""
        return cache_layers(self)

    def cache_shapes(self) -> dict[str, tuple[int, ...]]:
        """The cache states' shapes by name (`kv_cache.cache_shapes`)."""
        return cache_shapes(self)

    def build(self) -> builtin.ModuleOp:
        """The module with `prefill` (self.shape.prefill tokens) and `decode` (one)."""
        b = LlmBuilder(self.config, self.shape)
        if self.shape.experts == "routed" and self.shape.part == "all":
            return builtin.ModuleOp(self.segments(b))
        functions = [b.function("prefill", self.shape.prefill), b.function("decode", 1)]
        for f in functions:  # the names of the record's "outputs"
            ane.record_result_names(f, self.output_names())
        return builtin.ModuleOp(functions)

    def segments(self, b: LlmBuilder) -> list[Any]:
        """Routed experts' functions: `prefill_{i}` (every expert's weights
        as inputs) and `decode_{i}` (the k picked) per segment."""
        moe = self.config.moe
        assert moe is not None
        functions = []
        for i in range(len(cuts(self.config)) + 1):
            for name, tokens, k in [
                ("prefill", self.shape.prefill, moe.experts),
                ("decode", 1, moe.top_k),
            ]:
                f = segment_function(b, f"{name}_{i}", tokens, i, k)
                names = segment_outputs(self.config, i, self.output_names())
                ane.record_result_names(f, names)
                functions.append(f)
        return functions

    def input_names(self) -> list[str]:
        """The non-state inputs of shape.part's functions."""
        per_layer = [PER_LAYER_INPUTS] if self.config.per_layer_width else []
        rows = [PER_LAYER_ROWS] if self.config.per_layer_width else []
        rope = [ROPE_POSITION] if self.config.mrope_section else []
        if self.shape.part == "embed":
            return ["input_ids", *rows]
        if self.shape.part == "head":
            return ["hidden_states"]
        if self.shape.part == "layers":
            shared = [n for s in shared_inputs(self) for n in shared_names(s)]
            return ["hidden_states", *per_layer, "position", *rope, *shared]
        return ["input_ids", "position", *rope, *rows]

    def output_names(self) -> list[str]:
        if self.shape.part == "embed":
            per_layer = [PER_LAYER_INPUTS] if self.config.per_layer_width else []
            return ["hidden_states", *per_layer]
        if self.shape.part == "layers":
            shared = [n for s in shared_outputs(self) for n in shared_names(s)]
            return ["hidden_states", *shared]
        # stream_max_0: the embedding's; stream_max_i: after layer i − 1
        count = self.config.num_layers + 1
        probes = [f"stream_max_{i}" for i in range(count)] if self.shape.probe else []
        if self.shape.argmax:
            return ["next_token", *probes]
        parts = chunks(self.config.vocab_size, self.shape.chunk)
        logits = (
            ["logits"]
            if len(parts) == 1
            else [f"logits_{i}" for i in range(len(parts))]
        )
        return logits + probes

    def weights(
        self, checkpoint: Checkpoint, module: builtin.ModuleOp
    ) -> dict[str, np.ndarray]:
        """Every weight the module's params name: checkpoint tensors (shapes
        checked against the self.config), chunks of the embedding and the head, and
        the RoPE tables. The checkpoint's tensors are not read here: each is a
        `CheckpointTensor` (rows of one for a chunk, scaled by stream_scale
        where it applies), read where it is used, so that the weights are never
        all in memory."""
        weights: dict[str, Any] = {}  # arrays and CheckpointTensors
        for kind, prefix in ROPE_TABLES.items():
            cos, sin = rope_tables(
                self.config, self.shape.context, local=kind == "sliding"
            )
            weights |= {f"{prefix}.cos": cos, f"{prefix}.sin": sin}
        views = row_views(self.config, self.shape.chunk)
        for op in module.walk():
            if not isinstance(op, rlx.ParamOp) or op.param_name.data in weights:
                continue
            name = op.param_name.data
            view = views.get(name)
            if view is not None:
                weights[name] = view.read(checkpoint)
            else:
                weights[name] = checkpoint.lazy(name, shape_of(op.result))
        used = {
            op.param_name.data for op in module.walk() if isinstance(op, rlx.ParamOp)
        }
        scale = self.config.stream_scale
        return {
            k: v.scaled(scale) if scale and k in scaled_weights(self.config) else v
            for k, v in weights.items()
            if k in used
        }


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


ROPE_TABLES = {"full": "rope", "sliding": "rope.local"}
"""The RoPE tables' weight names (`rope.cos`, `rope.local.sin`) by the
layers that read them; `rope.local` only where the sliding layers have
their own (config.own_local_rope)."""


def additive_mask(visible: np.ndarray) -> np.ndarray:
    """0 where `visible` [S, K], MASKED elsewhere, as [1, 1, S, K] float32."""
    mask = np.where(visible, 0.0, MASKED).astype(np.float32)
    return mask[None, None]


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
        self.decoder = Decoder(config, shape)
        self.base = base
        self.dtype = dtype
        self.ring: tuple[SSAValue, SSAValue] | None = None
        """The local cache's write index and mask of the last `stack`."""
        self.blocks: SSAValue | None = None
        """This call's image_blocks (LlmShape.image_blocks), or None."""
        self.rope_position: SSAValue | None = None
        """This call's multimodal RoPE positions [S, 3] (LlmConfig.mrope_section)."""
        self.maxima: list[SSAValue] = []
        """The probes of the last `stack` (shape.probe)."""
        self.gates: dict[int, SSAValue] = {}
        """The attention output gates [1, S, q_dim] of the layers' queries
        (Family.attention_gate), by layer, until their attention uses them."""
        self.per_layer: SSAValue | None = None
        """The per-layer inputs [1, S, L·P] of the function being built."""
        self.per_layer_rows: SSAValue | None = None
        """Its input of the per-layer table's rows of its ids (PER_LAYER_ROWS)."""
        self.shared_kv: dict[int, tuple[SSAValue, SSAValue]] = {}
        """The keys and values each source layer of the last `stack`
        attended over, for the layers that share them (`kv_cache.layer_kv`)."""
        self.kv_rows: dict[int, tuple[SSAValue, SSAValue]] = {}
        """The new keys and values of each layer of the last `stack`."""
        self.kv_inputs: dict[int, tuple[SSAValue, SSAValue]] = {}
        """The new keys and values of source layers before the program's
        (inputs of a package of layers), by source."""

    def param(self, name: str, shape: tuple[int, ...]) -> SSAValue:
        """The weight the builder calls `name`, by its checkpoint name."""
        return rlx.ParamOp(self.c.weight_name(name), tensor(shape, self.dtype)).result

    def linear(self, x: SSAValue, layer: int, name: str, out: int) -> SSAValue:
        """x · Wᵀ (+ b when config.biases has `name`) of layer `layer`'s
        projection `name` (`self_attn.q_proj`)."""
        full = f"{self.base}layers.{layer}.{name}"
        if self.c.family.conv1d:  # [in, out]
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
        name: str | None,
        stream: int | None = None,
        branch: bool = False,
    ) -> SSAValue:
        """The family's norm over the last axis: RMSNorm (its weight + 1
        with unit_offset_norms; no weight where `name` is None) or
        LayerNorm with bias. Under stream_scale α, a norm that reads the
        residual `stream` has its eps times α², and one that ends a
        `branch` (sandwich and post norms) its scale times α. `stream` is
        its index in norm_input_scales."""
        eps = self.c.rms_eps
        if stream is not None and self.c.stream_scale is not None:
            eps *= self.c.stream_scale**2
        scales = self.c.norm_input_scales
        if (
            stream is not None
            and scales
            and scales[stream] != 1.0
            and not self.c.family.layer_norm
        ):
            x = scaled(x, 1 / scales[stream])
            eps /= scales[stream] ** 2
        if name is None:
            ones = const(np.ones(shape_of(x)[-1], np.float32))
            return rlx.RmsNormOp(x, ones, eps).result
        gamma = self.param(name + ".weight", (shape_of(x)[-1],))
        if self.c.family.layer_norm:
            width = shape_of(x)[-1]
            beta = (
                self.param(name + ".bias", (width,))
                if self.c.family.norm_bias
                else const(np.zeros(width, np.float32))
            )
            if branch and self.c.stream_scale is not None:
                gamma = scaled(gamma, self.c.stream_scale)
                beta = scaled(beta, self.c.stream_scale)
            return rlx.LayerNormOp(x, gamma, beta, eps).result
        if self.c.family.unit_offset_norms:
            gamma = rlx.AddOp(gamma, const(np.ones(1, np.float32))).result
        if branch and self.c.stream_scale is not None:
            gamma = scaled(gamma, self.c.stream_scale)
        return rlx.RmsNormOp(x, gamma, eps).result

    def embed(
        self, ids: SSAValue, name: str = EMBED, width: int | None = None
    ) -> SSAValue:
        """Rows by id of the embedding, or of the per-layer table `name` of
        `width` (`vocab_tables.embedded_rows`)."""
        return embedded_rows(self, ids, name, width)

    def split_heads(self, x: SSAValue, heads: int) -> SSAValue:
        """[1, S, heads · D] as [1, heads, S, D]."""
        s, d = shape_of(x)[1], shape_of(x)[2] // heads
        x = rlx.ReshapeOp(x, (1, s, heads, d)).result
        return rlx.TransposeOp(x, (0, 2, 1, 3)).result

    def layer(self, x, layer: int, cos, sin, mask, position, caches):
        """One decoder layer: pre-norm attention and MLP with their residual
        adds, the MLP after attention or, with parallel_residual, beside it."""
        c, p = self.c, f"{self.base}layers.{layer}."
        h = (
            x
            if c.family.post_norms
            else self.rms_norm(x, p + "input_layernorm", 2 * layer)
        )
        a = self.mixed(h, layer, cos, sin, mask, position, caches)
        if layer in c.ssm_layers and not c.family.mlp:  # the mixer alone
            return self.residual(x, a)
        if c.family.sandwich_norms or c.family.post_norms:
            a = self.rms_norm(a, p + "post_attention_layernorm", branch=True)
        if c.parallel_residual:
            m = self.mlp(
                h
                if c.family.shared_norm
                else self.rms_norm(x, p + "post_attention_layernorm", 2 * layer + 1),
                layer,
            )
            return self.residual(self.residual(x, a), m)
        x = self.residual(x, a)
        if c.family.post_norms:
            m = self.mlp(x, layer)
        else:
            second = (
                "pre_feedforward_layernorm"
                if c.family.sandwich_norms
                else "post_attention_layernorm"
            )
            m = self.mlp(self.rms_norm(x, p + second, 2 * layer + 1), layer)
        if c.family.normed_experts and c.moe is not None and layer in c.moe.layers:
            m = normed_experts(self, x, m, layer)
        if c.family.sandwich_norms or c.family.post_norms:
            m = self.rms_norm(m, p + "post_feedforward_layernorm", branch=True)
        return self.layer_end(self.residual(x, m), layer)

    def layer_end(self, x: SSAValue, layer: int) -> SSAValue:
        """What follows the MLP's residual add (Gemma 4): the branch of the
        layer's per-layer input, then the whole stream times the layer's
        `layer_scalar`."""
        if self.c.per_layer_width:
            x = per_layer_branch(self, x, layer)
        if self.c.family.layer_scalar:
            scalar = self.param(f"{self.base}layers.{layer}.layer_scalar", (1,))
            x = rlx.MulOp(x, scalar).result
        return x

    def mixed(self, h, layer: int, cos, sin, mask, position, caches) -> SSAValue:
        """The layer's mixer over its normed input h: attention, or the
        state-space mixer, short convolution or delta-net of its kind."""
        c = self.c
        if layer in c.ssm_layers:
            return ssm_mixer(self, h, layer, position, caches)
        if layer in c.conv_layers:
            return short_conv(self, h, layer, position, caches)
        if layer in c.delta_layers:
            return delta_net(self, h, layer, position, caches)
        return self.attention(h, layer, cos, sin, mask, position, caches)

    def front(self, x, layer: int, cos, sin, mask, position, caches):
        """A pre-norm layer up to its MLP: (x + mixer(norm(x)), the MLP's
        normed input), for a routed mixture of experts to finish."""
        p = f"{self.base}layers.{layer}."
        h = self.rms_norm(x, p + "input_layernorm", 2 * layer)
        x = self.residual(x, self.mixed(h, layer, cos, sin, mask, position, caches))
        return x, self.rms_norm(x, p + "post_attention_layernorm", 2 * layer + 1)

    def residual(self, x: SSAValue, branch: SSAValue) -> SSAValue:
        """x + branch (times residual_multiplier where set)."""
        if self.c.residual_multiplier is not None:
            branch = scaled(branch, self.c.residual_multiplier)
        return rlx.AddOp(x, branch).result

    def projections(self, h: SSAValue, layer: int, qk_norm: str | None = None):
        """q, k, v [1, heads, S, D] of the normed input h [1, S, hidden];
        with `qk_norm` (the layer's prefix), q and k RMS-normed over their
        whole projection before the head split (OLMo 2). A layer that
        shares an earlier layer's keys and values has no k and v (None);
        one whose keys are its values (keys_as_values) has k's as v."""
        c = self.c
        s = shape_of(h)[1]
        kv_heads, d = c.heads_of(layer)
        if c.family.fused and c.family.qkv_per_head:  # rows [q_h; k_h; v_h] per head
            qkv = self.linear(h, layer, "self_attn.qkv_proj", 3 * c.q_dim)
            qkv = rlx.ReshapeOp(qkv, (1, s, c.num_heads, 3 * c.head_dim)).result
            return tuple(
                rlx.TransposeOp(
                    rlx.NarrowOp(qkv, 3, i * c.head_dim, c.head_dim).result,
                    (0, 2, 1, 3),
                ).result
                for i in range(3)
            )
        if c.family.fused:
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
            q = self.query(h, layer)
            if c.kv_source(layer) is not None:
                return self.split_heads(q, c.num_heads), None, None
            k = self.linear(h, layer, "self_attn.k_proj", kv_heads * d)
            if c.keys_as_values and layer not in c.sliding_layers:
                v = k
            else:
                v = self.linear(h, layer, "self_attn.v_proj", kv_heads * d)
        if qk_norm is not None:
            q = self.rms_norm(q, qk_norm + "self_attn.q_norm")
            k = self.rms_norm(k, qk_norm + "self_attn.k_norm")
        return (
            self.split_heads(q, c.num_heads),
            self.split_heads(k, kv_heads),
            self.split_heads(v, kv_heads),
        )

    def query(self, h: SSAValue, layer: int) -> SSAValue:
        """q [1, S, q_dim]; with an attention gate (Family.attention_gate),
        q_proj gives [q_h; gate_h] per head and the gate is kept in
        `gates` for the layer's attention output."""
        c = self.c
        if not c.family.attention_gate:
            q_dim = c.num_heads * c.heads_of(layer)[1]
            return self.linear(h, layer, "self_attn.q_proj", q_dim)
        s = shape_of(h)[1]
        both = self.linear(h, layer, "self_attn.q_proj", 2 * c.q_dim)
        both = rlx.ReshapeOp(both, (1, s, c.num_heads, 2 * c.head_dim)).result
        q, gate = (
            rlx.ReshapeOp(
                rlx.NarrowOp(both, 3, i * c.head_dim, c.head_dim).result,
                (1, s, c.q_dim),
            ).result
            for i in range(2)
        )
        self.gates[layer] = gate
        return q

    def rope(self, x: SSAValue, cos: SSAValue, sin: SSAValue) -> SSAValue:
        """RoPE ("half") over the first dims of each head the tables cover
        (config.rotated_of its layer's kind)."""
        d, r = shape_of(x)[3], 2 * shape_of(cos)[-1]
        style = self.c.family.rope_style
        if r == d:
            return rlx.RopeOp(x, cos, sin, style).result
        rotated = rlx.RopeOp(rlx.NarrowOp(x, 3, 0, r).result, cos, sin, style).result
        return rlx.ConcatOp([rotated, rlx.NarrowOp(x, 3, r, d - r).result], 3).result

    def attention(self, h, layer: int, cos, sin, mask, position, caches):
        """o_proj(attention(rope(q), rope(k), v)) over the cache (or the
        keys and values the layer shares), [1, S, hidden]."""
        c, p = self.c, f"{self.base}layers.{layer}."
        q, k, v = self.projections(h, layer, p if c.family.projection_qk_norm else None)
        rotated = c.family.rope and layer not in c.nope_layers
        if c.family.qk_norm:
            q = self.rms_norm(q, p + "self_attn.q_norm")
        if rotated:
            q = self.rope(q, cos, sin)
        if k is not None and v is not None:
            if c.family.qk_norm:
                k = self.rms_norm(k, p + "self_attn.k_norm")
            if c.family.value_norm:
                v = self.rms_norm(v, None)
            if rotated:
                k = self.rope(k, cos, sin)
        keys, values, mask = layer_kv(self, layer, k, v, mask, position, caches)
        scale = c.attention_scale
        if c.scale_by_layer:
            scale = (c.head_dim**-0.5 if scale is None else scale) / (layer + 1)
        written = c.attention_softcap is not None or c.family.attention_sinks
        if mask is None and not written:  # stateless, causal
            a = rlx.AttentionOp(q, keys, values, mask="causal", scale=scale).result
        elif not written:
            a = rlx.AttentionOp(q, keys, values, mask, mask="bias", scale=scale).result
        else:
            a = self.written_attention(q, keys, values, mask, layer)
        s = shape_of(h)[1]
        a = rlx.ReshapeOp(
            rlx.TransposeOp(a, (0, 2, 1, 3)).result,
            (1, s, c.num_heads * c.heads_of(layer)[1]),
        ).result
        gate = self.gates.pop(layer, None)
        if gate is not None:
            a = rlx.MulOp(a, rlx.SigmoidOp(gate).result).result
        return self.linear(a, layer, "self_attn.o_proj", c.hidden_size)

    def mlp(self, h: SSAValue, layer: int) -> SSAValue:
        """The layer's MLP: the mixture of experts in its layers
        (`moe.experts_mlp`; plus the dense MLP where the family has a shared
        one), else the dense MLP (and Gemma 4's experts beside it after:
        `layer`)."""
        c = self.c
        mixture = c.moe is not None and layer in c.moe.layers
        if mixture and not c.family.normed_experts:
            experts = experts_mlp(self, h, layer)
            if not c.family.shared_mlp:
                return experts
            return rlx.AddOp(experts, self.dense_mlp(h, layer)).result
        return self.dense_mlp(h, layer)

    def dense_mlp(self, h: SSAValue, layer: int) -> SSAValue:
        """down(act(gate(h)) · up(h)), or down(act(up(h))) when not gated."""
        c, width = self.c, self.c.ffn_of(layer)
        if not c.family.gated_mlp:
            up = self.linear(h, layer, "mlp.up_proj", width)
            return self.linear(
                self.activate(up, layer), layer, "mlp.down_proj", c.hidden_size
            )
        if c.family.gate_up:
            both = self.linear(h, layer, "mlp.gate_up_proj", 2 * width)
            gate = rlx.NarrowOp(both, 2, 0, width).result
            up = rlx.NarrowOp(both, 2, width, width).result
        else:
            gate = self.linear(h, layer, "mlp.gate_proj", width)
            up = self.linear(h, layer, "mlp.up_proj", width)
        gate = self.activate(gate, layer)
        return self.linear(
            rlx.MulOp(gate, up).result, layer, "mlp.down_proj", c.hidden_size
        )

    def activate(self, x: SSAValue, layer: int) -> SSAValue:
        """The MLP's activation of `x` (with layer `layer`'s parameters,
        xIELU's)."""
        if self.c.activation == XIELU:
            return self.xielu(x, layer)
        return ACTIVATIONS[self.c.activation](x).result

    def xielu(self, x: SSAValue, layer: int) -> SSAValue:
        """xIELU (models/xielu.py) of layer `layer`'s learned a_p, a_n and
        buffers β, ε, softplus taken in the program."""
        base = f"{self.base}layers.{layer}.mlp.act_fn."
        beta = self.param(base + "beta", ())
        alpha_p = softplus(self.param(base + "alpha_p", (1,)))
        alpha_n = rlx.AddOp(beta, softplus(self.param(base + "alpha_n", (1,)))).result
        return xielu(x, alpha_p, alpha_n, beta, self.param(base + "eps", ()))

    def written_attention(self, q, keys, values, mask, layer: int) -> SSAValue:
        """softmax(cap · tanh(q·kᵀ·scale / cap) + mask) · v, written out
        (rlx.attention has no soft-capping or sinks); with attention sinks,
        each head's sink logit joins its softmax and is dropped after it.
        Query head h reads key/value head h // G (G = H / Hkv): q [1, H, S,
        D] is viewed as [1, Hkv, G·S, D], so each key/value head meets its
        G query heads in one matmul."""
        c = self.c
        s, context = shape_of(q)[2], shape_of(keys)[2]
        kv_heads, d = c.heads_of(layer)
        if mask is None:  # stateless: causal
            mask = const(additive_mask(np.tril(np.ones((s, s), np.bool_))))
        groups = c.num_heads // kv_heads
        scale = c.attention_scale or d**-0.5
        grouped = rlx.ReshapeOp(q, (1, kv_heads, groups * s, d)).result
        scores = rlx.MatmulOp(grouped, keys, transpose_rhs=True).result
        scores = rlx.MulOp(
            scores, const(np.full((1, 1, 1, 1), scale, np.float32))
        ).result
        if c.attention_softcap is not None:
            scores = softcapped(scores, c.attention_softcap)
        scores = rlx.ReshapeOp(scores, (1, c.num_heads, s, context)).result
        scores = rlx.AddOp(scores, mask).result
        if c.family.attention_sinks:
            name = f"{self.base}layers.{layer}.self_attn.sinks"
            sinks = rlx.ReshapeOp(
                self.param(name, (c.num_heads,)), (1, c.num_heads, 1, 1)
            )
            column = rlx.AddOp(
                const(np.zeros((1, 1, s, 1), np.float32)), sinks.result
            ).result
            scores = rlx.ConcatOp([scores, column], 3).result
        weights = rlx.SoftmaxOp(scores, -1).result
        if c.family.attention_sinks:
            weights = rlx.NarrowOp(weights, 3, 0, context).result
        weights = rlx.ReshapeOp(weights, (1, kv_heads, groups * s, context)).result
        out = rlx.MatmulOp(weights, values).result
        return rlx.ReshapeOp(out, (1, c.num_heads, s, d)).result

    def positions(self, position: SSAValue, tokens: int):
        """cos, sin [S, D/2] at positions position + i, and the additive
        masks [1, 1, S, context]: causal (0 where key j ≤ position + i) and,
        when a layer slides with a window below the context, sliding (0
        where also j > position + i − window). Stateless (position None):
        the tables' first S rows whole, and the masks constants, the causal
        one None (rlx.attention's own)."""
        if position is None:
            return self.stateless_positions(tokens)
        context = self.shape.context
        positions = rlx.AddOp(position, const(np.arange(tokens, dtype=np.int32))).result
        tables = {
            kind: tuple(
                self.rope_rows(
                    self.param(f"{prefix}.{f}", self.table_shape(context, kind)),
                    positions,
                )
                for f in ("cos", "sin")
            )
            for kind, prefix in ROPE_TABLES.items()
            if self.c.family.rope and (kind == "full" or self.c.own_local_rope)
        }
        keys = const(np.arange(context, dtype=np.int32)[None, :])
        queries = rlx.ReshapeOp(positions, (tokens, 1)).result
        visible = rlx.CompareOp(keys, queries, "le").result
        if self.blocks is not None:
            visible = block_visible(self.blocks, visible, position, context)
        masks = {"full": self.additive(visible, tokens)}
        window = self.c.sliding_window
        ring = self.decoder.local_window is not None
        if window is not None and window < context and not ring:
            oldest = rlx.SubOp(queries, const(np.array([[window]], np.int32))).result
            recent = rlx.CompareOp(keys, oldest, "gt").result
            inside = rlx.WhereOp(
                recent, visible, const(np.zeros((1, 1), np.bool_))
            ).result
            masks["sliding"] = self.additive(inside, tokens)
        return tables, masks

    def rope_rows(self, table: SSAValue, positions: SSAValue) -> SSAValue:
        """The rows [S, D/2] of a RoPE table at `positions` [S]; with
        multimodal RoPE, each run of LlmConfig.mrope_section's columns
        from the rows at its axis of `rope_position` [S, 3] (transformers'
        recomposition of the three axes' frequencies)."""
        section = self.c.mrope_section
        if section is None or self.rope_position is None:
            return rlx.GatherOp(table, positions).result
        tokens, runs, start = shape_of(positions)[0], [], 0
        # one gather of the three axes' rows: [S, 3] -> [3 S] axis by axis
        axes = rlx.TransposeOp(self.rope_position, (1, 0)).result
        at = rlx.ReshapeOp(axes, (3 * tokens,)).result
        rows = rlx.GatherOp(table, at).result
        for axis, width in enumerate(section):
            if width:
                run = rlx.NarrowOp(rows, 0, axis * tokens, tokens).result
                runs.append(rlx.NarrowOp(run, 1, start, width).result)
            start += width
        return rlx.ConcatOp(runs, 1).result

    def table_shape(self, rows: int, kind: str) -> tuple[int, int]:
        """A RoPE table's shape [rows, D/2] for the layers of `kind`."""
        return rows, self.c.rotated_of(kind == "sliding") // 2

    def stateless_positions(self, tokens: int):
        """`positions` of tokens 0..S−1 in a stateless program."""
        tables = {
            kind: tuple(
                self.param(f"{prefix}.{f}", self.table_shape(tokens, kind))
                for f in ("cos", "sin")
            )
            for kind, prefix in ROPE_TABLES.items()
            if self.c.family.rope and (kind == "full" or self.c.own_local_rope)
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
        self.shared_kv, self.kv_rows = {}, {}
        if caches and "local_key_cache" in caches:
            self.ring = ring_positions(self, position, shape_of(x)[1])
        if not self.c.family.rope and not self.c.ssm_layers and first == 0:
            x = rlx.AddOp(x, self.learned_positions(position, shape_of(x)[1])).result
        if self.c.stream_scale is not None and not self.c.family.rope and first == 0:
            x = scaled(x, self.c.stream_scale)
        self.maxima = []
        if self.shape.probe:
            self.maxima.append(largest_magnitude(x))
        for layer in range(first, end):
            cos, sin, mask = self.layer_positions(layer, tables, masks)
            x = self.layer(x, layer, cos, sin, mask, position, caches)
            if self.shape.probe:
                self.maxima.append(largest_magnitude(x))
        return x

    def layer_positions(self, layer: int, tables, masks):
        """cos, sin and mask of layer `layer` (its kind's: sliding or full)."""
        sliding = layer in self.c.sliding_layers
        mask = masks["sliding" if sliding and "sliding" in masks else "full"]
        kind = "sliding" if sliding and "sliding" in tables else "full"
        cos, sin = tables.get(kind, (None, None))
        return cos, sin, mask

    def final(self, x: SSAValue) -> list[SSAValue]:
        """The final norm and the head over x [1, S, hidden]."""
        tokens = shape_of(x)[1]
        h = self.final_norm(x)
        return head_logits(self, rlx.ReshapeOp(h, (tokens, self.c.hidden_size)).result)

    def final_norm(self, x: SSAValue) -> SSAValue:
        return self.rms_norm(x, self.base + "norm", 2 * self.c.num_layers)

    def state_types(self) -> dict[str, Attribute]:
        """The program's states by name (`Decoder.cache_shapes`)."""
        return {
            name: rlx.StateType(tensor(shape, f32))
            for name, shape in self.decoder.cache_shapes().items()
        }

    def embedded(self, ids: SSAValue) -> SSAValue:
        """The embedding of the token ids [S], [1, S, hidden], with the
        family's scale and multiplier (and stream_scale, with RoPE); the
        per-layer inputs beside it (`per_layer`) where the model has them."""
        c = self.c
        tokens = shape_of(ids)[0]
        ids = padded_placeholders(self, ids)
        x = rlx.ReshapeOp(self.embed(ids), (1, tokens, c.hidden_size)).result
        if c.family.scaled_embedding:  # √hidden rounded to float32, as Gemma's
            scale = np.full((1, 1, 1), np.sqrt(c.hidden_size), np.float32)
            x = rlx.MulOp(x, const(scale)).result
        if c.per_layer_width:
            self.per_layer = per_layer_inputs(self, ids, x)
        if c.embedding_multiplier is not None:
            x = scaled(x, c.embedding_multiplier)
        if c.stream_scale is not None and c.family.rope:  # (else after positions)
            x = scaled(x, c.stream_scale)
        return x

    def function(self, name: str, tokens: int):
        """`name` over `tokens` tokens computing shape.part: "all" takes
        input_ids, position and the caches and gives the head's outputs;
        "embed" takes input_ids, "layers" hidden_states, position and its
        slice of the caches, "head" hidden_states; the parts between give
        hidden_states [1, S, hidden] (and what `Decoder.input_names` and
        `output_names` add: per-layer inputs, shared keys and values)."""
        c, shape = self.c, self.shape
        caches = self.state_types()
        ids, position = tensor((tokens,), i32), tensor((1,), i32)
        rope = [tensor((tokens, 3), i32)] if c.mrope_section else []
        hidden = tensor((1, tokens, c.hidden_size), f32)
        rows = []  # the per-layer table's rows of the ids (PER_LAYER_ROWS)
        if c.per_layer_width:
            rows = [tensor((1, tokens, c.num_layers * c.per_layer_width), f32)]
        names = list(caches)

        def embedded(i: SSAValue, *given: SSAValue) -> SSAValue:
            self.per_layer_rows = given[0] if given else None
            return self.embedded(i)

        if shape.part == "embed":

            def embed_part(i: SSAValue, *given: SSAValue) -> list[SSAValue]:
                x = embedded(i, *given)
                return [x] if self.per_layer is None else [x, self.per_layer]

            return build_function(
                name, [ids, *rows], embed_part, self.decoder.input_names()
            )
        if shape.part == "layers":
            return self.layers_function(name, tokens)
        if shape.part == "head":
            return build_function(name, [hidden], self.final, ["hidden_states"])
        inputs = self.decoder.input_names()

        def whole(*values: SSAValue) -> list[SSAValue]:
            given = dict(zip(inputs, values))
            self.rope_position = given.get(ROPE_POSITION)
            states = dict(zip(names, values[len(inputs) :]))
            x = embedded(
                given["input_ids"], *values[len(inputs) - len(rows) : len(inputs)]
            )
            return self.final(self.stack(x, given["position"], states)) + self.maxima

        return build_function(
            name,
            [ids, position, *rope, *rows, *caches.values()],
            whole,
            [*inputs, *names],
        )

    def layers_function(self, name: str, tokens: int):
        """`function` of a package of layers: hidden_states, the per-layer
        inputs, position and the new keys and values of the sources before
        it that its layers share; hidden_states and the new keys and values
        of its sources that later layers share."""
        c, decoder = self.c, self.decoder
        caches = self.state_types()
        inputs = decoder.input_names()
        if decoder.shape.image_blocks and tokens > 1:  # a prefill's images
            inputs.append("image_blocks")
        types = {
            "image_blocks": tensor((tokens,), i32),
            "hidden_states": tensor((1, tokens, c.hidden_size), f32),
            "position": tensor((1,), i32),
            ROPE_POSITION: tensor((tokens, 3), i32),
            PER_LAYER_INPUTS: tensor(
                (1, tokens, c.num_layers * (c.per_layer_width or 0)), f32
            ),
        }
        for source in shared_inputs(decoder):
            kv_heads, d = c.heads_of(source)
            for n in shared_names(source):
                types[n] = tensor((1, kv_heads, tokens, d), f32)

        def body(*values: SSAValue) -> list[SSAValue]:
            given = dict(zip([*inputs, *caches], values))
            self.per_layer = given.get(PER_LAYER_INPUTS)
            self.blocks = given.get("image_blocks")
            self.rope_position = given.get(ROPE_POSITION)
            self.kv_inputs = {
                s: (given[shared_names(s)[0]], given[shared_names(s)[1]])
                for s in shared_inputs(decoder)
            }
            states = {n: given[n] for n in caches}
            x = self.stack(given["hidden_states"], given["position"], states)
            return [x, *(v for s in shared_outputs(decoder) for v in self.kv_rows[s])]

        arguments = [types[n] for n in inputs] + list(caches.values())
        return build_function(name, arguments, body, [*inputs, *caches])
