"""The training kernels of a LoRA step: the frozen base weights are
constants of the kernels (so `--compress` may compress them, as QLoRA does
on GPUs) and the adapters are the kernels' dynamic weights.

A targeted projection y = x·Wᵀ becomes y = x·Wᵀ + s·(x·Aᵀ)·Bᵀ (A [r, in],
B [out, r], s = alpha / r) and its input gradient dx = dy·W + s·(dy·B)·A,
in the same kernels as the plain step's (`models/training.py`); the
adapters' gradients dA = s·(dy·B)ᵀ·x and dB = s·dyᵀ·(x·Aᵀ) come from
`lora_gradient_{out}x{in}` kernels, so no base weight's gradient is ever
formed. With the weights constants, the kernels that hold weights are one
per layer (`ffn_forward_layer3`), and the classifier kernels one per
vocabulary chunk (`classifier_forward_chunk2`); the kernels without
weights (norms, the attention backward's halves, RoPE's backward, the
activation's) serve every layer as in the plain step. The pipeline runs
with `weights=lora`: every weight a constant but the adapters
(`….lora_A`, `….lora_B`), which are arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import builtin
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.models.configs import LlmConfig
from xdsl_ane.models.train_weights import trainer_config
from xdsl_ane.models.training import (
    AttentionKind,
    KernelBuilder,
    attention_kind,
    constant,
    function_of,
    rope_backward_needed,
)
from xdsl_ane.models.vocabulary import vocab_chunks

WEIGHTED = (
    "attention_forward",
    "output_projection",
    "ffn_forward",
    "ffn_backward_w2",
    "ffn_backward_w13",
    "q_projection_backward",
    "kv_projection_backward",
)
"""The kernels (by name prefix) that hold a layer's weights."""


@dataclass(frozen=True)
class LoraShape:
    """What the LoRA kernels are built for: the rank, the scale alpha / r
    and the adapted projections by the runtime's module path
    (`layers.0.self_attn.q_proj`)."""

    rank: int
    scale: float
    targets: frozenset[str]


def layer_kernel(name: str, layer: int) -> str:
    """The name of layer `layer`'s copy of kernel `name`, where it holds
    weights (`ffn_forward` -> `ffn_forward_layer3`)."""
    return f"{name}_layer{layer}" if name.startswith(WEIGHTED) else name


def chunk_kernel(name: str, chunk: int) -> str:
    """The name of vocabulary chunk `chunk`'s classifier kernel."""
    return f"{name}_chunk{chunk}"


def chunk_weight_name(chunk: int) -> str:
    """The classifier rows of vocabulary chunk `chunk`, by the kernels' name."""
    return f"lm_head.chunk{chunk}.weight"


def lora_gradient_name(rows: int, columns: int) -> str:
    return f"lora_gradient_{rows}x{columns}"


class LoraKernelBuilder(KernelBuilder):
    """The kernels of one layer (or of the classifier) with the layer's base
    weights as constants and its adapters' branches."""

    def __init__(
        self,
        config: LlmConfig,
        lora: LoraShape,
        layer: int = 0,
        kind: AttentionKind | None = None,
        chunk: int | None = None,
    ):
        super().__init__(config, layer, kind)
        self.lora = lora
        self.chunk = chunk

    def adapters(self, name: str, out: int, inputs: int):
        """A [r, in] and B [out, r] of projection `name`, or None."""
        module = f"layers.{self.layer}.{name}"
        if module not in self.lora.targets:
            return None
        r = self.lora.rank
        a = self.block.param(f"{module}.lora_A", (r, inputs))
        b = self.block.param(f"{module}.lora_B", (out, r))
        return a, b

    def scaled(self, x: SSAValue) -> SSAValue:
        scale = np.full((1,) * len(shape_of(x)), self.lora.scale)
        return rlx.MulOp(x, constant(scale, self.dtype)).result

    def linear(self, x: SSAValue, name: str, out_features: int) -> SSAValue:
        """x·Wᵀ + s·(x·Aᵀ)·Bᵀ where `name` is adapted."""
        y = super().linear(x, name, out_features)
        adapters = self.adapters(name, out_features, shape_of(x)[-1])
        if adapters is None:
            return y
        a, b = adapters
        xa = rlx.MatmulOp(x, a, transpose_rhs=True).result
        branch = rlx.MatmulOp(xa, b, transpose_rhs=True).result
        return rlx.AddOp(y, self.scaled(branch)).result

    def linear_backward(self, dy: SSAValue, name: str, in_features: int) -> SSAValue:
        """dy·W + s·(dy·B)·A where `name` is adapted."""
        dx = super().linear_backward(dy, name, in_features)
        adapters = self.adapters(name, shape_of(dy)[-1], in_features)
        if adapters is None:
            return dx
        a, b = adapters
        branch = rlx.MatmulOp(rlx.MatmulOp(dy, b).result, a).result
        return rlx.AddOp(dx, self.scaled(branch)).result

    def kernel(self, name, inputs, body) -> builtin.ModuleOp:
        if self.chunk is not None and name.startswith("classifier_"):
            name = chunk_kernel(name.removesuffix("_last"), self.chunk)
        return super().kernel(layer_kernel(name, self.layer), inputs, body)

    def chunk_weight(self, chunk: int) -> SSAValue:
        assert self.chunk is not None
        shape = (chunk, self.config.hidden_size)
        return self.block.param(chunk_weight_name(self.chunk), shape)

    def lora_gradient(self, rows: int, columns: int) -> builtin.ModuleOp:
        """dA = s·(dy·B)ᵀ·x [r, columns] and dB = s·dyᵀ·(x·Aᵀ) [rows, r] of
        an adapted projection y = x·Wᵀ (W [rows, columns]) from dy [S, rows]
        and x [S, columns] (the input with fewer channels first: the first
        input's channel count is the one the others are packed to)."""
        s, r = self.config.seq_len, self.lora.rank
        inputs = [("dy", (s, rows)), ("x", (s, columns))]
        if columns < rows:
            inputs.reverse()

        def body(first: SSAValue, second: SSAValue) -> dict[str, SSAValue]:
            dy, x = (first, second) if columns >= rows else (second, first)
            a = self.block.param("lora_A", (r, columns))
            b = self.block.param("lora_B", (rows, r))
            u = rlx.MatmulOp(dy, b).result  # [S, r]
            xa = rlx.MatmulOp(x, a, transpose_rhs=True).result  # [S, r]
            d_a = rlx.MatmulOp(u, x, transpose_lhs=True).result
            d_b = rlx.MatmulOp(dy, xa, transpose_lhs=True).result
            return {"d_a": self.scaled(d_a), "d_b": self.scaled(d_b)}

        return self.kernel(lora_gradient_name(rows, columns), inputs, body)


def build_lora_kernels(
    config: LlmConfig, lora: LoraShape, vocab_chunk: int | None = None
) -> dict[str, builtin.ModuleOp]:
    """Every kernel of a LoRA step (see the module docstring), rlx, one
    function per module named as the kernel."""
    config = trainer_config(config)
    shared = LoraKernelBuilder(config, lora)
    kernels = [
        shared.layer_norm_forward()
        if config.family.layer_norm
        else shared.rms_norm_forward(),
        shared.silu_backward(),
        shared.attention_backward_2(),
        shared.layer_norm_backward()
        if config.family.layer_norm
        else shared.rms_norm_backward(),
    ]
    if config.num_kv_heads != config.num_heads:
        kernels.append(shared.gqa_reduce())
    kinds = {}
    for layer in range(config.num_layers):
        kind = attention_kind(config, layer)
        b = LoraKernelBuilder(config, lora, layer, kind)
        kernels += [
            b.attention_forward(),
            b.output_projection(),
            b.ffn_forward(),
            b.ffn_backward_w2(),
            b.ffn_backward_w13(),
            b.output_projection_backward(),
            b.q_projection_backward(),
            b.kv_projection_backward(),
        ]
        if kind not in kinds:
            kinds[kind] = b
            kernels.append(b.attention_backward_1())
            if rope_backward_needed(config, kind):
                kernels.append(b.rope_backward())
    chunks = vocab_chunks(config, vocab_chunk)
    for index, (_, size) in enumerate(chunks):
        b = LoraKernelBuilder(config, lora, chunk=index)
        kernels += [
            b.classifier_forward(size),
            b.classifier_backward(size),
            b.classifier_projection_backward(size),
        ]
    kernels.append(shared.cross_entropy_combine(len(chunks)))
    shapes = {lora_shape(config, module) for module in lora.targets}
    kernels += [shared.lora_gradient(rows, columns) for rows, columns in sorted(shapes)]
    return {function_of(m).sym_name.data: m for m in kernels}


def lora_shape(config: LlmConfig, module: str) -> tuple[int, int]:
    """[out, in] of an adapted projection (`layers.0.mlp.up_proj`)."""
    from xdsl_ane.models.training import projection_shapes

    return projection_shapes(config)[module.split(".", 2)[2]]
