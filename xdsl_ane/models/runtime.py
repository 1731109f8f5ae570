"""A Python runtime for the training kernels: one training step of a
Qwen3-style decoder composed from compiled kernels, run in the interpreter.

It is the documentation of how to drive the kernels of
`xdsl_ane/models/training.py` as `xdsl_ane/models/kernels.py` compiles them.
For each kernel call it

1. maps each logical input to its `[1, C, 1, S]` form by the layout the
   compiler recorded (`ane.arg_layouts`),
2. feeds each dynamic weight as the argument `[1, Cin, 1, Cout]` the
   compiler asked for (`ane.weight_args`: W as stored, or Wᵀ),
3. packs these into the kernel's input(s) as `mil-pack-io` recorded
   (`ane.packing`: an offset on the spatial axis per tensor, through a
   row-major view where the sizes differ),
4. runs the kernel (`run_function`; on a Mac this is the ANE request), and
5. cuts the packed output(s) apart by the same record and maps each result
   back to its logical shape (`ane.result_layouts`).

The CPU does the glue: the embedding lookup and its scatter-add gradient,
residual adds, sums of gradient contributions, the per-head sum of the
QK-norm γ gradients (the kernels take γ tiled per head), and the label
terms of the cross-entropy: the label's logit is h·W[label] (W's rows
gathered and fed to `cross_entropy_combine`), and the one-hot part of the
gradient is −d_loss·W[label] for dh and a scatter-add of −d_loss·h into
W's label rows. The loss is the mean cross-entropy over the S rows.

Converting at every call keeps this readable and checkable against numpy;
a production runtime keeps tensors in their `[1, C, 1, S]` form between
kernels (consecutive kernels agree on it) and converts only for the glue.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from xdsl_ane.interpreter.core import run_function
from xdsl_ane.models.configs import LlmConfig
from xdsl_ane.models.kernels import CompiledKernel
from xdsl_ane.models.training import weight_gradient_name
from xdsl_ane.models.vocabulary import (
    CHUNK_WEIGHT,
    classifier_kernel_suffixes,
    row_columns,
    vocab_chunks,
)

Arrays = dict[str, np.ndarray]


# --- driving one kernel ------------------------------------------------------------


def run_kernel(
    kernel: CompiledKernel,
    inputs: Mapping[str, np.ndarray],
    weights: Mapping[str, np.ndarray],
    baked: Mapping[str, np.ndarray],
) -> Arrays:
    """Runs `kernel` on logical inputs (by argument name) with its dynamic
    weights (by the kernel's weight name); `baked` holds the weights the
    kernel has as consts (the RoPE tables). Returns float32 logical results
    by name."""
    interface = kernel.interface
    logical = [np.asarray(inputs[name], np.float32) for name in kernel.arg_names]
    args = interface.arguments(
        logical, weights, kernel.function.function_type.inputs.data
    )
    name = kernel.function.sym_name.data  # `main` in a package read back
    outputs = run_function(kernel.module, args, {**baked, **kernel.weights}, name)
    return {
        name: value.astype(np.float32)
        for name, value in zip(kernel.result_names, interface.logical_results(outputs))
    }


# --- a training step ---------------------------------------------------------------


CPU_OPERATIONS = [
    "embedding: x = embed_tokens.weight[tokens]",
    "residual adds: x2 = x + o (attention), out = x2 + ffn (in ffn_forward)",
    "label rows: W[labels] of the classifier, fed to cross_entropy_combine",
    "loss gradient: dh = -d_loss * W[labels]; W[labels] -= d_loss * h "
    "(scatter-add), d_loss = loss_scale / S",
    "per-chunk sums: dh += classifier_projection_backward per vocabulary chunk",
    "QK-norm gamma gradients summed over heads",
    "embedding gradient: scatter-add of dx into embed_tokens.weight[tokens]",
    "gradients divided by the loss scale, averaged over the batch",
]
"""What the CPU does between the kernel calls of `TrainingRuntime.step`."""


def step_calls(
    config: LlmConfig, kernels: Mapping[str, CompiledKernel]
) -> list[tuple[str, int | None]]:
    """The kernel calls of one `TrainingRuntime.step`, in order, with the
    layer each serves (None: none): the plan a runtime on a device follows
    (`plan.json`); a test checks the runtime makes these calls."""
    (chunk_weight,) = kernels["classifier_forward"].interface.weight_args or ()
    suffixes = classifier_kernel_suffixes(config, chunk_weight.shape[3])
    chunks = [suffixes[size] for _, size in vocab_chunks(config, chunk_weight.shape[3])]
    gqa = config.num_kv_heads != config.num_heads
    shapes = {
        "q": (config.q_dim, config.hidden_size),
        "kv": (config.kv_dim, config.hidden_size),
        "o": (config.hidden_size, config.q_dim),
        "up": (config.ffn_size, config.hidden_size),
        "down": (config.hidden_size, config.ffn_size),
    }
    dw = {k: weight_gradient_name(*v) for k, v in shapes.items()}
    calls: list[tuple[str, int | None]] = []
    for layer in range(config.num_layers):
        calls += [
            (name, layer)
            for name in (
                "rms_norm_forward",
                "attention_forward",
                "output_projection",
                "rms_norm_forward",
                "ffn_forward",
            )
        ]
    calls.append(("rms_norm_forward", None))
    calls += [("classifier_forward" + s, None) for s in chunks]
    calls.append(("cross_entropy_combine", None))
    for s in chunks:
        calls += [
            ("classifier_backward" + s, None),
            ("classifier_projection_backward" + s, None),
            (weight_gradient_name(*chunk_shape(config, s, suffixes)), None),
        ]
    calls.append(("rms_norm_backward", None))
    for layer in reversed(range(config.num_layers)):
        names = [
            "ffn_backward_w2",
            "silu_backward",
            "ffn_backward_w13",
            dw["down"],
            dw["up"],
            dw["up"],
            "rms_norm_backward",
            "output_projection_backward",
            dw["o"],
            "attention_backward_1",
            "attention_backward_2",
            *(["gqa_reduce"] if gqa else []),
            "rope_backward",
            "q_projection_backward",
            "kv_projection_backward",
            dw["q"],
            dw["kv"],
            dw["kv"],
            "rms_norm_backward",
        ]
        calls += [(name, layer) for name in names]
    return calls


def chunk_shape(
    config: LlmConfig, suffix: str, suffixes: Mapping[int, str]
) -> tuple[int, int]:
    """[rows, hidden] of the vocabulary chunk whose kernels end in `suffix`."""
    (size,) = [size for size, s in suffixes.items() if s == suffix]
    return size, config.hidden_size


@dataclass
class LayerActivations:
    """What the forward of one layer keeps for its backward."""

    x: np.ndarray
    h1: np.ndarray
    attention: Arrays
    x2: np.ndarray
    h2: np.ndarray
    ffn: Arrays


class TrainingRuntime:
    """One training step (forward, loss, backward) of a decoder with
    `config`'s shape and the Hugging Face-named `weights`
    (`embed_tokens.weight`, `layers.{l}.…`, `norm.weight`, `lm_head.weight`;
    the kernels hold the RoPE tables of the config as constants), composed
    from `kernels`
    (`compile_training_kernels(config, …)`). Without `lm_head.weight` the
    classifier is the embedding (tied, as in Qwen3-0.6B's checkpoint).

    `loss_scale` multiplies the loss gradient the backward starts from, and
    the returned gradients are divided by it: with fp16 kernels, a mean over
    S rows of probabilities over a large vocabulary is far below fp16's
    smallest normal number (6e-5) unless scaled."""

    def __init__(
        self,
        config: LlmConfig,
        weights: Mapping[str, np.ndarray],
        kernels: Mapping[str, CompiledKernel],
        loss_scale: float = 1.0,
        padding_idx: int | None = None,
    ):
        self.config = config
        self.padding_idx = padding_idx
        """The embedding row the lookup's gradient skips (torch's
        `nn.Embedding(padding_idx=pad_token_id)`, as transformers builds the
        decoders); None: none."""
        self.weights = {name: np.asarray(w, np.float32) for name, w in weights.items()}
        self.kernels = kernels
        self.loss_scale = loss_scale
        self.classifier = (
            "lm_head.weight" if "lm_head.weight" in weights else "embed_tokens.weight"
        )
        (chunk_weight,) = kernels["classifier_forward"].interface.weight_args or ()
        self.chunks = vocab_chunks(config, chunk_weight.shape[3])
        self.suffixes = classifier_kernel_suffixes(config, chunk_weight.shape[3])
        self.trace: list[tuple[str, int | None]] | None = None
        self.layer: int | None = None

    # --- calls ---------------------------------------------------------------

    def call(
        self, name: str, weights: Mapping[str, np.ndarray] | None = None, **inputs
    ) -> Arrays:
        """Runs kernel `name` on logical inputs given by argument name, with
        `weights` keyed by the kernel's weight names (recorded in `trace`,
        with the layer it serves, where that is a list)."""
        if self.trace is not None:
            self.trace.append((name, self.layer))
        return run_kernel(self.kernels[name], inputs, weights or {}, self.weights)

    def layer_weights(self, layer: int) -> Arrays:
        """Layer `layer`'s weights under the names the kernels (built for
        layer 0) use."""
        prefix = f"layers.{layer}."
        return {
            "layers.0." + name.removeprefix(prefix): w
            for name, w in self.weights.items()
            if name.startswith(prefix)
        }

    def weight_gradient(self, dy: np.ndarray, x: np.ndarray) -> np.ndarray:
        """dW = dyᵀ·x for y = x·Wᵀ."""
        name = weight_gradient_name(dy.shape[1], x.shape[1])
        return self.call(name, dy=dy, x=x)["dw"]

    def tiled(self, name: str, heads: int) -> np.ndarray:
        """A QK-norm γ [Dh] tiled per head, [H·Dh]."""
        return np.tile(self.gamma(name), heads)

    def gamma(self, name: str) -> np.ndarray:
        """A norm's scale as the kernels take it: the weight, or 1 + the
        weight (unit_offset_norms: Gemma's), whose gradient is the weight's."""
        w = self.weights[name]
        return w + np.float32(1) if self.config.unit_offset_norms else w

    def embedding_scale(self) -> np.float32:
        """What the embedding's rows are multiplied by: √hidden in float32
        (scaled_embedding: Gemma's), else 1."""
        if not self.config.scaled_embedding:
            return np.float32(1)
        return np.float32(np.sqrt(self.config.hidden_size))

    def per_row(self, *columns: np.ndarray) -> np.ndarray:
        """Per-row values [S] as [S, k], zero-padded to the kernels' width."""
        values = np.stack(columns, axis=1)
        width = row_columns(self.config, values.shape[1])
        return np.pad(values, ((0, 0), (0, width - values.shape[1])))

    def chunk_kernels(self) -> list[tuple[int, int, str]]:
        """(start, size, kernel name suffix) of each vocabulary chunk."""
        return [(start, size, self.suffixes[size]) for start, size in self.chunks]

    # --- the step ------------------------------------------------------------

    def step(self, tokens: np.ndarray, labels: np.ndarray) -> tuple[float, Arrays]:
        """The mean cross-entropy of predicting `labels` [S] from `tokens`
        [S] and the gradient of every weight (not the RoPE tables)."""
        w = self.weights
        grads = {
            name: np.zeros_like(value)
            for name, value in w.items()
            if not name.startswith("rope.")
        }
        x = w["embed_tokens.weight"][tokens] * self.embedding_scale()
        saved = []
        for layer in range(self.config.num_layers):
            self.layer = layer
            activations = self.layer_forward(layer, x)
            saved.append(activations)
            x = activations.ffn["out"]
        self.layer = None
        h = self.call("rms_norm_forward", x=x, gamma=self.gamma("norm.weight"))["y"]
        loss, lse, label_rows = self.loss_forward(h, labels)

        dh = self.loss_backward(h, labels, lse, label_rows, grads)
        result = self.call(
            "rms_norm_backward", x=x, gamma=self.gamma("norm.weight"), dy=dh
        )
        grads["norm.weight"] += result["d_gamma"]
        dx = result["dx"]
        for layer in reversed(range(self.config.num_layers)):
            self.layer = layer
            dx = self.layer_backward(layer, saved[layer], dx, grads)
        self.layer = None
        rows = dx * self.embedding_scale()
        if self.padding_idx is not None:
            rows[tokens == self.padding_idx] = 0
        np.add.at(grads["embed_tokens.weight"], tokens, rows)
        if self.loss_scale != 1.0:
            for g in grads.values():
                g /= self.loss_scale
        return loss, grads

    def add_bias_gradient(self, grads: Arrays, name: str, dy: np.ndarray) -> None:
        """A projection's bias gradient, the sum of dy's rows, where the
        projection has a bias."""
        if name in grads:
            grads[name] += dy.sum(axis=0)

    def layer_forward(self, layer: int, x: np.ndarray) -> LayerActivations:
        c = self.config
        p = f"layers.{layer}."
        lw = self.layer_weights(layer)
        h1 = self.call(
            "rms_norm_forward", x=x, gamma=self.gamma(p + "input_layernorm.weight")
        )
        norms = {}
        if c.qk_norm:
            norms = {
                "q_norm": self.tiled(p + "self_attn.q_norm.weight", c.num_heads),
                "k_norm": self.tiled(p + "self_attn.k_norm.weight", c.num_kv_heads),
            }
        biases = self.biases(layer)
        qkv = {k: v for k, v in biases.items() if k != "o_bias"}
        attention = self.call("attention_forward", lw, h=h1["y"], **norms, **qkv)
        o_bias = {k: v for k, v in biases.items() if k == "o_bias"}
        o = self.call("output_projection", lw, attn=attention["attn"], **o_bias)["o"]
        x2 = x + o
        gamma = self.gamma(p + "post_attention_layernorm.weight")
        h2 = self.call("rms_norm_forward", x=x2, gamma=gamma)["y"]
        ffn = self.call("ffn_forward", lw, h=h2, x=x2)
        return LayerActivations(x, h1["y"], attention, x2, h2, ffn)

    def loss_forward(
        self, h: np.ndarray, labels: np.ndarray
    ) -> tuple[float, np.ndarray, np.ndarray]:
        """Mean cross-entropy, the per-row logsumexp over the vocabulary and
        the label rows W[label] of the classifier."""
        lm_head = self.weights[self.classifier]
        chunk_lse = [
            self.call(
                "classifier_forward" + suffix,
                {CHUNK_WEIGHT: lm_head[start : start + size]},
                h=h,
            )["lse"][:, 0]
            for start, size, suffix in self.chunk_kernels()
        ]
        label_rows = lm_head[labels]
        combined = self.call(
            "cross_entropy_combine",
            h=h,
            label_rows=label_rows,
            chunk_lse=self.per_row(*chunk_lse),
        )
        return float(np.mean(combined["loss"])), combined["lse"][:, 0], label_rows

    def loss_backward(
        self,
        h: np.ndarray,
        labels: np.ndarray,
        lse: np.ndarray,
        label_rows: np.ndarray,
        grads: Arrays,
    ) -> np.ndarray:
        """dh of the mean cross-entropy (times the loss scale), adding the
        classifier's gradient to `grads`. d_logits = (softmax − onehot)·d_loss:
        the softmax part per chunk on the kernels, the one-hot part as a
        gather/scatter of label rows."""
        s = self.config.seq_len
        d_loss = np.full(s, self.loss_scale / s, np.float32)
        lm_head = self.weights[self.classifier]
        d_lm_head = grads[self.classifier]
        row_stats = self.per_row(lse, d_loss)
        dh = -d_loss[:, None] * label_rows
        np.add.at(d_lm_head, labels, -d_loss[:, None] * h)
        for start, size, suffix in self.chunk_kernels():
            chunk = {CHUNK_WEIGHT: lm_head[start : start + size]}
            d_logits = self.call(
                "classifier_backward" + suffix, chunk, h=h, row_stats=row_stats
            )["d_logits"]
            dh += self.call(
                "classifier_projection_backward" + suffix, chunk, d_logits=d_logits
            )["dh"]
            d_lm_head[start : start + size] += self.weight_gradient(d_logits, h)
        return dh

    def biases(self, layer: int) -> Arrays:
        """Layer `layer`'s attention biases by kernel input (`q_bias`, ...)."""
        p = f"layers.{layer}.self_attn."
        return {
            f"{k}_bias": self.weights[f"{p}{k}_proj.bias"]
            for k in "qkvo"
            if f"{p}{k}_proj.bias" in self.weights
        }

    def layer_backward(
        self, layer: int, saved: LayerActivations, dx: np.ndarray, grads: Arrays
    ) -> np.ndarray:
        """dx of the layer's input from dx of its output; adds the layer's
        weight gradients to `grads`."""
        c = self.config
        p = f"layers.{layer}."
        lw = self.layer_weights(layer)
        ffn, attention = saved.ffn, saved.attention

        # FFN: out = x2 + down(silu(gate)·up), gate/up = h2·W1ᵀ / h2·W3ᵀ.
        d_act = self.call("ffn_backward_w2", lw, dy=dx)["d_act"]
        silu = self.call("silu_backward", gate=ffn["gate"], up=ffn["up"], d_act=d_act)
        dh2 = self.call("ffn_backward_w13", lw, **silu)["dh"]
        grads[p + "mlp.down_proj.weight"] += self.weight_gradient(dx, ffn["act"])
        grads[p + "mlp.gate_proj.weight"] += self.weight_gradient(
            silu["d_gate"], saved.h2
        )
        grads[p + "mlp.up_proj.weight"] += self.weight_gradient(silu["d_up"], saved.h2)
        gamma = p + "post_attention_layernorm.weight"
        norm = self.call(
            "rms_norm_backward", x=saved.x2, gamma=self.gamma(gamma), dy=dh2
        )
        grads[gamma] += norm["d_gamma"]
        dx2 = dx + norm["dx"]

        # Attention: x2 = x + o_proj(attention(...)).
        d_attn = self.call("output_projection_backward", lw, dy=dx2)["d_attn"]
        self.add_bias_gradient(grads, p + "self_attn.o_proj.bias", dx2)
        grads[p + "self_attn.o_proj.weight"] += self.weight_gradient(
            dx2, attention["attn"]
        )
        heads = {k: attention[k] for k in ("q_rot", "k_rep")}
        part1 = self.call(
            "attention_backward_1", **heads, v_rep=attention["v_rep"], d_attn=d_attn
        )
        part2 = self.call(
            "attention_backward_2",
            probs=part1["probs"],
            d_probs=part1["d_probs"],
            **heads,
        )
        if c.num_kv_heads != c.num_heads:
            reduced = self.call(
                "gqa_reduce", dk_rep=part2["dk_rep"], dv_rep=part1["dv_rep"]
            )
            dk_rot, dv = reduced["dk_rot"], reduced["dv"]
        else:
            dk_rot, dv = part2["dk_rep"], part1["dv_rep"]
        norms = {}
        if c.qk_norm:
            norms = {
                "q_pre": attention["q_pre"],
                "k_pre": attention["k_pre"],
                "q_norm": self.tiled(p + "self_attn.q_norm.weight", c.num_heads),
                "k_norm": self.tiled(p + "self_attn.k_norm.weight", c.num_kv_heads),
            }
        rope = self.call(
            "rope_backward", dq_rot=part2["dq_rot"], dk_rot=dk_rot, **norms
        )
        if c.qk_norm:
            for name, heads_count in (
                ("q_norm", c.num_heads),
                ("k_norm", c.num_kv_heads),
            ):
                per_head = rope[f"d_{name}"].reshape(heads_count, c.head_dim)
                grads[p + f"self_attn.{name}.weight"] += per_head.sum(axis=0)
        dq, dk = rope["dq"], rope["dk"]
        for name, d in (("q_proj", dq), ("k_proj", dk), ("v_proj", dv)):
            self.add_bias_gradient(grads, p + f"self_attn.{name}.bias", d)
        dh1 = self.call("q_projection_backward", lw, dq=dq)["dh"]
        dh1 += self.call("kv_projection_backward", lw, dk=dk, dv=dv)["dh"]
        for name, d in (("q_proj", dq), ("k_proj", dk), ("v_proj", dv)):
            grads[p + f"self_attn.{name}.weight"] += self.weight_gradient(d, saved.h1)
        gamma = p + "input_layernorm.weight"
        norm = self.call(
            "rms_norm_backward", x=saved.x, gamma=self.gamma(gamma), dy=dh1
        )
        grads[gamma] += norm["d_gamma"]
        return dx2 + norm["dx"]
