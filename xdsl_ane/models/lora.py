"""LoRA adapters for `xdsl-ane train --lora`, as PEFT defines them.

A targeted linear layer y = x·Wᵀ becomes y = x·Wᵀ + s·(x·Aᵀ)·Bᵀ with
A [r, in], B [out, r] and s = alpha / r; only A and B train. A starts as
PEFT's `init_lora_weights=True` draws it (torch's kaiming_uniform_ with
a = √5: uniform in ±1/√in), B as zeros, so the adapted model starts as the
base model. The step runs LoRA's own kernels (`models/lora_kernels.py`):
the base weights their constants, the adapters their dynamic weights;
`--merge` writes W' = W + s·B·A.

Adapters are named as a PEFT adapter directory names them:
`base_model.model.<module>.lora_A.weight` / `.lora_B.weight`, `<module>`
the checkpoint's module path (`model.layers.0.self_attn.q_proj`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from xdsl_ane.errors import XdslAneError, option

if TYPE_CHECKING:
    from xdsl_ane.models.lora_kernels import LoraShape
    from xdsl_ane.models.train_weights import Stored, TrainedLayout

DEFAULT_TARGETS = ("q_proj", "v_proj")
"""PEFT's default target modules for the Llama and Qwen families."""

PREFIX = "base_model.model."


@dataclass(frozen=True)
class Lora:
    """Rank, alpha and the targeted modules (each a module path of the
    checkpoint, by its weight's name `model.layers.N.self_attn.q_proj.weight`)."""

    rank: int
    alpha: float
    targets: tuple[str, ...]
    modules: tuple[tuple[str, str], ...]
    """(the checkpoint's weight name, its module path) per adapted layer."""
    fan_in_fan_out: bool = False
    """The weights are stored [in, out] (GPT-2's Conv1D): W + s·(B·A)ᵀ."""

    @property
    def scale(self) -> float:
        return self.alpha / self.rank

    @classmethod
    def of(
        cls,
        rank: int,
        alpha: float | None,
        targets: Sequence[str],
        weights: Mapping[str, np.ndarray],
        fan_in_fan_out: bool = False,
    ) -> Lora:
        """Adapters of `rank` on every matrix of `weights` (by the
        checkpoint's names) whose module name ends in one of `targets`
        (PEFT's matching: `q_proj` matches every layer's
        `self_attn.q_proj`). One line for a target that matches nothing."""
        if rank < 1:
            raise XdslAneError(f"{option('lora', rank)}: the rank must be ≥ 1")
        alpha = float(rank if alpha is None else alpha)
        if not alpha > 0:
            raise XdslAneError(f"{option('lora_alpha', alpha)}: must be > 0")
        modules = []
        for target in targets:
            found = [
                name
                for name, value in weights.items()
                if value.ndim == 2
                and name.endswith(".weight")
                and (name[: -len(".weight")] + ".").endswith(f".{target}.")
            ]
            if not found:
                linear = sorted(
                    {
                        n[: -len(".weight")].rsplit(".", 1)[-1]
                        for n, v in weights.items()
                        if v.ndim == 2 and ".layers." in f".{n}"
                    }
                )
                raise XdslAneError(
                    f"{option('lora_targets', ','.join(targets))}: '{target}' matches "
                    f"no module (the layers' linear modules: {', '.join(linear)})"
                )
            modules += [(name, name.removesuffix(".weight")) for name in found]
        unique = tuple(sorted(dict.fromkeys(modules)))
        return cls(rank, alpha, tuple(targets), unique, fan_in_fan_out)

    def names(self, module: str) -> tuple[str, str]:
        """The PEFT names of a module's A and B."""
        return (f"{PREFIX}{module}.lora_A.weight", f"{PREFIX}{module}.lora_B.weight")

    def initial(
        self, weights: Mapping[str, np.ndarray], seed: int
    ) -> dict[str, np.ndarray]:
        """A drawn uniformly in ±1/√in (PEFT's kaiming_uniform_(a=√5)) from
        numpy's Generator(seed), B zeros, float32."""
        rng = np.random.default_rng(seed)
        adapters = {}
        for name, module in self.modules:
            out, inputs = weights[name].shape
            if self.fan_in_fan_out:
                out, inputs = inputs, out
            a, b = self.names(module)
            bound = 1.0 / np.sqrt(inputs)
            adapters[a] = rng.uniform(-bound, bound, (self.rank, inputs)).astype(
                np.float32
            )
            adapters[b] = np.zeros((out, self.rank), np.float32)
        return adapters

    def merged(
        self, weights: Mapping[str, np.ndarray], adapters: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """`weights` with each adapted matrix W + s·B·A (float32)."""
        merged = dict(weights)
        for name, module in self.modules:
            a, b = self.names(module)
            delta = np.float32(self.scale) * (adapters[b] @ adapters[a])
            merged[name] = weights[name] + (delta.T if self.fan_in_fan_out else delta)
        return merged

    # --- the kernels' view: adapters per runtime projection -----------------

    def stored(self, layout: TrainedLayout) -> list[tuple[str, Stored]]:
        """(module path, where its weight is in the runtime's tensors) per
        adapted module; one line for a module that is not a layer's
        projection."""
        by_name = {s.checkpoint: s for s in layout.stored}
        found = []
        for name, module in self.modules:
            stored = by_name.get(name)
            if stored is None or not stored.runtime[0].startswith("layers."):
                raise XdslAneError(
                    f"{option('lora_targets', ','.join(self.targets))}: "
                    f"'{module}' is not a projection of a layer (the kernels adapt "
                    "the layers' projections; the embedding and the classifier stay "
                    "frozen)"
                )
            found.append((module, stored))
        return found

    def shape(self, layout: TrainedLayout) -> LoraShape:
        """The LoRA kernels' shape: rank, scale and the runtime's adapted
        projections (a fused [q; k; v] adapts q, k and v)."""
        from xdsl_ane.models.lora_kernels import LoraShape

        targets = frozenset(
            name.removesuffix(".weight")
            for _, stored in self.stored(layout)
            for name in stored.runtime
        )
        return LoraShape(self.rank, self.scale, targets)

    def runtime_adapters(
        self, layout: TrainedLayout, adapters: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """The adapters by the runtime's names (`layers.0.self_attn.q_proj.
        lora_A`): a fused projection's A serves each part, its B split by
        rows as the weight is."""
        out = {}
        for module, stored in self.stored(layout):
            a, b = self.names(module)
            parts = replace(stored, transposed=False).to_runtime(adapters[b])
            for name, part in zip(stored.runtime, parts):
                runtime = name.removesuffix(".weight")
                out[runtime + ".lora_A"] = adapters[a]
                out[runtime + ".lora_B"] = part
        return out

    def adapter_gradients(
        self, layout: TrainedLayout, grads: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """The adapters' gradients (PEFT names) from the runtime's."""
        out = {}
        for module, stored in self.stored(layout):
            a, b = self.names(module)
            names = [n.removesuffix(".weight") for n in stored.runtime]
            out[a] = sum(grads[n + ".lora_A"] for n in names)
            out[b] = replace(stored, transposed=False).to_checkpoint(
                [grads[n + ".lora_B"] for n in names]
            )
        return out

    def config(self, base: str) -> dict[str, object]:
        """adapter_config.json, as PEFT writes it for these adapters."""
        return {
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "base_model_name_or_path": base,
            "r": self.rank,
            "lora_alpha": self.alpha,
            "target_modules": sorted(self.targets),
            "lora_dropout": 0.0,
            "bias": "none",
            "fan_in_fan_out": self.fan_in_fan_out,
            "init_lora_weights": True,
            "use_rslora": False,
            "use_dora": False,
            "modules_to_save": None,
            "inference_mode": True,
        }
