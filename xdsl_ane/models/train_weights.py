"""The checkpoint's tensors as the training runtime holds them, and back.

The training kernels and their runtime (`models/training.py`,
`models/runtime.py`) name and shape every weight one way, Llama's: a layer's
`self_attn.{q,k,v,o}_proj` and `mlp.{gate,up,down}_proj` as [out, in],
`embed_tokens`, `embed_positions`, `norm`, `lm_head`, without the base
model's prefix. A checkpoint may store them otherwise: under its family's
own names (GPT-NeoX's `attention.query_key_value`), q, k and v as one
matrix ([q; k; v], or per head [q_h; k_h; v_h] in GPT-NeoX), gate and up as
one (Phi-3), or [in, out] (GPT-2's Conv1D). `TrainedLayout` maps the
checkpoint's tensors (what the optimizer updates, LoRA adapts and `train`
writes back, under the checkpoint's names) to the runtime's and the
runtime's gradients back, by slicing, stacking and transposing: exact.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from xdsl_ane.errors import XdslAneError
from xdsl_ane.models.configs import LlmConfig
from xdsl_ane.models.xielu import XIELU

Arrays = dict[str, np.ndarray]

PROJECTIONS = (
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
)


@dataclass(frozen=True)
class Stored:
    """One checkpoint tensor and the runtime tensors it holds."""

    checkpoint: str
    runtime: tuple[str, ...]
    sizes: tuple[int, ...] = ()
    """Row counts of the runtime tensors stacked in it ([q; k; v]); empty:
    the tensor is one runtime tensor."""
    per_head: int | None = None
    """Rows interleaved per head ([q_h; k_h; v_h] for H heads of this size)."""
    transposed: bool = False
    """Stored [in, out] (Conv1D)."""

    def to_runtime(self, value: np.ndarray) -> list[np.ndarray]:
        if self.transposed and value.ndim == 2:
            value = value.T
        if self.per_head is not None:
            parts = len(self.runtime)
            tail = value.shape[1:]
            grouped = value.reshape(-1, parts, self.per_head, *tail)
            return [
                np.ascontiguousarray(grouped[:, i]).reshape(-1, *tail)
                for i in range(parts)
            ]
        if not self.sizes:
            return [np.ascontiguousarray(value)]
        ends = np.cumsum(self.sizes)[:-1]
        return [np.ascontiguousarray(p) for p in np.split(value, ends, axis=0)]

    def to_checkpoint(self, parts: list[np.ndarray]) -> np.ndarray:
        if self.per_head is not None:
            tail = parts[0].shape[1:]
            grouped = [p.reshape(-1, 1, self.per_head, *tail) for p in parts]
            value = np.concatenate(grouped, axis=1).reshape(-1, *tail)
        elif self.sizes:
            value = np.concatenate(parts, axis=0)
        else:
            (value,) = parts
        if self.transposed and value.ndim == 2:
            value = value.T
        return np.ascontiguousarray(value)


def trainer_config(config: LlmConfig) -> LlmConfig:
    """`config` as the training kernels see it: weights one per projection,
    [out, in], under the runtime's names (see the module docstring)."""
    split = {"self_attn.qkv_proj": QKV, "mlp.gate_up_proj": GATE_UP}
    biases = frozenset(
        b
        for name in config.biases
        for b in split.get(name, (name,))
        if config.family.gated_mlp or b != "mlp.gate_proj"
    )
    return config.with_(
        fused=False,
        gate_up=False,
        qkv_per_head=False,
        conv1d=False,
        renames=(),
        biases=biases,
    )


QKV = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")
GATE_UP = ("mlp.gate_proj", "mlp.up_proj")


def layer_norms(config: LlmConfig) -> list[str]:
    """The norms of a layer over the hidden size, by name."""
    c = config
    names = [] if c.family.post_norms else ["input_layernorm"]
    if not (c.parallel_residual and c.family.shared_norm):
        names.append("post_attention_layernorm")
    if c.family.sandwich_norms:
        names.append("pre_feedforward_layernorm")
    if c.family.sandwich_norms or c.family.post_norms:
        names.append("post_feedforward_layernorm")
    return names


def runtime_shapes(config: LlmConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor a step trains, by the runtime's name, with its shape."""
    c = config
    d, v = c.hidden_size, c.vocab_size
    norm = (
        ["weight", "bias"] if c.family.layer_norm and c.family.norm_bias else ["weight"]
    )
    shapes: dict[str, tuple[int, ...]] = {"embed_tokens.weight": (v, d)}
    if not c.family.rope:
        shapes["embed_positions.weight"] = (c.max_positions, d)
    outputs = {
        "self_attn.q_proj": c.q_dim,
        "self_attn.k_proj": c.kv_dim,
        "self_attn.v_proj": c.kv_dim,
        "self_attn.o_proj": d,
        **({"mlp.gate_proj": c.ffn_size} if c.family.gated_mlp else {}),
        "mlp.up_proj": c.ffn_size,
        "mlp.down_proj": d,
    }
    inputs = {"self_attn.o_proj": c.q_dim, "mlp.down_proj": c.ffn_size}
    biases = trainer_config(c).biases
    for layer in range(c.num_layers):
        p = f"layers.{layer}."
        for name in layer_norms(c):
            shapes.update({f"{p}{name}.{k}": (d,) for k in norm})
        if c.family.qk_norm or c.family.projection_qk_norm:
            q, k = (
                (c.q_dim, c.kv_dim)
                if c.family.projection_qk_norm
                else (c.head_dim,) * 2
            )
            shapes[p + "self_attn.q_norm.weight"] = (q,)
            shapes[p + "self_attn.k_norm.weight"] = (k,)
        for name, out in outputs.items():
            shapes[f"{p}{name}.weight"] = (out, inputs.get(name, d))
            if name in biases:
                shapes[f"{p}{name}.bias"] = (out,)
        if c.activation == XIELU:  # its learned parameters (β, ε: buffers)
            shapes[p + "mlp.act_fn.alpha_p"] = shapes[p + "mlp.act_fn.alpha_n"] = (1,)
    shapes.update({f"norm.{k}": (d,) for k in norm})
    if not c.tied:
        shapes["lm_head.weight"] = (v, d)
    return shapes


class TrainedLayout:
    """Where each runtime tensor of `config`'s decoder is in a checkpoint
    holding `tensors` (name -> shape): the trained tensors; any other
    tensor of the checkpoint is carried over as it is. One line naming the
    tensor for one missing or of another shape."""

    def __init__(
        self, config: LlmConfig, tensors: Mapping[str, tuple[int, ...]], where: str
    ):
        self.config = config
        self.shapes = runtime_shapes(config)
        self.stored = self.find(tensors, where)

    def find(self, tensors: Mapping[str, tuple[int, ...]], where: str) -> list[Stored]:
        stored: list[Stored] = []
        placed: set[str] = set()
        for name in self.shapes:
            if name in placed:
                continue
            s = self.stored_as(name)
            placed.update(s.runtime)
            if s.checkpoint not in tensors:
                raise XdslAneError(
                    f"{where}: the checkpoint has no tensor '{s.checkpoint}'"
                )
            want = self.shape_of(s)
            if tuple(tensors[s.checkpoint]) != want:
                raise XdslAneError(
                    f"{where}: tensor '{s.checkpoint}' has shape "
                    f"{list(tensors[s.checkpoint])}, expected {list(want)}"
                )
            stored.append(s)
        return stored

    def fused_groups(self) -> list[tuple[str, tuple[str, ...]]]:
        """(the checkpoint's module, the runtime's modules it holds)."""
        family = self.config.family
        groups = [("self_attn.qkv_proj", QKV)] if family.fused else []
        if family.gate_up and family.gated_mlp:
            groups.append(("mlp.gate_up_proj", GATE_UP))
        return groups

    def stored_as(self, name: str) -> Stored:
        """Where the runtime tensor `name` is in the checkpoint."""
        c = self.config
        if not name.startswith("layers."):
            ours = name if name.startswith("lm_head.") else "model." + name
            return Stored(c.weight_name(ours), (name,))
        _, layer, rest = name.split(".", 2)
        module, suffix = rest.rsplit(".", 1)
        p = f"layers.{layer}."
        for fused, group in self.fused_groups():
            if module in group:
                runtime = tuple(f"{p}{m}.{suffix}" for m in group)
                return Stored(
                    c.weight_name(f"model.{p}{fused}.{suffix}"),
                    runtime,
                    tuple(self.shapes[r][0] for r in runtime),
                    c.head_dim if c.family.qkv_per_head and group == QKV else None,
                    c.family.conv1d,
                )
        return Stored(
            c.weight_name("model." + name),
            (name,),
            transposed=c.family.conv1d and module in PROJECTIONS,
        )

    def shape_of(self, stored: Stored) -> tuple[int, ...]:
        """The shape of the checkpoint tensor holding `stored`'s."""
        shapes = [self.shapes[n] for n in stored.runtime]
        shape = (sum(s[0] for s in shapes), *shapes[0][1:])
        return shape[::-1] if stored.transposed and len(shape) == 2 else shape

    @property
    def checkpoint_names(self) -> list[str]:
        return [s.checkpoint for s in self.stored]

    def to_runtime(self, params: Mapping[str, np.ndarray]) -> Arrays:
        """The runtime's weights from the checkpoint's (by checkpoint name)."""
        weights: Arrays = {}
        for s in self.stored:
            weights.update(zip(s.runtime, s.to_runtime(params[s.checkpoint])))
        return weights

    def to_checkpoint(self, runtime: Mapping[str, np.ndarray]) -> Arrays:
        """Runtime tensors (weights or their gradients) by checkpoint name."""
        return {
            s.checkpoint: s.to_checkpoint([runtime[n] for n in s.runtime])
            for s in self.stored
        }

    def module_path(self, checkpoint_name: str) -> str:
        """A weight's module path, as PEFT names adapters."""
        return checkpoint_name.removesuffix(".weight")
