"""Whisper (transformers' `WhisperForConditionalGeneration`) as two rlx
programs: the encoder, and the decoder with its caches as state.

`encode(input_features [1, mels, 3000]) -> encoder_hidden_states [1, 1500,
d]`: conv1 (k 3, pad 1) and GELU, conv2 (k 3, stride 2, pad 1) and GELU,
plus the sinusoidal positions (a checkpoint tensor), pre-LayerNorm layers
of self-attention and a GELU MLP, the final LayerNorm.

The decoder's `prefill(input_ids [P], position [1], encoder_hidden_states
[1, 1500, d])` and `decode(input_ids [1], position [1])` share four
states: `key_cache` / `value_cache` [L, H, context, D] (self-attention:
each layer attends over its rows as they were before the call followed
by its new rows, and every layer's new rows are written at the runtime
position at the end, one read and one write per state per call) and
`cross_key_cache` / `cross_value_cache` [L, H, 1504, D]: the cross-
attention keys and values of the encoder's 1500 positions, computed by
`prefill` (once per 30 s window: each window's prompt starts with a
prefill) and read by `decode`. The cross caches' position axis is padded
to a multiple of 32 (the ANE compiles no state with a dimension that is
not one); the 4 extra keys are zeros, masked. Each layer: self-attention
(causal over the cache), cross-attention, a GELU MLP, each pre-LayerNorm
with its residual add; the token embedding (times √d with
scale_embedding) plus the learned positions at position + i; the head is
the embedding table (tied) or `proj_out.weight`, in row chunks of at most
16384 (`logits_i`, [S, rows]). Queries are scaled by D^−0.5 (transformers
scales q after its bias; the same).

Weights keep their checkpoint names (`model.encoder.layers.0.fc1.weight`);
the head's chunks are row views `NAME[start:end]`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32, i32
from xdsl.ir import SSAValue

from xdsl_ane.ane.limits import MASKED, MAX_DIMENSION
from xdsl_ane.dialects import ane, rlx
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import shape_of, tensor
from xdsl_ane.errors import XdslAneError, option
from xdsl_ane.models.checkpoint_use import chunk_name, chunks
from xdsl_ane.models.constants import const
from xdsl_ane.models.hf_config import ACTIVATIONS
from xdsl_ane.weights.checkpoint import Checkpoint

ARCHITECTURE = "WhisperForConditionalGeneration"
EMBED = "model.decoder.embed_tokens.weight"
HEAD = "proj_out.weight"
STATE_MULTIPLE = 32
"""The ANE compiles a state only when its dimensions are multiples of 32
(ANE_FACTS.md)."""
LAYER_NORM_EPS = 1e-5
"""torch's nn.LayerNorm default, which every Whisper norm uses."""

IGNORED_FIELDS = (
    "dropout attention_dropout activation_dropout encoder_layerdrop "
    "decoder_layerdrop apply_spec_augment mask_time_prob mask_time_length "
    "mask_time_min_masks mask_feature_prob mask_feature_length "
    "mask_feature_min_masks median_filter_width use_weighted_layer_sum "
    "classifier_proj_size use_cache init_std"
).split()
"""config.json fields that do not change inference."""


@dataclass(frozen=True)
class WhisperConfig:
    """What the programs are built of, from config.json."""

    d_model: int
    encoder_layers: int
    encoder_heads: int
    encoder_ffn: int
    decoder_layers: int
    decoder_heads: int
    decoder_ffn: int
    mels: int
    source_positions: int
    target_positions: int
    vocab_size: int
    activation: str = "gelu"
    scale_embedding: bool = False
    tied: bool = True

    @property
    def frames(self) -> int:
        """Mel frames of one window (conv2 halves them)."""
        return 2 * self.source_positions

    @property
    def cross_positions(self) -> int:
        """The cross caches' position axis: source positions rounded up to
        a multiple of STATE_MULTIPLE."""
        return -(-self.source_positions // STATE_MULTIPLE) * STATE_MULTIPLE

    def head_dim(self, heads: int) -> int:
        return self.d_model // heads


def whisper_config(checkpoint: Checkpoint) -> WhisperConfig:
    """The checkpoint's config.json as a WhisperConfig; another architecture,
    heads that do not divide d_model or an unknown activation is one line
    naming the field."""
    raw = checkpoint.config
    where = f"{checkpoint.directory / 'config.json'}"
    architectures = raw.get("architectures") or [raw.get("model_type")]
    if ARCHITECTURE not in architectures and raw.get("model_type") != "whisper":
        raise XdslAneError(
            f"{where}: field 'architectures' is {architectures}; compile-asr "
            f"reads {ARCHITECTURE}"
        )
    try:
        config = WhisperConfig(
            d_model=int(raw["d_model"]),
            encoder_layers=int(raw["encoder_layers"]),
            encoder_heads=int(raw["encoder_attention_heads"]),
            encoder_ffn=int(raw["encoder_ffn_dim"]),
            decoder_layers=int(raw["decoder_layers"]),
            decoder_heads=int(raw["decoder_attention_heads"]),
            decoder_ffn=int(raw["decoder_ffn_dim"]),
            mels=int(raw["num_mel_bins"]),
            source_positions=int(raw.get("max_source_positions", 1500)),
            target_positions=int(raw.get("max_target_positions", 448)),
            vocab_size=int(raw["vocab_size"]),
            activation=str(raw.get("activation_function", "gelu")),
            scale_embedding=bool(raw.get("scale_embedding", False)),
            tied=bool(raw.get("tie_word_embeddings", True)),
        )
    except KeyError as e:
        raise XdslAneError(f"{where}: field {e} is missing") from None
    for field, heads in (
        ("encoder_attention_heads", config.encoder_heads),
        ("decoder_attention_heads", config.decoder_heads),
    ):
        if config.d_model % heads:
            raise XdslAneError(
                f"{where}: field '{field}' is {heads}, which does not divide "
                f"d_model {config.d_model}"
            )
    if config.activation not in ACTIVATIONS:
        raise XdslAneError(
            f"{where}: field 'activation_function' is '{config.activation}'; "
            f"supported: {', '.join(ACTIVATIONS)}"
        )
    return config


@dataclass(frozen=True)
class WhisperShape:
    """What the decoder's functions are built for."""

    context: int
    """Self-attention cache positions: forced prompt and new tokens."""
    prefill: int = 4
    chunk: int = MAX_DIMENSION

    def check(self, config: WhisperConfig) -> None:
        if not 1 <= self.prefill <= self.context:
            raise XdslAneError(
                f"{option('prefill', self.prefill)}: must lie in [1, "
                f"{option('context', self.context)}]"
            )
        if self.context > config.target_positions:
            raise XdslAneError(
                f"{option('context', self.context)} is beyond the checkpoint's "
                f"max_target_positions {config.target_positions}"
            )


def head_chunks(config: WhisperConfig, shape: WhisperShape) -> list[tuple[int, int]]:
    return chunks(config.vocab_size, shape.chunk)


DECODER_HIDDEN = "decoder_hidden_states"
"""The output of a split decoder's part before the last (the next part's
`hidden_states`: a package's inputs and outputs share one namespace)."""


class WhisperBuilder:
    """The rlx ops of Whisper's encoder and decoder."""

    def __init__(self, config: WhisperConfig, shape: WhisperShape | None = None):
        self.c = config
        self.shape = shape or WhisperShape(context=config.target_positions)

    def param(self, name: str, shape: tuple[int, ...]) -> SSAValue:
        return rlx.ParamOp(name, tensor(shape, f32)).result

    def linear(self, x: SSAValue, name: str, out: int, bias: bool = True) -> SSAValue:
        """x · Wᵀ + b of the checkpoint's `name.weight` [out, in] (`name.bias`)."""
        w = self.param(name + ".weight", (out, shape_of(x)[-1]))
        y = rlx.MatmulOp(x, w, transpose_rhs=True).result
        if bias:
            y = rlx.AddOp(y, self.param(name + ".bias", (out,))).result
        return y

    def norm(self, x: SSAValue, name: str) -> SSAValue:
        width = (shape_of(x)[-1],)
        gamma, beta = (
            self.param(name + ".weight", width),
            self.param(name + ".bias", width),
        )
        return rlx.LayerNormOp(x, gamma, beta, LAYER_NORM_EPS).result

    def activate(self, x: SSAValue) -> SSAValue:
        return ACTIVATIONS[self.c.activation](x).result

    def mlp(self, x: SSAValue, prefix: str, ffn: int) -> SSAValue:
        """x + fc2(act(fc1(final_layer_norm(x))))."""
        h = self.norm(x, prefix + "final_layer_norm")
        h = self.activate(self.linear(h, prefix + "fc1", ffn))
        return rlx.AddOp(x, self.linear(h, prefix + "fc2", self.c.d_model)).result

    def heads(self, x: SSAValue, heads: int) -> SSAValue:
        """[1, S, d] as [1, H, S, D]."""
        s = shape_of(x)[1]
        x = rlx.ReshapeOp(x, (1, s, heads, self.c.head_dim(heads))).result
        return rlx.TransposeOp(x, (0, 2, 1, 3)).result

    def merged(self, a: SSAValue) -> SSAValue:
        """[1, H, S, D] as [1, S, d]."""
        s = shape_of(a)[2]
        a = rlx.TransposeOp(a, (0, 2, 1, 3)).result
        return rlx.ReshapeOp(a, (1, s, self.c.d_model)).result

    def keys_values(self, h: SSAValue, prefix: str, heads: int):
        """k (no bias, as Whisper's k_proj) and v of h, [1, H, S, D]."""
        k = self.linear(h, prefix + "k_proj", self.c.d_model, bias=False)
        v = self.linear(h, prefix + "v_proj", self.c.d_model)
        return self.heads(k, heads), self.heads(v, heads)

    def attend(self, q, keys, values, mask, prefix: str, heads: int) -> SSAValue:
        """out_proj(softmax(q·kᵀ·D^−0.5 + mask)·v), [1, S, d]."""
        scale = self.c.head_dim(heads) ** -0.5
        a = rlx.AttentionOp(q, keys, values, mask, scale=scale).result
        return self.linear(self.merged(a), prefix + "out_proj", self.c.d_model)

    # --- the encoder ------------------------------------------------------------------

    def encoder(self, x: SSAValue, layers: tuple[int, int] | None = None) -> SSAValue:
        """encoder_hidden_states [1, 1500, d]: of features [1, mels, 3000]
        through the stem and `layers` ([first, end), default all), or of
        the hidden states [1, 1500, d] before layer `first` > 0; the final
        norm after the last layer."""
        c, base = self.c, "model.encoder."
        first, end = layers or (0, c.encoder_layers)
        if first == 0:
            x = self.stem(x)
        for layer in range(first, end):
            p = f"{base}layers.{layer}."
            h = self.norm(x, p + "self_attn_layer_norm")
            q = self.heads(
                self.linear(h, p + "self_attn.q_proj", c.d_model), c.encoder_heads
            )
            k, v = self.keys_values(h, p + "self_attn.", c.encoder_heads)
            x = rlx.AddOp(
                x, self.attend(q, k, v, None, p + "self_attn.", c.encoder_heads)
            ).result
            x = self.mlp(x, p, c.encoder_ffn)
        if end < c.encoder_layers:
            return x
        return self.norm(x, base + "layer_norm")

    def stem(self, features: SSAValue) -> SSAValue:
        """conv1, GELU, conv2 (stride 2), GELU and the positions: [1, 1500, d]."""
        c, base = self.c, "model.encoder."
        x = features
        for name, stride in (("conv1", 1), ("conv2", 2)):
            channels = shape_of(x)[1]
            w = self.param(f"{base}{name}.weight", (c.d_model, channels, 3))
            b = self.param(f"{base}{name}.bias", (c.d_model,))
            x = rlx.ConvOp(x, w, b, strides=[stride], padding=[1, 1]).result
            x = self.activate(x)
        x = rlx.TransposeOp(x, (0, 2, 1)).result  # [1, 1500, d]
        positions = self.param(
            base + "embed_positions.weight", (c.source_positions, c.d_model)
        )
        return rlx.AddOp(x, positions).result

    def encode_function(self, layers: tuple[int, int] | None = None):
        """`encode` of `layers` (`encoder`): input_features in the first
        part, hidden_states in later ones; encoder_hidden_states out."""
        c = self.c
        first = (layers or (0, c.encoder_layers))[0]
        if first == 0:
            arg, name = tensor((1, c.mels, c.frames), f32), "input_features"
        else:
            arg, name = tensor((1, c.source_positions, c.d_model), f32), "hidden_states"
        f = build_function("encode", [arg], lambda x: [self.encoder(x, layers)], [name])
        ane.record_result_names(f, ["encoder_hidden_states"])
        return f

    # --- the decoder ------------------------------------------------------------------

    def decoder_range(self, layers: tuple[int, int] | None) -> tuple[int, int]:
        """[first, end) of a decoder part's layers (None: all of them)."""
        return layers or (0, self.c.decoder_layers)

    def state_shapes(
        self, layers: tuple[int, int] | None = None
    ) -> dict[str, tuple[int, ...]]:
        """The states of the decoder's `layers` (their own caches)."""
        c = self.c
        first, end = self.decoder_range(layers)
        heads, d = c.decoder_heads, c.head_dim(c.decoder_heads)
        own = (end - first, heads, self.shape.context, d)
        cross = (end - first, heads, c.cross_positions, d)
        return {
            "key_cache": own,
            "value_cache": own,
            "cross_key_cache": cross,
            "cross_value_cache": cross,
        }

    def embedded(self, ids: SSAValue, position: SSAValue) -> SSAValue:
        """embed(ids) (· √d with scale_embedding) + positions[position + i]."""
        c, s = self.c, shape_of(ids)[0]
        x = self.embed(ids)
        if c.scale_embedding:
            x = rlx.MulOp(
                x, const(np.full((1, 1), np.sqrt(c.d_model), np.float32))
            ).result
        table = self.param(
            "model.decoder.embed_positions.weight", (c.target_positions, c.d_model)
        )
        at = rlx.AddOp(position, const(np.arange(s, dtype=np.int32))).result
        x = rlx.AddOp(x, rlx.GatherOp(table, at).result).result
        return rlx.ReshapeOp(x, (1, s, c.d_model)).result

    def table(self, name: str, start: int, end: int) -> SSAValue:
        """Rows [start, end) of the token table `name` (a chunk of the
        head's: a tied table is stored once, read by both ends)."""
        if (start, end) != (0, self.c.vocab_size):
            name = chunk_name(name, start, end)
        return self.param(name, (end - start, self.c.d_model))

    def embed(self, ids: SSAValue) -> SSAValue:
        """Rows of the embedding by id, [S, d]: with more rows than a chunk,
        Σ_chunks where(start ≤ id < end, chunk[clamp(id − start)], 0)."""
        c, s = self.c, shape_of(ids)[0]
        parts = head_chunks(c, self.shape)
        if len(parts) == 1:
            return rlx.GatherOp(self.table(EMBED, 0, c.vocab_size), ids).result
        total, zero = None, const(np.zeros((1, 1), np.float32))
        column = rlx.ReshapeOp(ids, (s, 1)).result
        for start, end in parts:
            local = rlx.SubOp(ids, const(np.array([start], np.int32))).result
            clamped = rlx.MinOp(
                rlx.MaxOp(local, const(np.array([0], np.int32))).result,
                const(np.array([end - start - 1], np.int32)),
            ).result
            rows = rlx.GatherOp(self.table(EMBED, start, end), clamped).result
            low = rlx.CompareOp(column, const(np.array([[start]], np.int32)), "ge")
            high = rlx.CompareOp(column, const(np.array([[end]], np.int32)), "lt")
            inside = rlx.WhereOp(high.result, rows, zero).result
            rows = rlx.WhereOp(low.result, inside, zero).result
            total = rows if total is None else rlx.AddOp(total, rows).result
        assert total is not None
        return total

    def causal_mask(self, position: SSAValue, tokens: int) -> SSAValue:
        """[1, 1, S, context + S] over the cache as it was before this call
        followed by the S new rows: cached key j is visible iff j <
        position (later rows are stale or padding), new key i' to query i
        iff i' ≤ i."""
        context = self.shape.context
        keys = const(np.arange(context, dtype=np.int32)[None, :])
        before = rlx.CompareOp(keys, rlx.ReshapeOp(position, (1, 1)).result, "lt")
        old = rlx.ExpandOp(before.result, (tokens, context)).result
        causal = const(np.tril(np.ones((tokens, tokens), np.bool_)))
        visible = rlx.ConcatOp([old, causal], 1).result
        mask = rlx.WhereOp(
            visible,
            const(np.zeros((1, 1), np.float32)),
            const(np.full((1, 1), MASKED, np.float32)),
        ).result
        return rlx.ReshapeOp(mask, (1, 1, tokens, context + tokens)).result

    def self_keys(self, layer: int, new: tuple[SSAValue, SSAValue], held):
        """Layer `layer`'s keys and values: its rows of the caches as they
        were (`held`, each state read once per call) followed by its new
        rows, [1, H, context + S, D]."""
        return tuple(
            rlx.ConcatOp([rlx.NarrowOp(cache, 0, layer, 1).result, rows], 2).result
            for cache, rows in zip(held, new)
        )

    def write_self(self, states, position: SSAValue, rows: list) -> None:
        """Every layer's new key and value rows [1, H, S, D] into the caches
        at `position`: one slice_update and one write per state per call."""
        zero = const(np.zeros(1, np.int32))
        begin = rlx.ConcatOp([zero, zero, position, zero], 0).result
        for i, name in enumerate(("key_cache", "value_cache")):
            stacked = rlx.ConcatOp([pair[i] for pair in rows], 0).result
            old = rlx.ReadStateOp(states[name]).result
            rlx.WriteStateOp(
                states[name], rlx.SliceUpdateOp(old, stacked, begin).result
            )

    def cross_keys(self, states, encoded: SSAValue | None, layers=None) -> list:
        """Each layer's cross-attention keys and values [1, H, K, D] and
        their mask. Prefill: computed from `encoded` (K = 1500, no mask),
        and all layers' written into the cross caches at once, the padding
        rows zeros. Decode: each cache read once and cut per layer (K =
        1504, the padding masked). One write or read of each state per
        call, not one per layer: at Whisper-small's size each is 27 MB."""
        c = self.c
        first, end = self.decoder_range(layers)
        prefixes = [
            f"model.decoder.layers.{i}.encoder_attn." for i in range(first, end)
        ]
        if encoded is not None:
            pairs = [self.keys_values(encoded, p, c.decoder_heads) for p in prefixes]
            for i, name in enumerate(("cross_key_cache", "cross_value_cache")):
                stacked = rlx.ConcatOp([pair[i] for pair in pairs], 0).result
                pad = c.cross_positions - c.source_positions
                shape = (
                    end - first,
                    c.decoder_heads,
                    pad,
                    c.head_dim(c.decoder_heads),
                )
                zeros = const(np.zeros(shape, np.float32))
                held = rlx.ConcatOp([stacked, zeros], 2).result
                rlx.WriteStateOp(states[name], held)
            return [(k, v, None) for k, v in pairs]
        held = [
            rlx.ReadStateOp(states[name]).result
            for name in ("cross_key_cache", "cross_value_cache")
        ]
        valid = np.arange(c.cross_positions) < c.source_positions
        mask = const(
            np.where(valid, 0.0, MASKED).astype(np.float32)[None, None, None, :]
        )
        return [
            (
                rlx.NarrowOp(held[0], 0, layer, 1).result,
                rlx.NarrowOp(held[1], 0, layer, 1).result,
                mask,
            )
            for layer in range(end - first)
        ]

    def decoder_layers(self, x, position, states, encoded, layers=None) -> SSAValue:
        """The decoder's `layers` over x [1, S, d] (their states indexed
        from the first); the final norm after the last layer."""
        c, heads = self.c, self.c.decoder_heads
        first, end = self.decoder_range(layers)
        mask = self.causal_mask(position, shape_of(x)[1])
        cross = self.cross_keys(states, encoded, layers)
        held = [rlx.ReadStateOp(states[n]).result for n in ("key_cache", "value_cache")]
        rows = []
        for layer in range(first, end):
            p = f"model.decoder.layers.{layer}."
            h = self.norm(x, p + "self_attn_layer_norm")
            q = self.heads(self.linear(h, p + "self_attn.q_proj", c.d_model), heads)
            rows.append(self.keys_values(h, p + "self_attn.", heads))
            keys, values = self.self_keys(layer - first, rows[-1], held)
            a = self.attend(q, keys, values, mask, p + "self_attn.", heads)
            x = rlx.AddOp(x, a).result
            h = self.norm(x, p + "encoder_attn_layer_norm")
            q = self.heads(self.linear(h, p + "encoder_attn.q_proj", c.d_model), heads)
            k, v, cross_mask = cross[layer - first]
            a = self.attend(q, k, v, cross_mask, p + "encoder_attn.", heads)
            x = rlx.AddOp(x, a).result
            x = self.mlp(x, p, c.decoder_ffn)
        self.write_self(states, position, rows)
        if end < c.decoder_layers:
            return x
        return self.norm(x, "model.decoder.layer_norm")

    def head(self, x: SSAValue) -> list[SSAValue]:
        """The logits of x [1, S, d] in row chunks of the head, [S, rows] each."""
        c, s = self.c, shape_of(x)[1]
        h = rlx.ReshapeOp(x, (s, c.d_model)).result
        logits = []
        name = EMBED if c.tied else HEAD
        for start, end in head_chunks(c, self.shape):
            w = self.table(name, start, end)
            logits.append(rlx.MatmulOp(h, w, transpose_rhs=True).result)
        return logits

    def decoder_function(self, name: str, tokens: int, layers=None):
        """`prefill` or `decode` of the decoder's `layers` (a part of a
        split decoder: the first takes input_ids, later ones the hidden
        states before them; the last gives the logits, earlier ones
        DECODER_HIDDEN)."""
        c = self.c
        first, end = self.decoder_range(layers)
        shapes = self.state_shapes(layers)
        states = {n: rlx.StateType(tensor(s, f32)) for n, s in shapes.items()}
        names = list(states)
        head = tensor((tokens,), i32), "input_ids"
        if first > 0:
            head = tensor((1, tokens, c.d_model), f32), "hidden_states"
        position = tensor((1,), i32)
        encoded = tensor((1, c.source_positions, c.d_model), f32)
        prefill = name == "prefill"

        def body(i, p, *rest):
            e, held = (rest[0], rest[1:]) if prefill else (None, rest)
            x = self.embedded(i, p) if first == 0 else i
            x = self.decoder_layers(x, p, dict(zip(names, held)), e, layers)
            return self.head(x) if end == c.decoder_layers else [x]

        inputs = [head[0], position, *([encoded] if prefill else []), *states.values()]
        arg_names = [head[1], "position"]
        arg_names += ["encoder_hidden_states"] if prefill else []
        f = build_function(name, inputs, body, arg_names + names)
        ane.record_result_names(f, self.output_names(layers))
        return f

    def output_names(self, layers: tuple[int, int] | None = None) -> list[str]:
        if self.decoder_range(layers)[1] < self.c.decoder_layers:
            return [DECODER_HIDDEN]
        parts = head_chunks(self.c, self.shape)
        return (
            ["logits"]
            if len(parts) == 1
            else [f"logits_{i}" for i in range(len(parts))]
        )

    def encoder_module(self, layers: tuple[int, int] | None = None) -> builtin.ModuleOp:
        return builtin.ModuleOp([self.encode_function(layers)])

    def decoder_module(self, layers: tuple[int, int] | None = None) -> builtin.ModuleOp:
        return builtin.ModuleOp(
            [
                self.decoder_function("prefill", self.shape.prefill, layers),
                self.decoder_function("decode", 1, layers),
            ]
        )


def whisper_weights(
    config: WhisperConfig, checkpoint: Checkpoint, module: builtin.ModuleOp
) -> dict[str, Any]:
    """Every weight the module's params name, read lazily from the checkpoint
    (shapes checked): a head chunk `NAME[start:end]` is rows of NAME."""
    weights: dict[str, Any] = {}
    for op in module.walk():
        if not isinstance(op, rlx.ParamOp) or op.param_name.data in weights:
            continue
        name, shape = op.param_name.data, tuple(shape_of(op.result))
        base, _, rows = name.partition("[")
        if rows:
            start, end = (int(n) for n in rows.rstrip("]").split(":"))
            full = checkpoint.lazy(base, (config.vocab_size, config.d_model))
            weights[name] = full.rows(start, end)
        else:
            weights[name] = checkpoint.lazy(name, shape)
    return weights


def check_all_read(checkpoint: Checkpoint, modules: list[builtin.ModuleOp]) -> None:
    """Every checkpoint tensor is read by a module (a tied `proj_out.weight`
    equal to the embedding aside), else one line naming the first not read."""
    read = {
        op.param_name.data.partition("[")[0]
        for m in modules
        for op in m.walk()
        if isinstance(op, rlx.ParamOp)
    }
    unused = [n for n in checkpoint.tensors if n not in read]
    if HEAD in unused and checkpoint.equal(HEAD, EMBED):
        unused.remove(HEAD)
    if unused:
        more = f"; {len(unused) - 1} more" if len(unused) > 1 else ""
        raise XdslAneError(
            f"{checkpoint.directory}: tensor '{unused[0]}' is not used (not part "
            f"of Whisper's encoder or decoder as config.json describes them){more}"
        )
