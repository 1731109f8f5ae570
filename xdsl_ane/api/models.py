"""`compile_model`: the named decoder shapes (`models.configs.CONFIGS`)
compiled to a directory of packages, the library under `xdsl-ane
compile-model`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdsl_ane.diagnostics import did_you_mean
from xdsl_ane.errors import XdslAneError, option
from xdsl_ane.outputs import atomic_output, check_outputs
from xdsl_ane.progress import Progress


@dataclass
class WrittenModel:
    """What `compile_model` wrote: the directory, each kernel's record of
    kernels.json (name, ops, lint summary, files) and notes to show (the
    compression's summary and output error)."""

    path: Path
    kernels: list[dict[str, Any]]
    notes: list[str]


def compile_model(
    model: str,
    output: str | Path,
    *,
    seq_len: int | None = None,
    layers: int | None = None,
    training: bool = False,
    seed: int = 0,
    validate: bool = False,
    force: bool = False,
    progress: Progress | None = None,
    **compression: Any,
) -> WrittenModel:
    """Writes the directory OUT of `xdsl-ane compile-model NAME`: the named
    shape's decoder stack (`layers` of them, default all, over `seq_len`
    tokens) with seeded random weights, or with `training` its training
    kernels; each as `NAME.mlpackage` and `NAME/model.mil` with its
    manifest, and `kernels.json` listing them. `compression` takes
    `compile`'s compress options. Raises XdslAneError; nothing is left
    behind on failure."""
    from xdsl_ane.models.transformer import CONFIGS

    progress = progress or Progress()
    notes: list[str] = []
    if model not in CONFIGS:
        raise XdslAneError(
            f"unknown model '{model}'{did_you_mean(model, CONFIGS)} "
            f"(known: {', '.join(sorted(CONFIGS))})"
        )
    compression = {k: v for k, v in compression.items() if v is not None}
    compress = compression.get("compress")
    if training and compress:
        raise XdslAneError(
            f"{option('compress', compress)}: does not apply with "
            f"{option('training', True)} (the training kernels take their "
            "weights as inputs)"
        )
    if training and layers is not None:
        raise XdslAneError(
            f"{option('layers', layers)}: does not apply with "
            f"{option('training', True)} (the training kernels are one "
            "layer's; a runtime runs them once per layer)"
        )
    config = CONFIGS[model]
    if seq_len is not None and seq_len < 1:
        raise XdslAneError(f"{option('seq_len', seq_len)}: must be at least 1")
    if layers is not None and layers < 0:
        raise XdslAneError(f"{option('layers', layers)}: must be at least 0")
    if seq_len is not None:
        config = config.with_(seq_len=seq_len)
    output = Path(output)
    check_outputs([output], force)
    name = f"{model}:" + ("{}" if training else "decoder")
    if training:
        kernels = training_models(config, name, seed, progress)
    else:
        kernels = decoder_model(
            config, layers, name, seed, progress, notes, compression
        )
    header = {"model": model, "seq_len": config.seq_len}
    listing = write_models(output, kernels, header, validate, force, progress)
    return WrittenModel(output, listing, notes)


def training_models(
    config: Any, source: str, seed: int, progress: Progress
) -> dict[str, tuple[Any, int]]:
    """The training kernels as compiled models, with their op counts."""
    from xdsl_ane.api import CompiledModel
    from xdsl_ane.models.kernels import compile_training_kernels
    from xdsl_ane.models.transformer import make_weights

    with progress.step("compiling the training kernels"):
        compiled_kernels = compile_training_kernels(config, lint=False)
    pipeline = "ane-pipeline{weights=dynamic pack-io=true}"
    return {
        name: (
            # The kernels' remaining params are constants (RoPE tables).
            CompiledModel(
                kernel.module,
                make_weights(kernel.module, config, seed),
                pipeline,
                source=source.format(name),
                progress=progress,
            ),
            kernel.op_count(),
        )
        for name, kernel in compiled_kernels.items()
    }


def decoder_model(
    config: Any,
    layers: int | None,
    source: str,
    seed: int,
    progress: Progress,
    notes: list[str],
    compression: dict[str, Any],
) -> dict[str, tuple[Any, int]]:
    """The decoder stack of random weights, compiled, with its op count."""
    from xdsl_ane.api import compile
    from xdsl_ane.models.transformer import build_decoder_stack, make_weights

    with progress.step("building the decoder stack"):
        module = build_decoder_stack(config, layers)
    with progress.step("random weights"):
        weights = make_weights(module, config, seed)
    compiled = compile(module, weights=weights, progress=progress, **compression)
    if compiled.compression is not None:
        notes.append(compiled.compression.summary())
        if compiled.activations is not None:
            notes.append(compiled.activations.summary())
        notes.append(compiled.compression_output_error())
    # The model itself is written, with the fp16 copies of its weights
    # made while the passes ran: its first save uses and then frees them.
    compiled.source = source
    del weights  # (the compiled model holds them)
    ops = sum(sum(c.values()) for c in compiled.op_counts().values())
    return {"decoder": (compiled, ops)}


def write_models(
    output: Path,
    kernels: dict[str, tuple[Any, int]],
    header: dict[str, Any],
    validate: bool,
    force: bool,
    progress: Progress,
) -> list[dict[str, Any]]:
    """Each model as NAME.mlpackage and NAME/model.mil into the directory
    `output`, with kernels.json (`header` and the listing), written whole;
    the listing."""
    listing = []
    with atomic_output(output, force=force) as tmp:
        tmp.mkdir()
        for name, (kernel, op_count) in kernels.items():
            if validate:
                with progress.step(f"validating {name}"):
                    report = kernel.validate()
                if not report.ok:
                    raise XdslAneError(
                        f"{name}: not a valid ML program: {report.findings[0]}"
                    )
            kernel.save(tmp / f"{name}.mlpackage")
            kernel.save(tmp / name, emit="mil-text")
            listing.append(
                {
                    "name": name,
                    "ops": op_count,
                    "mlpackage": f"{name}.mlpackage",
                    "mil_text": f"{name}/model.mil",
                    "manifest": f"{name}.manifest.json",
                    "lint": kernel.lint.summary(),
                }
            )
        record = {**header, "kernels": listing}
        (tmp / "kernels.json").write_text(json.dumps(record, indent=2) + "\n")
    return listing
