"""The kernels of one transformer training step, built from the config.

A training step on the ANE is a sequence of small kernels driven by a
runtime (`xdsl_ane/models/runtime.py`). Weights change every step, so every
matmul weight is a kernel *input* (`weights=dynamic`): the kernels of layer 0
serve every layer, the runtime feeding each layer's weights. Each kernel is
one `func.func` in its own module; `compile_training_kernels` runs
`ane-pipeline{weights=dynamic, pack-io}` on each, so each takes one packed
input and gives one packed output per dtype.

Activations are logical `[S, C]` (ANE form `[1, C, 1, S]`). Inside a
kernel, attention heads are `[1, H, Dh, S]` (`heads`): the head dimension
before the sequence, which is a pure reshape of the ANE form
`[1, H·Dh, 1, S]`, so the head split costs one reshape and every attention
product is a matmul with transpose flags; the standard `[1, H, S, Dh]`
would cost a transpose per tensor each way. The kernels are built from
the rlx ops that take this form: rlx.rope / rlx.rope_backward and
rlx.attention with `layout = "bhds"`, and the QK-norm as rlx.rms_norm (and
its gradients) over axis 2 with a per-head γ [1, H, Dh, 1]; the lowering
that serves every other program serves them. The kernel boundaries of the
reference cut the attention backward at the probabilities P and their
gradient dP, which no rlx op yields, so `attention_backward_1` and
`attention_backward_2` write its two halves with rlx.attention's rules
(`rlx.causal_visible`, the D^-½ scale).
Matmul weights are `rlx.param`s named as in Hugging Face checkpoints
(`layers.0.self_attn.q_proj.weight`, stored `[out, in]`): forward products
are x·Wᵀ, backward products dy·W. Trainable weights that are not matmul
weights (RMSNorm γ, QK-norm γ) are kernel inputs, since the pipeline bakes
every other param as a const. The RoPE tables [S, Dh/2] of the config are
constants of the kernels, which the lowering folds into the head-form
tables (`rotation_tables`).

The kernel boundaries of the attention and FFN are those of the hand-written
Qwen3 reference (ANE_FACTS.md); the rest, which that reference left on the
CPU, are kernels too:

| kernel | inputs | outputs |
|---|---|---|
| `rms_norm_forward` | x [S, D], gamma [D] | y [S, D] |
| `attention_forward` | h [S, D], q_norm [H·Dh], k_norm [Hkv·Dh], q/k/v_bias | attn, q_rot, k_rep, v_rep [S, H·Dh], q_pre [S, H·Dh], k_pre [S, Hkv·Dh] |
| `output_projection` | attn [S, H·Dh], o_bias [D] | o [S, D] |
| `ffn_forward` | h [S, D], x [S, D] | out [S, D], gate, up, act [S, F] |
| `ffn_backward_w2` | dy [S, D] | d_act [S, F] |
| `silu_backward` | gate, up, d_act [S, F] | d_gate, d_up [S, F] |
| `ffn_backward_w13` | d_gate, d_up [S, F] | dh [S, D] |
| `output_projection_backward` | dy [S, D] | d_attn [S, H·Dh] |
| `attention_backward_1` | q_rot, k_rep, v_rep, d_attn [S, H·Dh] | dv_rep [S, H·Dh], probs, d_probs [1, H·S, 1, S] |
| `attention_backward_2` | probs, d_probs [1, H·S, 1, S], q_rot, k_rep | dq_rot, dk_rep [S, H·Dh] |
| `gqa_reduce` | dk_rep, dv_rep [S, H·Dh] | dk_rot, dv [S, Hkv·Dh] |
| `rope_backward` | dk_rot, dq_rot, k_pre, q_pre, k_norm, q_norm | dq, dk [S, ·], d_q_norm [H·Dh], d_k_norm [Hkv·Dh] |
| `q_projection_backward` | dq [S, H·Dh] | dh [S, D] |
| `kv_projection_backward` | dk, dv [S, Hkv·Dh] | dh [S, D] |
| `rms_norm_backward` | x, gamma, dy | dx [S, D], d_gamma [D] |
| `weight_gradient_{O}x{I}` | dy [S, O], x [S, I] | dw [O, I] = dyᵀ·x |
| `classifier_forward` | h [S, D] | lse [S, 1] of one vocabulary chunk V_chunk |
| `cross_entropy_combine` | h, label_rows [S, D], chunk_lse [S, k] | loss, lse [S, 1] |
| `classifier_backward` | h [S, D], row_stats [S, k] | d_logits [S, V_chunk] |
| `classifier_projection_backward` | d_logits [S, V_chunk] | dh [S, D] |

(H / Hkv query / key-value heads of Dh, hidden D, FFN F, sequence S; the
attention probabilities P [1, H, S, S] travel as their row-major view
[1, H·S, 1, S], which is already ANE form.) The QK-norm γ [Dh] travel tiled
per head ([H·Dh], [Hkv·Dh]) so that they pack with the activations; their
gradients come back per head and the runtime sums them. `rope_backward`
includes the QK-norm backward when the config has it; without QK-norm the
norm inputs and outputs are absent. The attention projections' biases
(q/k/v_bias [H·Dh], [Hkv·Dh], o_bias [D]), where the config has them, are
inputs too, trained: their gradients are the sums of the rows of dq, dk,
dv and the output's gradient, which the runtime takes. `gqa_reduce` exists only for
grouped-query configs (Hkv < H). The first input of a kernel sets the
channel count the others are packed to, so where the sizes differ the
input with the fewest channels comes first (`rope_backward`,
`weight_gradient_*`).

Other families' features change these kernels where they have them
(see `AttentionKind`, `residual_in_ffn`): LayerNorm families have
`layer_norm_forward` (x, gamma[, beta]) and `layer_norm_backward` for the
RMSNorm pair; an ungated MLP's `ffn_forward` gives out, up and act,
`silu_backward` takes up and d_act to d_up and `ffn_backward_w13` d_up;
MLP biases are `{gate,up,down}_bias` inputs of `ffn_forward`;
`ffn_forward` leaves out the residual x where a norm or a multiplier
comes between the MLP and the add; layers of another attention kind have
their own `attention_forward`, `attention_backward_1` and `rope_backward`
(suffixed `_sliding`, `_local_rope`, `_no_rope`); a projection QK-norm's
γ [H·Dh] and its gradient are the whole projection's, not per head; the
soft-caps live in `attention_forward`, `attention_backward_1/2` and the
classifier kernels.

The classifier kernels work on vocabulary chunks
(`xdsl_ane.models.vocabulary`); `xdsl_ane.models.kernels` compiles the set
for the runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, SSAValue

from xdsl_ane.ane.limits import MASKED
from xdsl_ane.dialects import ane, rlx
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import shape_of, tensor
from xdsl_ane.models.configs import LlmConfig
from xdsl_ane.models.constants import softcapped
from xdsl_ane.models.hf_config import ACTIVATIONS
from xdsl_ane.models.rope import rope_tables
from xdsl_ane.models.train_weights import trainer_config
from xdsl_ane.models.transformer import stateless_builder
from xdsl_ane.models.vocabulary import (
    CHUNK_WEIGHT,
    classifier_kernel_suffixes,
    row_columns,
    vocab_chunks,
)
from xdsl_ane.models.xielu import XIELU, xielu, xielu_derivative
from xdsl_ane.passes.gqa_tile import repeat_heads, sum_head_groups

BACKWARD_KINDS = {
    rlx.SiluOp: "silu",
    rlx.GeluOp: "gelu",
    rlx.GeluTanhOp: "gelu_tanh",
    rlx.ReluOp: "relu",
    rlx.SigmoidOp: "sigmoid",
    rlx.TanhOp: "tanh",
}
"""The rlx.activation_backward kind of each activation the MLP may use."""


MODULES = {
    **{p: f"self_attn.{p}" for p in "qkvo"},
    **{p: f"mlp.{p}" for p in ("gate", "up", "down")},
}
"""A bias input's projection (`q` -> `self_attn.q`, `up` -> `mlp.up`)."""


def weight_gradient_name(rows: int, columns: int) -> str:
    return f"weight_gradient_{rows}x{columns}"


@dataclass(frozen=True)
class AttentionKind:
    """What sets a layer's attention kernels apart: a sliding window below
    the sequence (Mistral, Gemma 2 and 3, Starcoder2) and which RoPE it
    applies, "global", "local" (the sliding layers' own, Gemma 3) or
    "none" (SmolLM3's no-RoPE layers, GPT-2's learned positions). Layers of
    one kind share kernels; each other kind has its own, named with the
    suffixes below."""

    window: int | None = None
    rope: str = "global"

    @property
    def mask_suffix(self) -> str:
        return "" if self.window is None else "_sliding"

    @property
    def rope_suffix(self) -> str:
        return {"global": "", "local": "_local_rope", "none": "_no_rope"}[self.rope]


def attention_kind(config: LlmConfig, layer: int) -> AttentionKind:
    """The kind of layer `layer`'s attention."""
    c = config
    sliding = layer in c.sliding_layers
    window = c.sliding_window if sliding else None
    if window is not None and window >= c.seq_len:
        window = None  # every earlier token is within the window
    if not c.family.rope or layer in c.nope_layers:
        rope = "none"
    elif sliding and c.local_rope is not None:
        rope = "local"
    else:
        rope = "global"
    return AttentionKind(window, rope)


def norm_kernel(config: LlmConfig) -> str:
    """The prefix of the norm kernels' names (`rms_norm_forward`)."""
    return "layer_norm" if config.family.layer_norm else "rms_norm"


def rope_backward_needed(config: LlmConfig, kind: AttentionKind) -> bool:
    """Whether `rope_backward` has work for a layer of `kind` (without RoPE
    and QK-norm its gradients pass through)."""
    return (
        kind.rope != "none" or config.family.qk_norm or config.family.projection_qk_norm
    )


def residual_in_ffn(config: LlmConfig) -> bool:
    """Whether `ffn_forward` adds the residual (the reference's kernel):
    not where a norm or a multiplier comes between the MLP and the add."""
    c = config
    return not (
        c.family.sandwich_norms
        or c.family.post_norms
        or c.residual_multiplier is not None
    )


# --- rlx building blocks -------------------------------------------------------


def constant(value: float | np.ndarray, dtype: Attribute) -> SSAValue:
    return rlx.ConstantOp(dense_from_numpy(np.asarray(value), dtype)).result


def heads(x: SSAValue, count: int) -> SSAValue:
    """[S, H·Dh] -> [1, H, Dh, S]: heads with the head dimension before the
    sequence, a pure reshape of the ANE form [1, H·Dh, 1, S] (the transpose
    here cancels against the layout's), so attention needs no transposes:
    every product is a matmul with transpose flags."""
    s, width = shape_of(x)
    x = rlx.TransposeOp(x, (1, 0)).result
    return rlx.ReshapeOp(x, (1, count, width // count, s)).result


def merge_heads(x: SSAValue) -> SSAValue:
    """[1, H, Dh, S] -> [S, H·Dh], the inverse of `heads`."""
    _, count, d, s = shape_of(x)
    x = rlx.ReshapeOp(x, (count * d, s)).result
    return rlx.TransposeOp(x, (1, 0)).result


class KernelBuilder:
    """Emits the rlx ops of the training kernels of one layer."""

    def __init__(
        self, config: LlmConfig, layer: int = 0, kind: AttentionKind | None = None
    ):
        config = trainer_config(config)
        self.config = config
        self.layer = layer
        self.kind = kind or attention_kind(config, layer)
        self.scale = config.attention_scale
        """Attention's scale where it is not Dh^-½ (None: Dh^-½)."""
        self.block = stateless_builder(config.with_(biases=frozenset()))
        """The decoder's builder: the weights and projections by name (the
        biases, trained, are inputs of the kernels: `bias_inputs`)."""
        self.dtype = f32

    def weight(self, name: str, shape: tuple[int, ...]) -> SSAValue:
        return self.block.param(f"layers.{self.layer}.{name}.weight", shape)

    def linear(self, x: SSAValue, name: str, out_features: int) -> SSAValue:
        """x·Wᵀ with W [out, in]."""
        return self.block.linear(x, self.layer, name, out_features)

    def linear_backward(self, dy: SSAValue, name: str, in_features: int) -> SSAValue:
        """dx = dy·W for y = x·Wᵀ, W [out, in] as stored."""
        w = self.weight(name, (shape_of(dy)[-1], in_features))
        return rlx.MatmulOp(dy, w).result

    def head_gamma(self, tiled: SSAValue, count: int) -> SSAValue:
        """A per-head-tiled γ [H·Dh] as [1, H, Dh, 1], the γ of an RMSNorm
        over the Dh of [1, H, Dh, S] heads."""
        return rlx.ReshapeOp(tiled, self.head_gamma_shape(count)).result

    def head_gamma_shape(self, count: int) -> tuple[int, ...]:
        return (1, count, self.config.head_dim, 1)

    def head_rms_norm(self, x: SSAValue, tiled_gamma: SSAValue) -> SSAValue:
        """QK-norm: RMSNorm over each head's Dh of x [1, H, Dh, S], then γ.

        γ does not fold into the projection before it: the norm divides by
        the RMS of the projected row, which γ would change. After the norm
        it would fold into RoPE's tables (x·C + swap(x)·S̃ of n·γ is
        n·(γ·C) + swap(n)·(swap(γ)·S̃)), but γ is trained and the tables
        are consts, so the tables would become inputs [Dh, S] of their
        own: more ops, not fewer. Only where γ_i = γ_{i+Dh/2} (a γ that
        each RoPE pair shares) does γ commute with the rotation, so that
        q's and k's γ could meet in one multiply before q·kᵀ; Qwen3's γ
        are trained freely, so not here."""
        gamma = self.head_gamma(tiled_gamma, shape_of(x)[1])
        return rlx.RmsNormOp(x, gamma, self.config.rms_eps, axis=2).result

    def head_rms_norm_backward(
        self, x: SSAValue, tiled_gamma: SSAValue, dy: SSAValue
    ) -> tuple[SSAValue, SSAValue]:
        """The gradients of `head_rms_norm`: dx, and dγ per head (summed
        over the sequence only), returned tiled [H·Dh]."""
        count, eps = shape_of(x)[1], self.config.rms_eps
        gamma = self.head_gamma(tiled_gamma, count)
        dx = rlx.RmsNormBackwardInputOp(x, gamma, dy, eps, axis=2).result
        d_gamma = rlx.RmsNormBackwardGammaOp(
            x, dy, eps, axis=2, gamma_shape=self.head_gamma_shape(count)
        ).result
        return dx, rlx.ReshapeOp(d_gamma, (count * self.config.head_dim,)).result

    def rope_tables(self) -> tuple[SSAValue, SSAValue]:
        """cos and sin [S, R/2] of the config (R the rotated dims; the
        sliding layers' own with local RoPE), baked into the kernel as
        constants: the lowering folds them into the head-form tables, so
        RoPE costs a swap, two muls and an add."""
        local = self.kind.rope == "local"
        cos, sin = rope_tables(self.config, self.config.seq_len, local)
        return constant(cos, self.dtype), constant(sin, self.dtype)

    def rope(self, x: SSAValue, inverse: bool = False) -> SSAValue:
        """rlx.rope of x [1, H, Dh, S] (layout "bhds") over its first R
        dims, the rest passed through (partial RoPE); rlx.rope_backward,
        the rotation by −θ, when `inverse`; x itself without RoPE."""
        if self.kind.rope == "none":
            return x
        op = rlx.RopeBackwardOp if inverse else rlx.RopeOp
        cos, sin = self.rope_tables()
        d, r = self.config.head_dim, self.config.rotated
        style = self.config.family.rope_style
        if r == d:
            return op(x, cos, sin, style, layout="bhds").result
        rotated = op(rlx.NarrowOp(x, 2, 0, r).result, cos, sin, style, layout="bhds")
        rest = rlx.NarrowOp(x, 2, r, d - r).result
        return rlx.ConcatOp([rotated.result, rest], 2).result

    def visible(self) -> np.ndarray:
        """[S, S]: query i sees key j (causal, within the window)."""
        s, window = self.config.seq_len, self.kind.window
        visible = rlx.causal_visible(s, s)
        if window is not None:
            rows, columns = np.indices((s, s))
            visible &= rows - columns < window
        return visible

    def raw_scores(self, q: SSAValue, k: SSAValue) -> SSAValue:
        """q·kᵀ·scale [1, H, S, S] for q, k [1, H, Dh, S]."""
        scores = rlx.MatmulOp(q, k, transpose_lhs=True).result
        scale = self.scale or self.config.head_dim**-0.5
        return rlx.MulOp(
            scores, constant(np.full((1, 1, 1, 1), scale), self.dtype)
        ).result

    def causal_probabilities(self, q: SSAValue, k: SSAValue) -> SSAValue:
        """P = softmax(cap(q·kᵀ·scale) + mask) [1, H, S, S] for q, k
        [1, H, Dh, S] (cap: the attention soft-cap where the config has
        one; the mask causal, within the window), as rlx.attention's
        lowering computes it: the first half of the attention backward,
        which the kernel boundaries cut at P (no rlx op yields P itself)."""
        scores = self.raw_scores(q, k)
        if self.config.attention_softcap is not None:
            scores = softcapped(scores, self.config.attention_softcap)
        mask = np.where(self.visible(), 0.0, MASKED)
        scores = rlx.AddOp(scores, constant(mask[None, None], self.dtype)).result
        return rlx.SoftmaxOp(scores, -1).result

    def attend(self, q: SSAValue, k: SSAValue, v: SSAValue) -> SSAValue:
        """Attention [1, H, Dh, S] of q, k, v [1, H, Dh, S]: rlx.attention
        where it computes the layer's (any window as an additive mask),
        written out with the soft-cap."""
        if self.config.attention_softcap is not None:
            probs = self.causal_probabilities(q, k)
            return rlx.MatmulOp(v, probs, transpose_rhs=True).result
        if self.kind.window is None:
            return rlx.AttentionOp(
                q, k, v, mask="causal", scale=self.scale, layout="bhds"
            ).result
        mask = np.where(self.visible(), 0.0, MASKED)[None, None]
        return rlx.AttentionOp(
            q, k, v, constant(mask, self.dtype), scale=self.scale, layout="bhds"
        ).result

    def logsumexp(self, x: SSAValue) -> SSAValue:
        """m + log Σ exp(x − m) over the last axis, m = max; [S, 1]."""
        m = rlx.ReduceMaxOp(x, (-1,), True).result
        total = rlx.ReduceSumOp(rlx.ExpOp(rlx.SubOp(x, m).result).result, (-1,), True)
        return rlx.AddOp(rlx.LogOp(total.result).result, m).result

    def narrow_column(self, x: SSAValue, column: int, count: int = 1) -> SSAValue:
        return rlx.NarrowOp(x, 1, column, count).result

    # --- kernels -------------------------------------------------------------

    def kernel(
        self,
        name: str,
        inputs: list[tuple[str, tuple[int, ...]]],
        body: Callable[..., dict[str, SSAValue]],
    ) -> builtin.ModuleOp:
        """A module with `func.func @name(inputs) -> body(*inputs)`; the
        names of the results are recorded as `ane.result_names`."""
        names: list[str] = []

        def emit(*args: SSAValue) -> list[SSAValue]:
            results = body(*args)
            names.extend(results)
            return list(results.values())

        types: list[Attribute] = [tensor(shape, self.dtype) for _, shape in inputs]
        function = build_function(name, types, emit, [n for n, _ in inputs])
        ane.record_result_names(function, names)
        return builtin.ModuleOp([function])

    def rms_norm_forward(self) -> builtin.ModuleOp:
        c = self.config
        return self.kernel(
            "rms_norm_forward",
            [("x", (c.seq_len, c.hidden_size)), ("gamma", (c.hidden_size,))],
            lambda x, gamma: {"y": rlx.RmsNormOp(x, gamma, c.rms_eps).result},
        )

    def rms_norm_backward(self) -> builtin.ModuleOp:
        c = self.config
        sd = (c.seq_len, c.hidden_size)

        def body(x: SSAValue, gamma: SSAValue, dy: SSAValue) -> dict[str, SSAValue]:
            return {
                "dx": rlx.RmsNormBackwardInputOp(x, gamma, dy, c.rms_eps).result,
                "d_gamma": rlx.RmsNormBackwardGammaOp(x, dy, c.rms_eps).result,
            }

        return self.kernel(
            "rms_norm_backward",
            [("x", sd), ("gamma", (c.hidden_size,)), ("dy", sd)],
            body,
        )

    def layer_norm_forward(self) -> builtin.ModuleOp:
        """LayerNorm over the hidden size, with β where the config has it."""
        c = self.config
        inputs = [("x", (c.seq_len, c.hidden_size)), ("gamma", (c.hidden_size,))]
        if c.family.norm_bias:
            inputs.append(("beta", (c.hidden_size,)))

        def body(x: SSAValue, gamma: SSAValue, beta: SSAValue | None = None):
            if beta is None:
                beta = constant(np.zeros(c.hidden_size), self.dtype)
            return {"y": rlx.LayerNormOp(x, gamma, beta, c.rms_eps).result}

        return self.kernel("layer_norm_forward", inputs, body)

    def layer_norm_backward(self) -> builtin.ModuleOp:
        """LayerNorm is RMSNorm of the centred x̄ = x − mean(x) (the same
        eps), and centring is its own adjoint: dx = d̄ − mean(d̄) for d̄ the
        RMSNorm's input gradient at x̄, dγ the RMSNorm's; dβ (the sum of
        dy's rows) is the runtime's."""
        c = self.config
        sd = (c.seq_len, c.hidden_size)

        def centred(x: SSAValue) -> SSAValue:
            return rlx.SubOp(x, rlx.ReduceMeanOp(x, (-1,), True).result).result

        def body(x: SSAValue, gamma: SSAValue, dy: SSAValue) -> dict[str, SSAValue]:
            xc = centred(x)
            dxc = rlx.RmsNormBackwardInputOp(xc, gamma, dy, c.rms_eps).result
            return {
                "dx": centred(dxc),
                "d_gamma": rlx.RmsNormBackwardGammaOp(xc, dy, c.rms_eps).result,
            }

        return self.kernel(
            "layer_norm_backward",
            [("x", sd), ("gamma", (c.hidden_size,)), ("dy", sd)],
            body,
        )

    def bias_inputs(self, *projections: str) -> list[tuple[str, tuple[int, ...]]]:
        """The inputs `{q,k,v,o}_bias` [out] of the projections (of `q`,
        `k`, `v`, `o`) that config.biases has."""
        c = self.config
        out = {"q": c.q_dim, "k": c.kv_dim, "v": c.kv_dim, "o": c.hidden_size}
        out |= {"gate": c.ffn_size, "up": c.ffn_size, "down": c.hidden_size}
        return [
            (f"{p}_bias", (out[p],))
            for p in projections
            if f"{MODULES[p]}_proj" in c.biases
        ]

    def biased(self, y: SSAValue, bias: SSAValue | None) -> SSAValue:
        return y if bias is None else rlx.AddOp(y, bias).result

    def attention_forward(self) -> builtin.ModuleOp:
        """QKV projections (with their biases), (QK-norm), RoPE, the
        grouped-query repeat of k and v, causal attention; also returns
        what the backward kernels need."""
        c = self.config
        repeats = c.num_heads // c.num_kv_heads
        inputs = [("h", (c.seq_len, c.hidden_size))]
        if c.family.qk_norm or c.family.projection_qk_norm:
            inputs += [("q_norm", (c.q_dim,)), ("k_norm", (c.kv_dim,))]
        inputs += self.bias_inputs("q", "k", "v")

        def body(*args: SSAValue) -> dict[str, SSAValue]:
            named = dict(zip([n for n, _ in inputs], args))
            h, q_norm, k_norm = named["h"], named.get("q_norm"), named.get("k_norm")

            def project(p: str, out: int) -> SSAValue:
                y = self.linear(h, f"self_attn.{p}_proj", out)
                return self.biased(y, named.get(f"{p}_bias"))

            q_pre = project("q", c.q_dim)
            k_pre = project("k", c.kv_dim)
            v = heads(project("v", c.kv_dim), c.num_kv_heads)
            q_in, k_in = q_pre, k_pre
            if (
                c.family.projection_qk_norm
                and q_norm is not None
                and k_norm is not None
            ):
                q_in = rlx.RmsNormOp(q_pre, q_norm, c.rms_eps).result
                k_in = rlx.RmsNormOp(k_pre, k_norm, c.rms_eps).result
            q, k = heads(q_in, c.num_heads), heads(k_in, c.num_kv_heads)
            if c.family.qk_norm and q_norm is not None and k_norm is not None:
                q, k = self.head_rms_norm(q, q_norm), self.head_rms_norm(k, k_norm)
            q = self.rope(q)
            k = repeat_heads(self.rope(k), repeats)
            v = repeat_heads(v, repeats)
            attn = self.attend(q, k, v)
            results = {
                "attn": merge_heads(attn),
                "q_rot": merge_heads(q),
                "k_rep": merge_heads(k),
                "v_rep": merge_heads(v),
            }
            if q_norm is not None:
                results |= {"q_pre": q_pre, "k_pre": k_pre}
            return results

        name = "attention_forward" + self.kind.mask_suffix + self.kind.rope_suffix
        return self.kernel(name, inputs, body)

    def output_projection(self) -> builtin.ModuleOp:
        c = self.config

        def body(a: SSAValue, o_bias: SSAValue | None = None) -> dict[str, SSAValue]:
            o = self.linear(a, "self_attn.o_proj", c.hidden_size)
            return {"o": self.biased(o, o_bias)}

        inputs = [("attn", (c.seq_len, c.q_dim)), *self.bias_inputs("o")]
        return self.kernel("output_projection", inputs, body)

    def ffn_forward(self) -> builtin.ModuleOp:
        """out = x + down(silu(gate(h)) · up(h)) (SwiGLU with the residual;
        the activation the config's; down(f(up(h))) for an ungated MLP;
        each projection's bias where the config has it; without the
        residual x where `residual_in_ffn` says not); gate and up feed the
        activation's backward, act the down_proj gradient."""
        c = self.config
        sd = (c.seq_len, c.hidden_size)
        inputs = [("h", sd)] + ([("x", sd)] if residual_in_ffn(c) else [])
        inputs += self.bias_inputs("gate", "up", "down") + self.activation_inputs()

        def body(*args: SSAValue) -> dict[str, SSAValue]:
            named = dict(zip([n for n, _ in inputs], args))
            h, x = named["h"], named.get("x")
            params = named.get("xielu")

            def project(p: str, a: SSAValue, out: int) -> SSAValue:
                y = self.linear(a, f"mlp.{p}_proj", out)
                return self.biased(y, named.get(f"{p}_bias"))

            results = {}
            if c.family.gated_mlp:
                results["gate"] = gate = project("gate", h, c.ffn_size)
                results["up"] = up = project("up", h, c.ffn_size)
                act = rlx.MulOp(self.activation(gate, params), up).result
            else:
                results["up"] = up = project("up", h, c.ffn_size)
                act = self.activation(up, params)
            out = project("down", act, c.hidden_size)
            if x is not None:
                out = rlx.AddOp(x, out).result
            return {"out": out, **results, "act": act}

        return self.kernel("ffn_forward", inputs, body)

    def ffn_backward_w2(self) -> builtin.ModuleOp:
        c = self.config
        return self.kernel(
            "ffn_backward_w2",
            [("dy", (c.seq_len, c.hidden_size))],
            lambda dy: {"d_act": self.linear_backward(dy, "mlp.down_proj", c.ffn_size)},
        )

    def activation_inputs(self) -> list[tuple[str, tuple[int, ...]]]:
        """xIELU's input `xielu` [α_p, α_n] (its learned parameters after
        softplus, per layer); none for other activations."""
        return [("xielu", (2,))] if self.config.activation == XIELU else []

    def xielu_arguments(self, params: SSAValue | None) -> tuple[SSAValue, ...]:
        """α_p, α_n (of the `xielu` input), β, ε (constants)."""
        assert params is not None and self.config.xielu_constants is not None
        beta, eps = self.config.xielu_constants
        return (
            rlx.NarrowOp(params, 0, 0, 1).result,
            rlx.NarrowOp(params, 0, 1, 1).result,
            constant(np.full(1, beta, np.float32), f32),
            constant(np.full(1, eps, np.float32), f32),
        )

    def activation(self, x: SSAValue, params: SSAValue | None = None) -> SSAValue:
        """The config's activation f (SiLU, GELU and its tanh form, ReLU,
        ..., xIELU of the `xielu` input `params`)."""
        if self.config.activation == XIELU:
            return xielu(x, *self.xielu_arguments(params))
        return ACTIVATIONS[self.config.activation](x).result

    def activation_backward(
        self, x: SSAValue, d_f: SSAValue, params: SSAValue | None
    ) -> SSAValue:
        """f'(x)·d_f."""
        c = self.config
        if c.activation == XIELU:
            derivative = xielu_derivative(x, *self.xielu_arguments(params))
            return rlx.MulOp(derivative, d_f).result
        kind = BACKWARD_KINDS[ACTIVATIONS[c.activation]]
        return rlx.ActivationBackwardOp(x, d_f, kind).result

    def silu_backward(self) -> builtin.ModuleOp:
        """act = f(gate)·up (f the config's activation, SiLU in the
        reference): d_gate = f'(gate)·up·d_act, d_up = f(gate)·d_act; for an
        ungated MLP act = f(up): d_up = f'(up)·d_act."""
        c = self.config
        sf = (c.seq_len, c.ffn_size)
        extra = self.activation_inputs()
        if not c.family.gated_mlp:
            return self.kernel(
                "silu_backward",
                [("up", sf), ("d_act", sf), *extra],
                lambda up, d_act, params=None: {
                    "d_up": self.activation_backward(up, d_act, params)
                },
            )

        def body(gate, up, d_act, params=None) -> dict[str, SSAValue]:
            d_f = rlx.MulOp(d_act, up).result
            return {
                "d_gate": self.activation_backward(gate, d_f, params),
                "d_up": rlx.MulOp(d_act, self.activation(gate, params)).result,
            }

        return self.kernel(
            "silu_backward", [("gate", sf), ("up", sf), ("d_act", sf), *extra], body
        )

    def ffn_backward_w13(self) -> builtin.ModuleOp:
        c = self.config
        sf = (c.seq_len, c.ffn_size)
        if not c.family.gated_mlp:
            return self.kernel(
                "ffn_backward_w13",
                [("d_up", sf)],
                lambda d_up: {
                    "dh": self.linear_backward(d_up, "mlp.up_proj", c.hidden_size)
                },
            )

        def body(d_gate: SSAValue, d_up: SSAValue) -> dict[str, SSAValue]:
            dh_gate = self.linear_backward(d_gate, "mlp.gate_proj", c.hidden_size)
            dh_up = self.linear_backward(d_up, "mlp.up_proj", c.hidden_size)
            return {"dh": rlx.AddOp(dh_gate, dh_up).result}

        return self.kernel("ffn_backward_w13", [("d_gate", sf), ("d_up", sf)], body)

    def output_projection_backward(self) -> builtin.ModuleOp:
        c = self.config
        return self.kernel(
            "output_projection_backward",
            [("dy", (c.seq_len, c.hidden_size))],
            lambda dy: {
                "d_attn": self.linear_backward(dy, "self_attn.o_proj", c.q_dim)
            },
        )

    def attention_backward_1(self) -> builtin.ModuleOp:
        """P recomputed as in the forward; dV = Pᵀ·dO, dP = dO·Vᵀ (per query
        head, over the repeated key/value heads). P and dP are returned as
        [1, H·S, 1, S], the row-major view of [1, H, S, S] (keys on the
        spatial axis), which is their ANE form as they are."""
        c = self.config
        h, s = c.num_heads, c.seq_len

        def body(q_rot, k_rep, v_rep, d_attn) -> dict[str, SSAValue]:
            q, k, v, d_out = (heads(t, h) for t in (q_rot, k_rep, v_rep, d_attn))
            probs = self.causal_probabilities(q, k)
            d_v = rlx.MatmulOp(d_out, probs).result  # (Pᵀ·dO)ᵀ
            d_probs = rlx.MatmulOp(d_out, v, transpose_lhs=True).result
            return {
                "dv_rep": merge_heads(d_v),
                "probs": rlx.ReshapeOp(probs, (1, h * s, 1, s)).result,
                "d_probs": rlx.ReshapeOp(d_probs, (1, h * s, 1, s)).result,
            }

        sq = (c.seq_len, c.q_dim)
        names = ("q_rot", "k_rep", "v_rep", "d_attn")
        name = "attention_backward_1" + self.kind.mask_suffix
        return self.kernel(name, [(n, sq) for n in names], body)

    def attention_backward_2(self) -> builtin.ModuleOp:
        """dS = P ⊙ (dP − Σ_keys dP ⊙ P)·scale; dQ = dS·K; dK = dSᵀ·Q.
        With the soft-cap, dS is also times 1 − tanh²(raw / cap), raw =
        q·kᵀ·scale recomputed."""
        c = self.config
        h, s = c.num_heads, c.seq_len

        def body(probs, d_probs, q_rot, k_rep) -> dict[str, SSAValue]:
            probs = rlx.ReshapeOp(probs, (1, h, s, s)).result
            d_probs = rlx.ReshapeOp(d_probs, (1, h, s, s)).result
            q, k = heads(q_rot, h), heads(k_rep, h)
            row_dot = rlx.ReduceSumOp(rlx.MulOp(d_probs, probs).result, (-1,), True)
            d_scores = rlx.MulOp(
                probs, rlx.SubOp(d_probs, row_dot.result).result
            ).result
            cap = c.attention_softcap
            if cap is not None:
                t = rlx.TanhOp(
                    rlx.MulOp(
                        self.raw_scores(q, k),
                        constant(np.full((1, 1, 1, 1), 1 / cap), self.dtype),
                    ).result
                ).result
                one = constant(np.ones((1, 1, 1, 1)), self.dtype)
                d_tanh = rlx.SubOp(one, rlx.MulOp(t, t).result).result
                d_scores = rlx.MulOp(d_scores, d_tanh).result
            scale = self.scale or c.head_dim**-0.5
            d_scores = rlx.MulOp(
                d_scores, constant(np.full((1, 1, 1, 1), scale), self.dtype)
            ).result
            d_q = rlx.MatmulOp(k, d_scores, transpose_rhs=True).result  # (dS·K)ᵀ
            d_k = rlx.MatmulOp(q, d_scores).result  # (dSᵀ·Q)ᵀ
            return {"dq_rot": merge_heads(d_q), "dk_rep": merge_heads(d_k)}

        ss, sq = (1, h * s, 1, s), (s, c.q_dim)
        inputs = [("probs", ss), ("d_probs", ss), ("q_rot", sq), ("k_rep", sq)]
        return self.kernel("attention_backward_2", inputs, body)

    def gqa_reduce(self) -> builtin.ModuleOp:
        """Key/value gradients over the H repeated heads summed back to the
        Hkv heads (query head h read key/value head h // (H/Hkv))."""
        c = self.config

        def reduce(x: SSAValue) -> SSAValue:
            return merge_heads(sum_head_groups(heads(x, c.num_heads), c.num_kv_heads))

        sq = (c.seq_len, c.q_dim)
        return self.kernel(
            "gqa_reduce",
            [("dk_rep", sq), ("dv_rep", sq)],
            lambda dk_rep, dv_rep: {"dk_rot": reduce(dk_rep), "dv": reduce(dv_rep)},
        )

    def rope_backward(self) -> builtin.ModuleOp:
        """RoPE backward (rotation by −θ) of the query and key gradients, then
        the QK-norm backward when the config has QK-norm. The key inputs come
        first: the first input's channel count (Hkv·Dh) is the one the
        others are packed to, and it divides them all."""
        c = self.config

        def body(
            dk_rot, dq_rot, k_pre=None, q_pre=None, k_norm=None, q_norm=None
        ) -> dict[str, SSAValue]:
            results: dict[str, SSAValue] = {}
            grads: dict[str, SSAValue] = {}
            for name, d_rot, pre, gamma, count in (
                ("q", dq_rot, q_pre, q_norm, c.num_heads),
                ("k", dk_rot, k_pre, k_norm, c.num_kv_heads),
            ):
                d = self.rope(heads(d_rot, count), inverse=True)
                if pre is not None and gamma is not None and c.family.qk_norm:
                    d, grads[f"d_{name}_norm"] = self.head_rms_norm_backward(
                        heads(pre, count), gamma, d
                    )
                d = merge_heads(d)
                if (
                    pre is not None
                    and gamma is not None
                    and c.family.projection_qk_norm
                ):
                    eps = c.rms_eps
                    grads[f"d_{name}_norm"] = rlx.RmsNormBackwardGammaOp(
                        pre, d, eps
                    ).result
                    d = rlx.RmsNormBackwardInputOp(pre, gamma, d, eps).result
                results[f"d{name}"] = d
            return results | grads

        sq, sk = (c.seq_len, c.q_dim), (c.seq_len, c.kv_dim)
        inputs = [("dk_rot", sk), ("dq_rot", sq)]
        if c.family.qk_norm or c.family.projection_qk_norm:
            inputs += [("k_pre", sk), ("q_pre", sq)]
            inputs += [("k_norm", (c.kv_dim,)), ("q_norm", (c.q_dim,))]
        return self.kernel("rope_backward" + self.kind.rope_suffix, inputs, body)

    def q_projection_backward(self) -> builtin.ModuleOp:
        c = self.config
        return self.kernel(
            "q_projection_backward",
            [("dq", (c.seq_len, c.q_dim))],
            lambda dq: {
                "dh": self.linear_backward(dq, "self_attn.q_proj", c.hidden_size)
            },
        )

    def kv_projection_backward(self) -> builtin.ModuleOp:
        c = self.config
        sk = (c.seq_len, c.kv_dim)

        def body(dk: SSAValue, dv: SSAValue) -> dict[str, SSAValue]:
            dh_k = self.linear_backward(dk, "self_attn.k_proj", c.hidden_size)
            dh_v = self.linear_backward(dv, "self_attn.v_proj", c.hidden_size)
            return {"dh": rlx.AddOp(dh_k, dh_v).result}

        return self.kernel("kv_projection_backward", [("dk", sk), ("dv", sk)], body)

    def weight_gradient(self, rows: int, columns: int) -> builtin.ModuleOp:
        """dW = dyᵀ·x [rows, columns] for y = x·Wᵀ, computed as (xᵀ·dy)ᵀ
        from xᵀ and dyᵀ, so that every transpose cancels against the
        [1, C, 1, S] layout. The input with fewer channels comes first: the
        first input's channel count is the one the others are packed to."""
        s = self.config.seq_len
        inputs = [("dy", (s, rows)), ("x", (s, columns))]
        if columns < rows:
            inputs.reverse()

        def body(first: SSAValue, second: SSAValue) -> dict[str, SSAValue]:
            dy, x = (first, second) if columns >= rows else (second, first)
            x_t = rlx.TransposeOp(x, (1, 0)).result
            dy_t = rlx.TransposeOp(dy, (1, 0)).result
            dw_t = rlx.MatmulOp(x_t, dy_t, transpose_rhs=True).result
            return {"dw": rlx.TransposeOp(dw_t, (1, 0)).result}

        return self.kernel(weight_gradient_name(rows, columns), inputs, body)

    def classifier_forward(self, chunk: int, suffix: str = "") -> builtin.ModuleOp:
        """lse_c = logsumexp(h·W_cᵀ) over one vocabulary chunk."""
        c = self.config

        def body(h: SSAValue) -> dict[str, SSAValue]:
            logits = self.capped(self.classifier_logits(h, chunk))
            return {"lse": self.logsumexp(logits)}

        return self.kernel(
            "classifier_forward" + suffix, [("h", (c.seq_len, c.hidden_size))], body
        )

    def capped(self, logits: SSAValue) -> SSAValue:
        """cap · tanh(logits / cap) with the final soft-cap, else logits."""
        cap = self.config.final_softcap
        return logits if cap is None else softcapped(logits, cap)

    def classifier_logits(self, h: SSAValue, chunk: int) -> SSAValue:
        w = self.chunk_weight(chunk)
        return rlx.MatmulOp(h, w, transpose_rhs=True).result

    def chunk_weight(self, chunk: int) -> SSAValue:
        """The classifier's rows of one vocabulary chunk [chunk, D], fed to
        the kernel (`CHUNK_WEIGHT`)."""
        return self.block.param(CHUNK_WEIGHT, (chunk, self.config.hidden_size))

    def cross_entropy_combine(self, chunks: int) -> builtin.ModuleOp:
        """lse = m + log Σ_c exp(lse_c − m) over the chunks (m = max_c lse_c);
        loss = lse − h·W[label] per row (label_rows = W[label], gathered)."""
        c = self.config
        sd = (c.seq_len, c.hidden_size)

        def body(h, label_rows, chunk_lse) -> dict[str, SSAValue]:
            lse = self.logsumexp(self.narrow_column(chunk_lse, 0, chunks))
            picked = rlx.ReduceSumOp(rlx.MulOp(h, label_rows).result, (-1,), True)
            label = self.capped(picked.result)
            return {"loss": rlx.SubOp(lse, label).result, "lse": lse}

        columns = row_columns(c, chunks)
        inputs = [("h", sd), ("label_rows", sd), ("chunk_lse", (c.seq_len, columns))]
        return self.kernel("cross_entropy_combine", inputs, body)

    def classifier_backward(self, chunk: int, suffix: str = "") -> builtin.ModuleOp:
        """d_logits_c = exp(h·W_cᵀ − lse)·d_loss: the softmax part of the
        cross-entropy gradient (the one-hot part is the runtime's scatter);
        row_stats holds lse and d_loss in columns 0 and 1."""
        c = self.config

        def body(h: SSAValue, row_stats: SSAValue) -> dict[str, SSAValue]:
            lse = self.narrow_column(row_stats, 0)
            d_loss = self.narrow_column(row_stats, 1)
            raw = self.classifier_logits(h, chunk)
            probs = rlx.ExpOp(rlx.SubOp(self.capped(raw), lse).result).result
            d_logits = rlx.MulOp(probs, d_loss).result
            cap = c.final_softcap
            if cap is not None:  # through cap·tanh(raw / cap)
                t = rlx.TanhOp(
                    rlx.MulOp(
                        raw, constant(np.full((1, 1), 1 / cap), self.dtype)
                    ).result
                )
                d_tanh = rlx.SubOp(
                    constant(np.ones((1, 1)), self.dtype),
                    rlx.MulOp(t.result, t.result).result,
                )
                d_logits = rlx.MulOp(d_logits, d_tanh.result).result
            return {"d_logits": d_logits}

        inputs = [
            ("h", (c.seq_len, c.hidden_size)),
            ("row_stats", (c.seq_len, row_columns(c, 2))),
        ]
        return self.kernel("classifier_backward" + suffix, inputs, body)

    def classifier_projection_backward(
        self, chunk: int, suffix: str = ""
    ) -> builtin.ModuleOp:
        """dh_c = d_logits_c·W_c."""
        c = self.config

        def body(d_logits: SSAValue) -> dict[str, SSAValue]:
            w = self.chunk_weight(chunk)
            return {"dh": rlx.MatmulOp(d_logits, w).result}

        return self.kernel(
            "classifier_projection_backward" + suffix,
            [("d_logits", (c.seq_len, chunk))],
            body,
        )


def projection_shapes(config: LlmConfig) -> dict[str, tuple[int, int]]:
    """[out, in] of each projection of a layer, by Hugging Face name."""
    c = trainer_config(config)
    shapes = {
        "self_attn.q_proj": (c.q_dim, c.hidden_size),
        "self_attn.k_proj": (c.kv_dim, c.hidden_size),
        "self_attn.v_proj": (c.kv_dim, c.hidden_size),
        "self_attn.o_proj": (c.hidden_size, c.q_dim),
        "mlp.gate_proj": (c.ffn_size, c.hidden_size),
        "mlp.up_proj": (c.ffn_size, c.hidden_size),
        "mlp.down_proj": (c.hidden_size, c.ffn_size),
    }
    if not c.family.gated_mlp:
        del shapes["mlp.gate_proj"]
    return shapes


def build_training_kernels(
    config: LlmConfig, layer: int = 0, vocab_chunk: int | None = None
) -> dict[str, builtin.ModuleOp]:
    """Every kernel of a training step (see the module docstring), rlx, one
    function per module named as the kernel. Weights are those of `layer`;
    the classifier kernels are built per distinct chunk size."""
    config = trainer_config(config)
    b = KernelBuilder(config, layer)
    kernels = [
        b.layer_norm_forward() if config.family.layer_norm else b.rms_norm_forward(),
        b.output_projection(),
        b.ffn_forward(),
        b.ffn_backward_w2(),
        b.silu_backward(),
        b.ffn_backward_w13(),
        b.output_projection_backward(),
        b.attention_backward_2(),
        b.q_projection_backward(),
        b.kv_projection_backward(),
        b.layer_norm_backward() if config.family.layer_norm else b.rms_norm_backward(),
    ]
    built: set[str] = set()
    for kind in dict.fromkeys(
        attention_kind(config, n) for n in range(config.num_layers)
    ):
        k = KernelBuilder(config, layer, kind)
        for make in (k.attention_forward, k.attention_backward_1, k.rope_backward):
            module = make()
            name = function_of(module).sym_name.data
            if name in built or (
                make == k.rope_backward and not rope_backward_needed(config, kind)
            ):
                continue
            built.add(name)
            kernels.append(module)
    if config.num_kv_heads != config.num_heads:
        kernels.append(b.gqa_reduce())
    shapes = set(projection_shapes(config).values())
    chunks = vocab_chunks(config, vocab_chunk)
    for size, suffix in classifier_kernel_suffixes(config, vocab_chunk).items():
        kernels += [
            b.classifier_forward(size, suffix),
            b.classifier_backward(size, suffix),
            b.classifier_projection_backward(size, suffix),
        ]
        shapes.add((size, config.hidden_size))
    kernels.append(b.cross_entropy_combine(len(chunks)))
    kernels += [b.weight_gradient(rows, columns) for rows, columns in sorted(shapes)]
    return {function_of(m).sym_name.data: m for m in kernels}


def function_of(module: builtin.ModuleOp) -> func.FuncOp:
    """The one function of a kernel module."""
    (function,) = (op for op in module.ops if isinstance(op, func.FuncOp))
    return function
