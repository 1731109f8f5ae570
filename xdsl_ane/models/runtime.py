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

The CPU does the glue (`CPU_OPERATIONS`): the embedding lookup and its
scatter-add gradient, residual adds, sums of gradient contributions, the
per-head sum of the QK-norm γ gradients (the kernels take γ tiled per
head), the biases' gradients (sums of rows), and the label terms of the
cross-entropy: the label's logit is h·W[label] (W's rows gathered and fed
to `cross_entropy_combine`), and the one-hot part of the gradient is
−d_loss·W[label] for dh and a scatter-add of −d_loss·h into W's label
rows. The loss is the mean cross-entropy over the S rows.

One runtime serves every family the kernels take: a layer is pre-norm
attention then the MLP, each added to the residual stream, or with the
family's arrangement (`layer_forward`): norms after each branch (sandwich
or post norms), attention and the MLP side by side (a parallel residual,
one norm or two), each branch times the residual multiplier.

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
from xdsl_ane.models.lora_kernels import (
    LoraShape,
    chunk_kernel,
    layer_kernel,
    lora_gradient_name,
)
from xdsl_ane.models.train_weights import runtime_shapes, trainer_config
from xdsl_ane.models.training import (
    MODULES,
    attention_kind,
    norm_kernel,
    residual_in_ffn,
    rope_backward_needed,
    weight_gradient_name,
)
from xdsl_ane.models.vocabulary import (
    CHUNK_WEIGHT,
    classifier_kernel_suffixes,
    row_columns,
    vocab_chunks,
)
from xdsl_ane.models.xielu import XIELU, XIELU_PARAMS, effective, parameter_gradients

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
    "embedding: x = embed_tokens.weight[tokens] (times the family's embedding "
    "scale), plus embed_positions.weight[:S] with learned positions",
    "residual adds: x2 = x + o (attention), out = x2 + ffn (in ffn_forward where "
    "the family adds nothing between), each branch times the residual multiplier",
    "logit scale: h times the family's logit scale before the classifier, "
    "dh times it after",
    "label rows: W[labels] of the classifier, fed to cross_entropy_combine",
    "loss gradient: dh = -d_loss * W[labels]; W[labels] -= d_loss * h "
    "(scatter-add), d_loss = loss_scale / S (times 1 - tanh² of the label's "
    "logit over the soft-cap, where the family caps logits)",
    "per-chunk sums: dh += classifier_projection_backward per vocabulary chunk",
    "QK-norm gamma gradients summed over heads",
    "bias and LayerNorm beta gradients: sums of their output gradients' rows",
    "xIELU: its input [alpha_p, alpha_n] (softplus of the learned a_p, a_n, "
    "plus beta) per layer, and the gradients of a_p and a_n (sums over its input)",
    "embedding gradient: scatter-add of dx into embed_tokens.weight[tokens]",
    "gradients divided by the loss scale, averaged over the batch",
]
"""What the CPU does between the kernel calls of `TrainingRuntime.step`."""


def step_calls(
    config: LlmConfig,
    kernels: Mapping[str, CompiledKernel],
    lora: LoraShape | None = None,
) -> list[tuple[str, int | None]]:
    """The kernel calls of one `TrainingRuntime.step`, in order, with the
    layer each serves (None: none): the plan a runtime on a device follows
    (`plan.json`). They are the step's own calls, traced on zeros without
    running a kernel (`TrainingRuntime.dry`)."""
    runtime = TrainingRuntime.dry(config, kernels, lora)
    tokens = np.zeros(config.seq_len, np.int64)
    runtime.step(tokens, tokens)
    assert runtime.trace is not None
    return runtime.trace


def kernel_vocab_chunk(kernels: Mapping[str, CompiledKernel]) -> int:
    """The vocabulary chunk the classifier kernels were built for."""
    if "classifier_forward" in kernels:  # the chunk's rows fed: their shape
        (weight,) = kernels["classifier_forward"].interface.weight_args or ()
        return weight.shape[3]
    layouts = kernels[chunk_kernel("classifier_projection_backward", 0)]
    return (layouts.interface.arg_layouts or ())[0].logical[1]


def adapter_shapes(config: LlmConfig, lora: LoraShape) -> dict[str, tuple[int, ...]]:
    """LoRA's adapters by the runtime's names, with their shapes."""
    from xdsl_ane.models.lora_kernels import lora_shape

    shapes = {}
    for module in sorted(lora.targets):
        out, inputs = lora_shape(config, module)
        shapes[f"{module}.lora_A"] = (lora.rank, inputs)
        shapes[f"{module}.lora_B"] = (out, lora.rank)
    return shapes


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
    o: np.ndarray
    """The attention branch before its post-norm (where the family has one)."""
    x2: np.ndarray
    h2: np.ndarray
    ffn: Arrays


class Gradients(dict):
    """The step's gradients by weight name; `add` accumulates (nothing in a
    dry run, which keeps none)."""

    def __init__(
        self,
        weights: Mapping[str, np.ndarray],
        keep: bool = True,
        frozen: bool = False,
    ):
        super().__init__(
            {n: np.zeros(w.shape, np.float32) for n, w in weights.items()}
            if keep
            else {}
        )
        self.keep = keep
        self.frozen = frozen
        """Only `weights` train (LoRA's adapters): others' gradients are
        not kept."""

    def add(self, name: str, value: np.ndarray, rows: np.ndarray | None = None):
        """grads[name] += value (at `rows`, a scatter-add, where given)."""
        if not self.keep or (self.frozen and name not in self):
            return
        if rows is None:
            self[name] += value
        else:
            np.add.at(self[name], rows, value)


class TrainingRuntime:
    """One training step (forward, loss, backward) of a decoder with
    `config`'s shape and the runtime's `weights` (`embed_tokens.weight`,
    `layers.{l}.…`, `norm.weight`, `lm_head.weight`, named and shaped as
    `models.train_weights.runtime_shapes` says; the kernels hold the RoPE
    tables of the config as constants), composed from `kernels`
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
        lora: LoraShape | None = None,
    ):
        self.config = trainer_config(config).with_(tied="lm_head.weight" not in weights)
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
        self.lora = lora
        """LoRA's kernels (`models/lora_kernels.py`): the base weights are
        their constants, the adapters (`….lora_A`, `….lora_B` in
        `weights`) their dynamic weights and all that trains."""
        chunk = kernel_vocab_chunk(kernels)
        self.chunks = vocab_chunks(config, chunk)
        self.suffixes = classifier_kernel_suffixes(config, chunk)
        self.trace: list[tuple[str, int | None]] | None = None
        self.layer: int | None = None
        self.running = True
        """False in a dry run: calls are traced, not run."""
        self.norm = norm_kernel(self.config)

    @classmethod
    def dry(
        cls,
        config: LlmConfig,
        kernels: Mapping[str, CompiledKernel],
        lora: LoraShape | None = None,
    ) -> TrainingRuntime:
        """A runtime that traces its calls without running them: weights of
        zeros that take no memory, kernels' results zeros of their shapes."""
        zero = np.float32(0)
        config = trainer_config(config)
        shapes = runtime_shapes(config)
        if lora is not None:
            shapes |= adapter_shapes(config, lora)
        weights = {name: np.broadcast_to(zero, shape) for name, shape in shapes.items()}
        runtime = cls(config, weights, kernels, lora=lora)
        runtime.running = False
        runtime.trace = []
        return runtime

    # --- calls ---------------------------------------------------------------

    def call(
        self, name: str, weights: Mapping[str, np.ndarray] | None = None, **inputs
    ) -> Arrays:
        """Runs kernel `name` on logical inputs given by argument name, with
        `weights` keyed by the kernel's weight names (recorded in `trace`,
        with the layer it serves, where that is a list)."""
        if self.lora is not None and self.layer is not None:
            name = layer_kernel(name, self.layer)
        if self.trace is not None:
            self.trace.append((name, self.layer))
        kernel = self.kernels[name]
        if not self.running:
            layouts = kernel.interface.result_layouts or ()
            return {
                n: np.zeros(layout.logical, np.float32)
                for n, layout in zip(kernel.result_names, layouts)
            }
        return run_kernel(kernel, inputs, weights or {}, self.weights)

    def layer_weights(self, layer: int) -> Arrays:
        """Layer `layer`'s weights under the names the kernels (built for
        layer 0) use."""
        prefix = f"layers.{layer}."
        if self.lora is not None:  # the layer's own kernels take its adapters
            return {
                name: w
                for name, w in self.weights.items()
                if name.startswith(prefix) and name.endswith(("lora_A", "lora_B"))
            }
        return {
            "layers.0." + name.removeprefix(prefix): w
            for name, w in self.weights.items()
            if name.startswith(prefix)
        }

    def weight_gradient(self, dy: np.ndarray, x: np.ndarray) -> np.ndarray:
        """dW = dyᵀ·x for y = x·Wᵀ."""
        name = weight_gradient_name(dy.shape[1], x.shape[1])
        return self.call(name, dy=dy, x=x)["dw"]

    def projection_gradient(
        self, grads: Gradients, module: str, dy: np.ndarray, x: np.ndarray
    ) -> None:
        """Adds the gradient of projection `module` (`layers.0.mlp.up_proj`)
        y = x·Wᵀ: dW, or with LoRA its adapters' dA and dB (none for a
        projection LoRA leaves alone)."""
        if self.lora is None:
            grads.add(module + ".weight", self.weight_gradient(dy, x))
            return
        if module not in self.lora.targets:
            return
        adapters = {k: self.weights[f"{module}.{k}"] for k in ("lora_A", "lora_B")}
        name = lora_gradient_name(dy.shape[1], x.shape[1])
        result = self.call(name, adapters, dy=dy, x=x)
        grads.add(module + ".lora_A", result["d_a"])
        grads.add(module + ".lora_B", result["d_b"])

    def tiled(self, name: str, heads: int) -> np.ndarray:
        """A QK-norm γ [Dh] tiled per head, [H·Dh] (a projection QK-norm's
        γ, over the whole projection, as it is)."""
        if self.config.family.projection_qk_norm:
            return self.weights[name]
        return np.tile(self.gamma(name), heads)

    def gamma(self, name: str) -> np.ndarray:
        """A norm's scale as the kernels take it: the weight, or 1 + the
        weight (unit_offset_norms: Gemma's), whose gradient is the weight's."""
        w = self.weights[name]
        return w + np.float32(1) if self.config.family.unit_offset_norms else w

    def embedding_scale(self) -> np.float32:
        """What the embedding's rows are multiplied by: √hidden in float32
        (scaled_embedding: Gemma's), the embedding multiplier (Granite's),
        else 1."""
        c = self.config
        if c.family.scaled_embedding:
            return np.float32(np.sqrt(c.hidden_size))
        if c.embedding_multiplier is not None:
            return np.float32(c.embedding_multiplier)
        return np.float32(1)

    def logit_scale(self) -> np.float32:
        """What h is multiplied by before the classifier (1 / Granite's
        logits_scaling, Cohere's logit_scale), else 1."""
        divisor = self.config.logits_divisor
        return np.float32(1 if divisor is None else 1 / divisor)

    def branch(self, y: np.ndarray) -> np.ndarray:
        """A branch (attention's, the MLP's) as the residual adds it: times
        the residual multiplier where the family has one (Granite)."""
        r = self.config.residual_multiplier
        return y if r is None else y * np.float32(r)

    def per_row(self, *columns: np.ndarray) -> np.ndarray:
        """Per-row values [S] as [S, k], zero-padded to the kernels' width."""
        values = np.stack(columns, axis=1)
        width = row_columns(self.config, values.shape[1])
        return np.pad(values, ((0, 0), (0, width - values.shape[1])))

    def chunk_kernels(self) -> list[tuple[int, int, str]]:
        """(start, size, kernel name suffix) of each vocabulary chunk."""
        if self.lora is not None:
            return [
                (start, size, chunk_kernel("", index))
                for index, (start, size) in enumerate(self.chunks)
            ]
        return [(start, size, self.suffixes[size]) for start, size in self.chunks]

    def chunk_weights(self, start: int, size: int) -> Arrays:
        """The classifier kernels' dynamic weight: the chunk's rows (none
        with LoRA, whose kernels hold them)."""
        if self.lora is not None:
            return {}
        return {CHUNK_WEIGHT: self.weights[self.classifier][start : start + size]}

    def norm_forward(self, x: np.ndarray, name: str) -> np.ndarray:
        """The family's norm `name` (`layers.0.input_layernorm`) of x."""
        inputs = {"x": x, "gamma": self.gamma(name + ".weight")}
        if name + ".bias" in self.weights:
            inputs["beta"] = self.weights[name + ".bias"]
        return self.call(self.norm + "_forward", **inputs)["y"]

    def norm_backward(
        self, x: np.ndarray, name: str, dy: np.ndarray, grads: Gradients
    ) -> np.ndarray:
        """dx of the norm `name` at x, adding its γ's (and β's) gradients."""
        gamma = self.gamma(name + ".weight")
        result = self.call(self.norm + "_backward", x=x, gamma=gamma, dy=dy)
        grads.add(name + ".weight", result["d_gamma"])
        self.add_bias_gradient(grads, name + ".bias", dy)
        return result["dx"]

    def add_bias_gradient(self, grads: Gradients, name: str, dy: np.ndarray) -> None:
        """A bias's gradient, the sum of dy's rows, where there is the bias."""
        if name in self.weights:
            grads.add(name, dy.sum(axis=0))

    def biases(self, layer: int, *projections: str) -> Arrays:
        """Layer `layer`'s biases by kernel input (`q_bias`, `up_bias`)."""
        p = f"layers.{layer}."
        return {
            f"{k}_bias": self.weights[f"{p}{MODULES[k]}_proj.bias"]
            for k in projections
            if f"{p}{MODULES[k]}_proj.bias" in self.weights
        }

    # --- the step ------------------------------------------------------------

    def step(self, tokens: np.ndarray, labels: np.ndarray) -> tuple[float, Arrays]:
        """The mean cross-entropy of predicting `labels` [S] from `tokens`
        [S] and the gradient of every weight."""
        c, w = self.config, self.weights
        names = runtime_shapes(c)
        if self.lora is not None:
            names = adapter_shapes(c, self.lora)
        trained = {name: w[name] for name in names}
        grads = Gradients(trained, self.running, frozen=self.lora is not None)
        x = w["embed_tokens.weight"][tokens] * self.embedding_scale()
        if not c.family.rope:
            x = x + w["embed_positions.weight"][: c.seq_len]
        saved = []
        for layer in range(c.num_layers):
            self.layer = layer
            activations = self.layer_forward(layer, x)
            saved.append(activations)
            x = activations.ffn["y"]
        self.layer = None
        h = self.norm_forward(x, "norm")
        h = h * self.logit_scale()
        loss, lse, label_rows = self.loss_forward(h, labels)

        dh = self.loss_backward(h, labels, lse, label_rows, grads)
        dx = self.norm_backward(x, "norm", dh * self.logit_scale(), grads)
        for layer in reversed(range(c.num_layers)):
            self.layer = layer
            dx = self.layer_backward(layer, saved[layer], dx, grads)
        self.layer = None
        if not c.family.rope:
            grads.add("embed_positions.weight", dx, np.arange(c.seq_len))
        rows = dx * self.embedding_scale()
        if self.padding_idx is not None:
            rows[tokens == self.padding_idx] = 0
        grads.add("embed_tokens.weight", rows, tokens)
        if self.loss_scale != 1.0:
            for g in grads.values():
                g /= self.loss_scale
        return loss, dict(grads)

    def layer_forward(self, layer: int, x: np.ndarray) -> LayerActivations:
        """One layer: h1 = norm(x), o = attention(h1) (then its post-norm),
        x2 = x + o; h2 = norm(x2) (of x, or h1 itself, beside attention with
        a parallel residual), out = x2 + mlp(h2) (then its post-norm):
        `ffn["y"]`."""
        c, p = self.config, f"layers.{layer}."
        after = c.family.sandwich_norms or c.family.post_norms
        h1 = x if c.family.post_norms else self.norm_forward(x, p + "input_layernorm")
        attention = self.attention_forward(layer, h1)
        o = attention["o"]
        if after:
            o = self.norm_forward(o, p + "post_attention_layernorm")
        x2 = x + self.branch(o)
        if c.parallel_residual:
            h2 = (
                h1
                if c.family.shared_norm
                else self.norm_forward(x, p + "post_attention_layernorm")
            )
        elif c.family.post_norms:
            h2 = x2
        else:
            second = (
                "pre_feedforward_layernorm"
                if c.family.sandwich_norms
                else ("post_attention_layernorm")
            )
            h2 = self.norm_forward(x2, p + second)
        lw = self.layer_weights(layer)
        mlp_biases = self.biases(layer, "gate", "up", "down")
        mlp_biases |= self.activation_inputs(layer)
        if residual_in_ffn(c):
            ffn = self.call("ffn_forward", lw, h=h2, x=x2, **mlp_biases)
            ffn["y"] = ffn["out"]
        else:
            ffn = self.call("ffn_forward", lw, h=h2, **mlp_biases)
            m = ffn["out"]
            if after:
                m = self.norm_forward(m, p + "post_feedforward_layernorm")
            ffn["y"] = x2 + self.branch(m)
        return LayerActivations(x, h1, attention, attention["o"], x2, h2, ffn)

    def attention_forward(self, layer: int, h1: np.ndarray) -> Arrays:
        """attention_forward and output_projection of layer `layer` (its
        kind's kernels); the output projection's result as `o`."""
        c, p = self.config, f"layers.{layer}."
        kind = attention_kind(c, layer)
        lw = self.layer_weights(layer)
        norms = {}
        if c.family.qk_norm or c.family.projection_qk_norm:
            norms = {
                "q_norm": self.tiled(p + "self_attn.q_norm.weight", c.num_heads),
                "k_norm": self.tiled(p + "self_attn.k_norm.weight", c.num_kv_heads),
            }
        name = "attention_forward" + kind.mask_suffix + kind.rope_suffix
        qkv = self.biases(layer, "q", "k", "v")
        attention = self.call(name, lw, h=h1, **norms, **qkv)
        o_bias = self.biases(layer, "o")
        attention["o"] = self.call(
            "output_projection", lw, attn=attention["attn"], **o_bias
        )["o"]
        return attention

    def loss_forward(
        self, h: np.ndarray, labels: np.ndarray
    ) -> tuple[float, np.ndarray, np.ndarray]:
        """Mean cross-entropy, the per-row logsumexp over the vocabulary and
        the label rows W[label] of the classifier."""
        lm_head = self.weights[self.classifier]
        chunk_lse = [
            self.call(
                "classifier_forward" + suffix,
                self.chunk_weights(start, size),
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
        grads: Gradients,
    ) -> np.ndarray:
        """dh of the mean cross-entropy (times the loss scale), adding the
        classifier's gradient to `grads`. d_logits = (softmax − onehot)·d_loss:
        the softmax part per chunk on the kernels, the one-hot part as a
        gather/scatter of label rows (through the soft-cap's tanh where the
        family caps the logits)."""
        s = self.config.seq_len
        d_loss = np.full(s, self.loss_scale / s, np.float32)
        row_stats = self.per_row(lse, d_loss)
        d_label = d_loss
        cap = self.config.final_softcap
        if cap is not None:
            t = np.tanh(np.sum(h * label_rows, axis=1) / np.float32(cap))
            d_label = d_loss * (1 - t * t)
        dh = -d_label[:, None] * label_rows
        grads.add(self.classifier, -d_label[:, None] * h, labels)
        for start, size, suffix in self.chunk_kernels():
            chunk = self.chunk_weights(start, size)
            d_logits = self.call(
                "classifier_backward" + suffix, chunk, h=h, row_stats=row_stats
            )["d_logits"]
            dh += self.call(
                "classifier_projection_backward" + suffix, chunk, d_logits=d_logits
            )["dh"]
            if self.lora is not None:
                continue  # the classifier is frozen
            dw = self.weight_gradient(d_logits, h)
            if self.running:
                grads[self.classifier][start : start + size] += dw
        return dh

    def layer_backward(
        self, layer: int, saved: LayerActivations, dy: np.ndarray, grads: Gradients
    ) -> np.ndarray:
        """dx of the layer's input from dy of its output; adds the layer's
        weight gradients to `grads` (`layer_forward` backwards)."""
        c, p = self.config, f"layers.{layer}."
        after = c.family.sandwich_norms or c.family.post_norms
        dm = self.branch(dy)
        if after:
            m = saved.ffn["out"]
            dm = self.norm_backward(m, p + "post_feedforward_layernorm", dm, grads)
        dh2 = self.ffn_backward(layer, saved, dm, grads)
        dx2, dx = dy, None
        if c.parallel_residual:
            if not c.family.shared_norm:
                name = p + "post_attention_layernorm"
                dx = self.norm_backward(saved.x, name, dh2, grads)
        elif c.family.post_norms:
            dx2 = dy + dh2
        else:
            second = (
                "pre_feedforward_layernorm"
                if c.family.sandwich_norms
                else ("post_attention_layernorm")
            )
            dx2 = dy + self.norm_backward(saved.x2, p + second, dh2, grads)
        do = self.branch(dx2)
        if after:
            name = p + "post_attention_layernorm"
            do = self.norm_backward(saved.o, name, do, grads)
        dh1 = self.attention_backward(layer, saved, do, grads)
        if c.parallel_residual and c.family.shared_norm:
            dh1 = dh1 + dh2
        total = dx2 if dx is None else dx2 + dx
        if c.family.post_norms:
            return total + dh1
        return total + self.norm_backward(saved.x, p + "input_layernorm", dh1, grads)

    def ffn_backward(
        self, layer: int, saved: LayerActivations, dm: np.ndarray, grads: Gradients
    ) -> np.ndarray:
        """dh2 of the MLP from dm of its output, adding its gradients."""
        c, p = self.config, f"layers.{layer}."
        lw, ffn = self.layer_weights(layer), saved.ffn
        d_act = self.call("ffn_backward_w2", lw, dy=dm)["d_act"]
        self.projection_gradient(grads, p + "mlp.down_proj", dm, ffn["act"])
        self.add_bias_gradient(grads, p + "mlp.down_proj.bias", dm)
        params = self.activation_inputs(layer)
        if c.family.gated_mlp:
            act = self.call(
                "silu_backward",
                gate=ffn["gate"],
                up=ffn["up"],
                d_act=d_act,
                **params,
            )
            self.activation_gradients(grads, layer, ffn["gate"], d_act * ffn["up"])
        else:
            act = self.call("silu_backward", up=ffn["up"], d_act=d_act, **params)
            self.activation_gradients(grads, layer, ffn["up"], d_act)
        dh2 = self.call("ffn_backward_w13", lw, **act)["dh"]
        for name in ("gate", "up") if c.family.gated_mlp else ("up",):
            d = act[f"d_{name}"]
            self.projection_gradient(grads, p + f"mlp.{name}_proj", d, saved.h2)
            self.add_bias_gradient(grads, p + f"mlp.{name}_proj.bias", d)
        return dh2

    def activation_inputs(self, layer: int) -> Arrays:
        """xIELU's kernel input `xielu` [α_p, α_n] of layer `layer`'s learned
        parameters (none for another activation)."""
        c = self.config
        if c.activation != XIELU:
            return {}
        assert c.xielu_constants is not None
        p = f"layers.{layer}.mlp.act_fn."
        a_p, a_n = (float(self.weights[p + n].reshape(-1)[0]) for n in XIELU_PARAMS)
        return {"xielu": effective(a_p, a_n, c.xielu_constants[0])}

    def activation_gradients(
        self, grads: Gradients, layer: int, x: np.ndarray, g: np.ndarray
    ) -> None:
        """Adds the gradients of xIELU's a_p and a_n of layer `layer`, from
        its input `x` and its output's gradient `g` (on the CPU)."""
        c = self.config
        if c.activation != XIELU or not self.running:
            return
        assert c.xielu_constants is not None
        p = f"layers.{layer}.mlp.act_fn."
        a_p, a_n = (float(self.weights[p + n].reshape(-1)[0]) for n in XIELU_PARAMS)
        d_p, d_n = parameter_gradients(x, g, a_p, a_n, c.xielu_constants[1])
        grads.add(p + "alpha_p", np.array([d_p], np.float32))
        grads.add(p + "alpha_n", np.array([d_n], np.float32))

    def attention_backward(
        self, layer: int, saved: LayerActivations, do: np.ndarray, grads: Gradients
    ) -> np.ndarray:
        """dh1 of attention from do of its output projection, adding its
        gradients."""
        c, p = self.config, f"layers.{layer}."
        kind = attention_kind(c, layer)
        lw, attention = self.layer_weights(layer), saved.attention
        d_attn = self.call("output_projection_backward", lw, dy=do)["d_attn"]
        self.add_bias_gradient(grads, p + "self_attn.o_proj.bias", do)
        self.projection_gradient(grads, p + "self_attn.o_proj", do, attention["attn"])
        heads = {k: attention[k] for k in ("q_rot", "k_rep")}
        part1 = self.call(
            "attention_backward_1" + kind.mask_suffix,
            **heads,
            v_rep=attention["v_rep"],
            d_attn=d_attn,
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
        dq, dk = self.rope_backward(layer, attention, part2["dq_rot"], dk_rot, grads)
        for name, d in (("q_proj", dq), ("k_proj", dk), ("v_proj", dv)):
            self.add_bias_gradient(grads, p + f"self_attn.{name}.bias", d)
        dh1 = self.call("q_projection_backward", lw, dq=dq)["dh"]
        dh1 += self.call("kv_projection_backward", lw, dk=dk, dv=dv)["dh"]
        for name, d in (("q_proj", dq), ("k_proj", dk), ("v_proj", dv)):
            self.projection_gradient(grads, p + f"self_attn.{name}", d, saved.h1)
        return dh1

    def rope_backward(
        self,
        layer: int,
        attention: Arrays,
        dq_rot: np.ndarray,
        dk_rot: np.ndarray,
        grads: Gradients,
    ) -> tuple[np.ndarray, np.ndarray]:
        """dq, dk of the projections from those of the rotated heads (and the
        QK-norm's γ gradients)."""
        c, p = self.config, f"layers.{layer}."
        kind = attention_kind(c, layer)
        if not rope_backward_needed(c, kind):
            return dq_rot, dk_rot
        norms = {}
        qk_norm = c.family.qk_norm or c.family.projection_qk_norm
        if qk_norm:
            norms = {
                "q_pre": attention["q_pre"],
                "k_pre": attention["k_pre"],
                "q_norm": self.tiled(p + "self_attn.q_norm.weight", c.num_heads),
                "k_norm": self.tiled(p + "self_attn.k_norm.weight", c.num_kv_heads),
            }
        rope = self.call(
            "rope_backward" + kind.rope_suffix, dq_rot=dq_rot, dk_rot=dk_rot, **norms
        )
        if qk_norm:
            for name, count in (("q_norm", c.num_heads), ("k_norm", c.num_kv_heads)):
                d = rope[f"d_{name}"]
                if c.family.qk_norm:
                    d = d.reshape(count, c.head_dim).sum(axis=0)
                grads.add(p + f"self_attn.{name}.weight", d)
        return rope["dq"], rope["dk"]
