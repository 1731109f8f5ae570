"""The state and the steps of `xdsl_ane.api.train.train`: the master weights
(or LoRA adapters) with the optimizer's and the loss scale's state, saved
whole and resumed; each step's batch through the runtime, its gradients
checked, clipped and applied; the log and the loss curve."""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xdsl_ane.errors import XdslAneError, option
from xdsl_ane.outputs import TRAINED_ENTRIES, atomic_output

PLAN = "plan.json"
OPTIMIZER_STATE = "optimizer.safetensors"
TRAINER_STATE = "trainer_state.json"
COPIED = tuple(
    sorted(
        TRAINED_ENTRIES
        - {"config.json", "model.safetensors", OPTIMIZER_STATE, TRAINER_STATE}
    )
)
"""The checkpoint's files a trained checkpoint carries over, where present."""


@dataclass
class TrainingSetup:
    """A checkpoint read for training: its config (at the training sequence
    length), the checkpoint, where config.json is."""

    checkpoint: Any
    config: Any
    where: str
    layout: Any = None
    """Where the runtime's tensors are in the checkpoint
    (`models.train_weights.TrainedLayout`): the trained tensors."""

    @property
    def padding_idx(self) -> int | None:
        """config.json's pad_token_id, the embedding row whose lookup
        gradient transformers' decoders skip (`nn.Embedding(padding_idx)`)."""
        pad = self.checkpoint.config.get("pad_token_id")
        if isinstance(pad, int) and not isinstance(pad, bool):
            return pad if 0 <= pad < self.config.vocab_size else None
        return None


def check_precision(precision: str) -> bool:
    """Whether the kernels compute in fp16."""
    if precision not in ("fp16", "fp32"):
        raise XdslAneError(f"{option('precision', precision)}: expected fp16 or fp32")
    return precision == "fp16"


@dataclass
class TrainOptions:
    """`train`'s hyper-parameters (the contract's defaults)."""

    steps: int | None = None
    """Optimizer steps; None: one pass over the data."""
    seq_len: int = 256
    batch: int = 1
    lr: float = 1e-4
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    warmup: int = 0
    schedule: str = "constant"
    grad_clip: float | None = None
    precision: str = "fp16"
    loss_scale: str | float = "auto"
    save_every: int | None = None
    seed: int = 0
    lora: int | None = None
    """LoRA's rank r (None: full fine-tuning)."""
    lora_alpha: float | None = None
    """LoRA's alpha (default: r, a scale of 1)."""
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")
    merge: bool = False
    """With LoRA: write the merged checkpoint, not the adapter."""
    compress: str | None = None
    """With LoRA: the frozen weights' compression (`--compress`, as
    compile's: int8, int4, lut4, ...)."""

    def check(self) -> None:
        """One line naming the option for a value outside its domain."""
        checks = [
            ("steps", self.steps, self.steps is None or self.steps >= 0, "≥ 0"),
            ("batch", self.batch, self.batch >= 1, "≥ 1"),
            ("lr", self.lr, math.isfinite(self.lr) and self.lr > 0, "> 0"),
            ("weight_decay", self.weight_decay, self.weight_decay >= 0, "≥ 0"),
            ("eps", self.eps, self.eps > 0, "> 0"),
            ("warmup", self.warmup, self.warmup >= 0, "≥ 0"),
            (
                "betas",
                ",".join(map(str, self.betas)),
                all(0 <= b < 1 for b in self.betas),
                "two numbers in [0, 1)",
            ),
            (
                "grad_clip",
                self.grad_clip,
                self.grad_clip is None or self.grad_clip > 0,
                "> 0",
            ),
            (
                "save_every",
                self.save_every,
                self.save_every is None or self.save_every >= 1,
                "≥ 1",
            ),
        ]
        for name, value, ok, expected in checks:
            if not ok:
                raise XdslAneError(f"{option(name, value)}: must be {expected}")
        if self.schedule not in ("constant", "cosine"):
            raise XdslAneError(
                f"{option('schedule', self.schedule)}: expected constant or cosine"
            )
        check_precision(self.precision)
        from xdsl_ane.models.optim import DynamicLossScale

        DynamicLossScale.from_option(self.loss_scale, 1.0)  # one line if bad


@dataclass
class StepRecord:
    """One optimizer step as `train` reports it."""

    step: int
    steps: int
    loss: float
    lr: float
    tokens_per_s: float
    skipped: bool = False
    loss_scale: float | None = None
    grad_norm: float | None = None

    def line(self) -> str:
        if self.skipped:
            return (
                f"step {self.step}/{self.steps}: skipped (fp16 gradients overflowed "
                f"at loss scale {self.loss_scale:g}; scale halved)"
            )
        return (
            f"step {self.step}/{self.steps}: loss {self.loss:.6f} lr {self.lr:.6g} "
            f"tok/s {self.tokens_per_s:.1f}"
        )

    def record(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def lora_record(lora: Any, compress: str | None) -> dict[str, Any] | None:
    """LoRA's settings as plan.json and trainer_state.json record them."""
    if lora is None:
        return None
    return {
        "r": lora.rank,
        "alpha": lora.alpha,
        "targets": list(lora.targets),
        "compress": compress,
    }


class TrainerState:
    """What a run carries from step to step and saves: the master weights,
    the optimizer's and the loss scale's state, the steps done."""

    def __init__(
        self,
        setup: TrainingSetup,
        params: dict[str, np.ndarray],
        optimizer: Any,
        scaler: Any,
        options: TrainOptions,
        steps: int,
        lora: Any = None,
    ):
        self.setup, self.optimizer, self.scaler = setup, optimizer, scaler
        self.options, self.steps = options, steps
        self.lora = lora
        """With LoRA (`models.lora.Lora`): `params` are the adapters and
        `base` the frozen weights."""
        self.base = params
        self.params = params if lora is None else lora.initial(params, options.seed)
        self.base_runtime = None if lora is None else setup.layout.to_runtime(params)
        """LoRA: the frozen weights by the runtime's names (the kernels'
        constants)."""
        self.done = 0

    def runtime_weights(self) -> dict[str, np.ndarray]:
        """The weights a step runs with, by the runtime's names (LoRA: the
        frozen ones and the adapters)."""
        layout = self.setup.layout
        if self.lora is None:
            return layout.to_runtime(self.params)
        assert self.base_runtime is not None
        return self.base_runtime | self.lora.runtime_adapters(layout, self.params)

    def checkpoint_weights(self) -> dict[str, np.ndarray]:
        """The trained weights by the checkpoint's names (LoRA: merged)."""
        if self.lora is None:
            return self.params
        return self.lora.merged(self.base, self.params)

    def trained_gradients(self, grads: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The gradients of `params` from the runtime's gradients."""
        if self.lora is None:
            return self.setup.layout.to_checkpoint(grads)
        return self.lora.adapter_gradients(self.setup.layout, grads)

    def identity(self) -> dict[str, Any]:
        """What a resumed run must share with the saved one."""
        c = self.setup.config
        lora = self.lora
        return {
            "family": c.family.name,
            "seq_len": c.seq_len,
            "lora": lora_record(lora, self.options.compress),
            "shapes": {n: list(v.shape) for n, v in sorted(self.params.items())},
        }

    def save(self, output: Path, records: list[StepRecord]) -> None:
        """OUT as a whole: the Hugging Face checkpoint and the state."""
        from xdsl_ane.weights.safetensors import write_safetensors

        ck = self.setup.checkpoint
        with atomic_output(output, force=True) as tmp:
            tmp.mkdir()
            if self.lora is not None and not self.options.merge:
                self.save_adapter(tmp)
            else:
                self.save_model(tmp)
            for name in COPIED:
                source = Path(ck.directory) / name
                if source.is_file():
                    shutil.copyfile(source, tmp / name)
            state = dict(self.optimizer.state_arrays())
            if self.scaler is not None:
                state.update(
                    {f"scaler.{k}": v for k, v in self.scaler.state_arrays().items()}
                )
            write_safetensors(tmp / OPTIMIZER_STATE, state)
            record = {
                "step": self.done,
                "steps": self.steps,
                "identity": self.identity(),
                "options": {
                    k: list(v) if isinstance(v, tuple) else v
                    for k, v in self.options.__dict__.items()
                },
                "log": [r.record() for r in records],
            }
            (tmp / TRAINER_STATE).write_text(json.dumps(record, indent=1) + "\n")

    def save_model(self, directory: Path) -> None:
        """config.json and model.safetensors: every tensor of the checkpoint
        under its own name, the trained ones (LoRA: merged) in float32."""
        from xdsl_ane.weights.safetensors import write_safetensors

        ck = self.setup.checkpoint
        config = json.loads((Path(ck.directory) / "config.json").read_text())
        for key in ("dtype", "torch_dtype"):
            if key in config:
                config[key] = "float32"  # the master weights, as trained
        (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        weights = self.checkpoint_weights()
        tensors = {}
        for name in ck.tensors:
            value = weights.get(name)
            tensors[name] = value if value is not None else ck.tensor(name)
        write_safetensors(
            directory / "model.safetensors", tensors, metadata={"format": "pt"}
        )

    def save_adapter(self, directory: Path) -> None:
        """A PEFT adapter directory: adapter_config.json and
        adapter_model.safetensors."""
        from xdsl_ane.weights.safetensors import write_safetensors

        config = self.lora.config(str(self.setup.checkpoint.directory))
        text = json.dumps(config, indent=2) + "\n"
        (directory / "adapter_config.json").write_text(text)
        write_safetensors(
            directory / "adapter_model.safetensors",
            self.params,
            metadata={"format": "pt"},
        )

    def resume(self, directory: Path) -> None:
        """Continues from a save of `train`: its weights, optimizer and loss
        scale state and step; one line if it is of another model."""
        from safetensors.numpy import load_file

        path = directory / TRAINER_STATE
        try:
            record = json.loads(path.read_text())
            saved = record["identity"]
            step = int(record["step"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise XdslAneError(
                f"{option('resume', directory)}: not a save of xdsl-ane train ({e})"
            ) from None
        mine = self.identity()
        for key in ("family", "seq_len", "lora"):
            if saved.get(key) != mine[key]:
                raise XdslAneError(
                    f"{option('resume', directory)}: saved with {key} {saved.get(key)}, this "
                    f"run has {mine[key]}"
                )
        if saved.get("shapes") != mine["shapes"]:
            name = next(
                (
                    n
                    for n in mine["shapes"]
                    if saved.get("shapes", {}).get(n) != mine["shapes"][n]
                ),
                "?",
            )
            raise XdslAneError(
                f"{option('resume', directory)}: tensor '{name}' has shape "
                f"{saved.get('shapes', {}).get(name)} there, {mine['shapes'][name]} "
                "in this model"
            )
        if self.lora is not None:
            adapter = directory / "adapter_model.safetensors"
            if not adapter.is_file():
                raise XdslAneError(
                    f"{option('resume', directory)}: no adapter_model.safetensors "
                    "(a --merge save cannot be resumed)"
                )
            tensors = load_file(str(adapter))
            self.params = {n: np.array(tensors[n], np.float32) for n in self.params}
        else:
            tensors = load_file(str(directory / "model.safetensors"))
            for name in self.params:
                self.params[name] = np.array(tensors[name], np.float32)
        state = load_file(str(directory / OPTIMIZER_STATE))
        scaler = {k[7:]: v for k, v in state.items() if k.startswith("scaler.")}
        self.optimizer.load_state_arrays(
            {k: v for k, v in state.items() if not k.startswith("scaler.")},
            self.params,
        )
        if self.scaler is not None and scaler:
            self.scaler.load_state_arrays(scaler)
        self.done = step


class TrainingLoop:
    """The steps of `train`: each its batch through the runtime, the
    gradients checked (fp16) and clipped, the optimizer's step, a line."""

    def __init__(
        self,
        state: TrainerState,
        kernels: dict[str, Any],
        seqs: np.ndarray,
        on_step: Callable[[StepRecord], None] | None,
        log: str | Path | None,
    ):
        self.state, self.kernels, self.seqs = state, kernels, seqs
        self.on_step = on_step
        self.log = None if log is None else Path(log)
        self.records: list[StepRecord] = []

    def run(self, output: Path) -> None:
        s = self.state
        every = s.options.save_every
        for k in range(s.done, s.steps):
            record = self.step(k)
            self.records.append(record)
            s.done = k + 1
            if self.on_step is not None:
                self.on_step(record)
            self.write_log()
            if every is not None and s.done % every == 0 and s.done < s.steps:
                s.save(output, self.records)
        s.save(output, self.records)

    def step(self, k: int) -> StepRecord:
        from xdsl_ane.models.optim import clip_grad_norm, lr_at
        from xdsl_ane.models.rope import rope_tables
        from xdsl_ane.models.runtime import TrainingRuntime
        from xdsl_ane.models.train_data import batch

        s, o = self.state, self.state.options
        config = s.setup.config
        started = time.perf_counter()
        inputs, labels = batch(self.seqs, k, o.batch)
        cos, sin = rope_tables(config, config.seq_len)
        scale = s.scaler.scale if s.scaler is not None else 1.0
        weights = s.runtime_weights()
        runtime = TrainingRuntime(
            config,
            {**weights, "rope.cos": cos, "rope.sin": sin},
            self.kernels,
            scale,
            s.setup.padding_idx,
            None if s.lora is None else s.lora.shape(s.setup.layout),
        )
        loss, full = 0.0, {}
        for b in range(o.batch):
            part, part_grads = runtime.step(inputs[b], labels[b])
            loss += part / o.batch
            for name, g in part_grads.items():
                if o.batch > 1:
                    g /= o.batch  # (the runtime's own array)
                if name in full:
                    full[name] += g
                else:
                    full[name] = g
        grads = s.trained_gradients(full)
        lr = lr_at(k, o.lr, o.warmup, s.steps, o.schedule)
        seconds = time.perf_counter() - started
        rate = o.batch * config.seq_len / seconds
        if s.scaler is not None:
            finite = all(np.all(np.isfinite(g)) for g in grads.values())
            s.scaler.update(finite)
            if not finite or not math.isfinite(loss):
                return StepRecord(k + 1, s.steps, loss, lr, rate, True, scale)
        norm = None
        if o.grad_clip is not None:
            norm = clip_grad_norm(grads, o.grad_clip)
        s.optimizer.step(s.params, grads, lr)
        return StepRecord(
            k + 1,
            s.steps,
            loss,
            lr,
            rate,
            False,
            scale if s.scaler is not None else None,
            norm,
        )

    def write_log(self) -> None:
        if self.log is None:
            return
        with atomic_output(self.log, force=True) as tmp:
            tmp.write_text("".join(json.dumps(r.record()) + "\n" for r in self.records))


def plot_losses(records: Sequence[StepRecord], path: Path, title: str) -> None:
    """The loss curve (matplotlib, the plot extra), written whole."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in records if not r.skipped]
    figure, axes = plt.subplots(figsize=(7, 4))
    axes.plot([r.step for r in done], [r.loss for r in done], marker=".")
    axes.set_xlabel("step")
    axes.set_ylabel("loss (mean cross-entropy)")
    axes.set_title(f"{Path(title).name}", fontsize=10)
    figure.tight_layout()
    try:
        with atomic_output(path, force=True) as tmp:
            figure.savefig(tmp, format=path.suffix.lower().lstrip("."))
    finally:
        plt.close(figure)
