"""Training from a Hugging Face checkpoint: `compile_train` and `train`, the
library under `xdsl-ane compile-train` and `xdsl-ane train`.

`compile_train` compiles the kernels of one training step for the
checkpoint's shapes (`models/training.py`: dynamic weights, packed I/O,
`[1, C, 1, S]`) and writes them with `plan.json`, the step as data: the
kernel calls in order (`models.runtime.step_calls`, which the runtime's own
order is checked against), what the CPU does between them, the optimizer
and its hyper-parameters and the loss scale.

`train` runs that step in the interpreter (`models.runtime.TrainingRuntime`)
over the data: sequence i is tokens[i·(S+1) : (i+1)·(S+1)], step k takes
sequences k·B … k·B+B−1 as B batch-1 calls whose gradients are averaged
(the loss is the mean cross-entropy over the B·S targets), then AdamW as
`torch.optim.AdamW` on float32 master weights (`models/optim.py`). With
fp16 kernels the loss gradient is scaled (dynamic: a step whose gradients
overflow is skipped and the scale halved); fp32 kernels are the exact
reference. OUT is a Hugging Face checkpoint: config.json, the trained
tensors under the checkpoint's own names (float32) in model.safetensors,
the tokenizer files copied, and the optimizer's state (`optimizer.
safetensors`, `trainer_state.json`) for `--resume`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xdsl_ane.api.train_loop import (
    PLAN,
    StepRecord,
    TrainerState,
    TrainingLoop,
    TrainingSetup,
    TrainOptions,
    check_precision,
    lora_record,
    plot_losses,
)
from xdsl_ane.errors import XdslAneError, option
from xdsl_ane.outputs import atomic_output, check_outputs
from xdsl_ane.progress import Progress


def check_trainable(config: Any, where: str) -> None:
    """Refuses, in one line naming the config field, a feature of `config`
    the training kernels do not compute: every family of the architecture
    table trains, with GPT-2's `scale_attn_by_inverse_layer_idx`, an
    activation without a backward (xIELU has its own: models/xielu.py), a
    mixture of experts, recurrent mixers and Gemma 4's per-layer fields
    refused."""
    if config.family.layer_fields:
        raise XdslAneError(
            f"{where}: architectures: {config.family.name} models (per-layer "
            "inputs, shared keys and values, heads of two sizes, value norms, "
            "layer scalars) cannot be trained yet (the training kernels have "
            "one attention shape and no per-layer inputs)"
        )
    if config.moe is not None:
        raise XdslAneError(
            f"{where}: num_experts: {config.family.name} models with a mixture of "
            f"experts ({config.moe.experts}) cannot be trained yet (the training "
            "kernels have no router or experts)"
        )
    if config.scale_by_layer:
        raise XdslAneError(
            f"{where}: scale_attn_by_inverse_layer_idx: {config.family.name} models with "
            "it cannot be trained yet (the training kernels scale every layer's "
            "attention alike)"
        )
    if config.ssm_layers or config.delta_layers:
        raise XdslAneError(
            f"{where}: architectures: {config.family.name} models (state-space "
            "or delta-net mixers) cannot be trained yet (the training kernels "
            "have attention mixers only)"
        )
    if config.conv_layers:
        raise XdslAneError(
            f"{where}: layer_types: {config.family.name} models with short "
            "convolution layers cannot be trained yet (the training kernels "
            "have attention mixers only)"
        )
    from xdsl_ane.models.hf_config import ACTIVATIONS
    from xdsl_ane.models.training import BACKWARD_KINDS
    from xdsl_ane.models.xielu import XIELU

    if config.activation == XIELU:
        return
    if ACTIVATIONS.get(config.activation) not in BACKWARD_KINDS:
        raise XdslAneError(
            f"{where}: hidden_act: {config.activation} has no backward in the "
            f"training kernels ({', '.join(sorted(BACKWARD_KINDS.values()))})"
        )


def with_xielu_constants(checkpoint: Any, config: Any) -> Any:
    """`config` with xIELU's β and ε (LlmConfig.xielu_constants), which
    the training kernels hold as constants: one value each, in every
    layer; another value in one layer is refused naming its tensor."""
    from xdsl_ane.models.xielu import XIELU

    if config.activation != XIELU:
        return config
    values = []
    for name in ("beta", "eps"):
        found = {}
        for layer in range(config.num_layers):
            tensor = config.weight_name(f"model.layers.{layer}.mlp.act_fn.{name}")
            found[tensor] = float(np.asarray(checkpoint.tensor(tensor)).reshape(-1)[0])
        first = next(iter(found.values()))
        for tensor, value in found.items():
            if value != first:
                raise XdslAneError(
                    f"{checkpoint.directory}: tensor '{tensor}' is {value}, other "
                    f"layers' {first}: the training kernels hold one xIELU {name}"
                )
        values.append(first)
    return config.with_(xielu_constants=(values[0], values[1]))


def training_setup(checkpoint: str | Path, seq_len: int) -> TrainingSetup:
    from xdsl_ane.ane.limits import MAX_DIMENSION
    from xdsl_ane.models.hf_config import check_table_shapes, llm_config
    from xdsl_ane.weights.checkpoint import read_checkpoint

    if not 2 <= seq_len <= MAX_DIMENSION:
        raise XdslAneError(
            f"{option('seq_len', seq_len)}: must lie in [2, {MAX_DIMENSION}]"
        )
    ck = read_checkpoint(checkpoint)
    where = str(Path(checkpoint) / "config.json")
    config = llm_config(ck)
    check_table_shapes(ck, config)
    problem = config.position_problem(seq_len)
    if problem is not None:
        raise XdslAneError(f"{option('seq_len', seq_len)} {problem}")
    config = config.with_(seq_len=seq_len)
    check_trainable(config, where)
    config = with_xielu_constants(ck, config)
    from xdsl_ane.models.train_weights import TrainedLayout

    shapes = {name: tuple(entry.shape) for name, entry in ck.tensors.items()}
    return TrainingSetup(ck, config, where, TrainedLayout(config, shapes, where))


# --- compile-train ----------------------------------------------------------------


@dataclass
class TrainingKernels:
    """The compiled kernels of one step and the plan that drives them."""

    config: Any
    kernels: dict[str, Any]
    plan: dict[str, Any]


def compile_train(
    checkpoint: str | Path,
    output: str | Path | None = None,
    *,
    seq_len: int = 256,
    precision: str = "fp16",
    force: bool = False,
    progress: Progress | None = None,
    lora: int | None = None,
    lora_alpha: float | None = None,
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj"),
    compress: str | None = None,
) -> TrainingKernels:
    """The training step's kernels for `checkpoint` (with `lora`, LoRA's:
    the frozen weights constants, compressed by `compress`), written with
    `plan.json` to the directory `output` when given. Raises XdslAneError."""
    progress = progress or Progress()
    fp16 = check_precision(precision)
    if output is not None:
        check_outputs([output], force, [checkpoint])
    setup = training_setup(checkpoint, seq_len)
    adapters = None
    params: dict[str, np.ndarray] = {}
    if lora is not None:
        params = trainable_weights(setup)
        adapters = lora_of(setup, params, lora, lora_alpha, lora_targets)
    compression = check_compress(compress, adapters)
    with progress.step("compiling the training kernels"):
        kernels = step_kernels(setup, fp16, adapters, params, compression)
    plan = step_plan(setup, kernels, precision, adapters, compress)
    if output is not None:
        write_kernels(Path(output), setup.config, kernels, plan, progress)
    return TrainingKernels(setup.config, kernels, plan)


def lora_of(
    setup: TrainingSetup,
    params: dict[str, np.ndarray],
    rank: int,
    alpha: float | None,
    targets: tuple[str, ...],
) -> Any:
    """The LoRA adapters of `targets` (one line for a target that matches
    nothing or is not a layer's projection)."""
    from xdsl_ane.models.lora import Lora

    lora = Lora.of(rank, alpha, targets, params, setup.config.family.conv1d)
    lora.stored(setup.layout)  # every module a layer's projection
    return lora


def check_compress(compress: str | None, lora: Any) -> Any:
    """`--compress` as a `CompressionPlan` for LoRA's frozen weights (None
    without it); one line naming the option for a bad mode or without
    `--lora`."""
    if compress is None:
        return None
    if lora is None:
        raise XdslAneError(
            f"{option('compress', compress)}: needs {option('lora', 'R')} (full "
            "fine-tuning trains every weight, so none is a constant to compress)"
        )
    from xdsl.utils.exceptions import PassFailedException

    from xdsl_ane.passes.compress_weights import (
        CompressionSetting,
        MilCompressWeightsPass,
    )

    try:
        setting = CompressionSetting.parse(compress)
        # the classifier stays as it is, as QLoRA leaves the LM head
        return MilCompressWeightsPass(
            setting.mode, setting.granularity, setting.group, head="none"
        ).plan()
    except (ValueError, PassFailedException) as e:
        message = str(e).splitlines()[0].removeprefix("mil-compress-weights: ")
        raise XdslAneError(f"{option('compress', compress)}: {message}") from None


def step_kernels(
    setup: TrainingSetup,
    fp16: bool,
    lora: Any,
    params: dict[str, np.ndarray],
    compression: Any,
) -> dict[str, Any]:
    """The compiled kernels of a step: full fine-tuning's (every weight
    dynamic), or LoRA's (`params`' frozen weights their constants)."""
    from xdsl_ane.models.kernels import compile_lora_kernels, compile_training_kernels

    if lora is None:
        return compile_training_kernels(setup.config, fp16=fp16, lint=False)
    base = setup.layout.to_runtime(params)
    return compile_lora_kernels(
        setup.config,
        lora.shape(setup.layout),
        base,
        fp16,
        lint=False,
        compress=compression,
    )


def step_plan(
    setup: TrainingSetup,
    kernels: dict[str, Any],
    precision: str,
    lora: Any = None,
    compress: str | None = None,
) -> dict[str, Any]:
    """plan.json: the step as data (see the module docstring)."""
    from xdsl_ane.models.runtime import CPU_OPERATIONS, adapter_shapes, step_calls

    config = setup.config
    shape = None if lora is None else lora.shape(setup.layout)
    parameters = sum(
        int(np.prod(setup.checkpoint.tensors[name].shape))
        for name in setup.layout.checkpoint_names
    )
    if shape is not None:
        parameters = sum(
            int(np.prod(s)) for s in adapter_shapes(config, shape).values()
        )
    return {
        "checkpoint": str(setup.checkpoint.directory),
        "family": config.family.name,
        "seq_len": config.seq_len,
        "layers": config.num_layers,
        "hidden_size": config.hidden_size,
        "parameters": parameters,
        "precision": precision,
        "lora": lora_record(lora, compress),
        "kernels": [
            {
                "name": name,
                "mlpackage": f"{name}.mlpackage",
                "manifest": f"{name}.manifest.json",
                "ops": kernel.op_count(),
                "args": kernel.arg_names,
                "results": kernel.result_names,
            }
            for name, kernel in kernels.items()
        ],
        "calls": [
            {"kernel": name, "layer": layer}
            for name, layer in step_calls(config, kernels, shape)
        ],
        "cpu": CPU_OPERATIONS,
        "optimizer": {
            "name": "AdamW",
            "master_weights": "float32, on the CPU",
            "decay": "tensors of rank >= 2",
            "defaults": {
                "lr": 1e-4,
                "betas": [0.9, 0.999],
                "eps": 1e-8,
                "weight_decay": 0.0,
            },
        },
        "loss_scale": (
            {
                "mode": "dynamic",
                "initial": initial_loss_scale(config),
                "growth_factor": 2.0,
                "backoff_factor": 0.5,
                "growth_interval": 2000,
            }
            if precision == "fp16"
            else None
        ),
    }


def initial_loss_scale(config: Any) -> float:
    """256 · layers: fp16 gradients of a mean over S rows underflow below
    it (the hand-written trainer's choice, ANE_FACTS.md)."""
    return 256.0 * config.num_layers


def write_kernels(
    output: Path,
    config: Any,
    kernels: dict[str, Any],
    plan: dict[str, Any],
    progress: Progress,
) -> None:
    from xdsl_ane.api import CompiledModel
    from xdsl_ane.dialects import mil
    from xdsl_ane.models.rope import rope_tables

    cos, sin = rope_tables(config, config.seq_len)
    baked = {"rope.cos": cos, "rope.sin": sin}
    mode = "dynamic" if plan.get("lora") is None else "lora"
    pipeline = f"ane-pipeline{{weights={mode} pack-io=true}}"
    with atomic_output(output, force=True) as tmp:
        tmp.mkdir()
        for name, kernel in kernels.items():
            used = {
                op.weight.data
                for op in kernel.module.walk()
                if isinstance(op, mil.ConstOp) and op.weight is not None
            }
            model = CompiledModel(
                kernel.module,
                {k: v for k, v in baked.items() if k in used} | kernel.weights,
                pipeline,
                source=name,
                progress=progress,
            )
            with progress.step(f"writing {name}"):
                model.save(tmp / f"{name}.mlpackage")
        (tmp / PLAN).write_text(json.dumps(plan, indent=1) + "\n")


def load_kernels(directory: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The kernels `compile_train` wrote to `directory`, read back, and its
    plan."""
    from xdsl_ane.frontend.milproto import read_compiled
    from xdsl_ane.interface import FunctionInterface
    from xdsl_ane.models.kernels import CompiledKernel

    directory = Path(directory)
    path = directory / PLAN
    try:
        plan = json.loads(path.read_text())
        records = plan["kernels"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise XdslAneError(
            f"{option('kernels', directory)}: no readable {PLAN} ({e})"
        ) from None
    kernels = {}
    for record in records:
        program = read_compiled(directory / record["mlpackage"])
        (function,) = (op for op in program.module.ops)
        function_record = program.function_record(function.sym_name.data, 0)
        if function_record is None:
            raise XdslAneError(
                f"{option('kernels', directory)}: {record['mlpackage']} has no manifest"
            )
        interface = FunctionInterface.from_manifest(
            function_record, str(program.manifest_path)
        )
        kernels[record["name"]] = CompiledKernel(
            record["name"],
            program.module,
            list(record["args"]),
            list(record["results"]),
            interface,
            program.weights,
        )
    return kernels, plan


# --- train ------------------------------------------------------------------------


@dataclass
class TrainResult:
    output: Path
    records: list[StepRecord]
    estimate: StepEstimate | None = None
    """The step's estimate on the chip `train` was given."""


def trainable_weights(setup: TrainingSetup) -> dict[str, np.ndarray]:
    """Every tensor a step trains, float32, by the checkpoint's name."""
    weights = {
        name: np.array(setup.checkpoint.tensor(name), np.float32, copy=True)
        for name in setup.layout.checkpoint_names
    }
    for name, value in weights.items():
        bad = value[~np.isfinite(value)]
        if bad.size:
            raise XdslAneError(
                f"{setup.checkpoint.directory}: tensor '{name}' holds {bad.size} "
                f"non-finite value(s) ({bad.flat[0]}); training needs finite weights"
            )
    return weights


def text_tokenizer(checkpoint: Path, data: Path) -> Callable[[str], list[int]] | None:
    """The checkpoint's tokenizer for a `.txt` data file (None otherwise)."""
    if data.suffix != ".txt":
        return None
    from xdsl_ane.api.text import checkpoint_tokenizer

    return checkpoint_tokenizer(checkpoint, data, "data file", ".npy or .bin").encode


def train(
    checkpoint: str | Path,
    data: str | Path,
    output: str | Path,
    options: TrainOptions | None = None,
    *,
    kernels: str | Path | None = None,
    resume: str | Path | None = None,
    log: str | Path | None = None,
    plot: str | Path | None = None,
    force: bool = False,
    on_step: Callable[[StepRecord], None] | None = None,
    progress: Progress | None = None,
    chip: Any = None,
) -> TrainResult:
    """Fine-tunes `checkpoint` on `data` and writes the trained checkpoint
    `output` (see the module docstring). Raises XdslAneError; `output`
    appears whole or not at all (a save replaces it whole)."""
    from xdsl_ane.models.optim import AdamW, DynamicLossScale
    from xdsl_ane.models.train_data import read_tokens, sequences

    options = options or TrainOptions()
    options.check()
    progress = progress or Progress()
    checkpoint, data, output = Path(checkpoint), Path(data), Path(output)
    outputs = [p for p in (output, log, plot) if p is not None]
    # a run resumed from OUT itself goes on saving there
    in_place = resume is not None and Path(resume).resolve() == output.resolve()
    check_outputs(outputs, force or in_place, [checkpoint, data])
    if plot is not None:
        from xdsl_ane.estimator.report import check_plot

        check_plot(plot, True)
    setup = training_setup(checkpoint, options.seq_len)
    config = setup.config
    tokens = read_tokens(data, config.vocab_size, text_tokenizer(checkpoint, data))
    seqs = sequences(tokens, config.seq_len, str(data))
    steps = (
        options.steps
        if options.steps is not None
        else max(1, len(seqs) // options.batch)
    )
    fp16 = options.precision == "fp16"
    plan: dict[str, Any] | None = None
    params = trainable_weights(setup)
    lora = None
    if options.lora is not None:
        lora = lora_of(
            setup, params, options.lora, options.lora_alpha, options.lora_targets
        )
    compression = check_compress(options.compress, lora)
    if kernels is not None:
        compiled, plan = load_kernels(kernels)
        mine = {
            "family": config.family.name,
            "seq_len": config.seq_len,
            "layers": config.num_layers,
            "precision": options.precision,
            "lora": lora_record(lora, options.compress),
        }
        for key, value in mine.items():
            if plan.get(key) != value:
                raise XdslAneError(
                    f"{option('kernels', kernels)}: compiled for {key} {plan.get(key)}, this "
                    f"run has {value}"
                )
    else:
        with progress.step("compiling the training kernels"):
            compiled = step_kernels(setup, fp16, lora, params, compression)
    optimizer = AdamW(
        lr=options.lr,
        betas=options.betas,
        eps=options.eps,
        weight_decay=options.weight_decay,
    )
    scaler = None
    if fp16:
        scaler = DynamicLossScale.from_option(
            options.loss_scale, initial_loss_scale(config)
        )
    state = TrainerState(setup, params, optimizer, scaler, options, steps, lora)
    if resume is not None:
        state.resume(Path(resume))
    loop = TrainingLoop(state, compiled, seqs, on_step, log)
    loop.run(output)
    if plot is not None:
        plot_losses(loop.records, Path(plot), str(checkpoint))
    estimate = None
    if chip is not None:
        plan = plan or step_plan(
            setup, compiled, options.precision, lora, options.compress
        )
        estimate = step_estimate(compiled, plan, chip, options.batch)
    return TrainResult(output, loop.records, estimate)


# --- the estimate of a step ---------------------------------------------------------

ADAMW_BYTES = 28
"""Bytes AdamW moves per float32 parameter: reads the weight, its gradient
and both moments, writes the weight and the moments."""


@dataclass
class StepEstimate:
    """The estimated time of one training step on a chip: every kernel call
    (`xdsl_ane.estimator`, each kernel's estimate times its calls), the
    optimizer and the CPU glue at the chip's memory bandwidth."""

    chip: Any
    calls: int
    kernels_ms: float
    optimizer_ms: float
    cpu_ms: float

    @property
    def total_ms(self) -> float:
        return self.kernels_ms + self.optimizer_ms + self.cpu_ms

    def summary(self) -> str:
        return (
            f"estimate on {self.chip.title}: {self.total_ms:.1f} ms per step "
            f"({self.calls} kernel calls {self.kernels_ms:.1f} ms, AdamW "
            f"{self.optimizer_ms:.1f} ms, CPU glue {self.cpu_ms:.1f} ms)"
        )


def step_estimate(
    kernels: dict[str, Any], plan: dict[str, Any], chip: Any, batch: int = 1
) -> StepEstimate:
    """The estimate of a step of `batch` sequences of the kernels and plan
    `compile_train` made (or wrote and `load_kernels` read)."""
    from xdsl_ane.ane.chips import get_chip
    from xdsl_ane.estimator import estimate_functions

    chip = get_chip(chip)
    each = {
        name: estimate_functions([(name, kernel.function)], chip, name).total_ms
        for name, kernel in kernels.items()
    }
    calls = [call["kernel"] for call in plan["calls"]]
    hidden, layers, seq = plan["hidden_size"], plan["layers"], plan["seq_len"]
    # embedding gather and scatter, label rows both ways, the residual adds
    # and gradient sums of each layer, in float32
    glue = 4 * seq * hidden * (4 + 6 * layers)
    return StepEstimate(
        chip,
        batch * len(calls),
        batch * sum(each[name] for name in calls),
        ADAMW_BYTES * plan["parameters"] / chip.bandwidth * 1e3,
        batch * glue / chip.bandwidth * 1e3,
    )
