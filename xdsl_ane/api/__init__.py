"""The Python API: compile rlx (or mil) to an ANE-ready ML Program.

    import xdsl_ane
    model = xdsl_ane.compile("layer.mlir", weights="layer.npz")
    model.save("layer.mlpackage")            # or emit="mil-text" / "proto"
    print(model.summary())

Other compilers embed the pipeline by building rlx IR in Python (the op
builders infer result types) and handing the module over:

    from xdsl.dialects import builtin
    from xdsl_ane.dialects import rlx
    from xdsl_ane.dialects.functions import build_function
    ...
    module = builtin.ModuleOp([build_function("f", types, body)])
    model = xdsl_ane.compile(module, weights={"w": w})

Every failure raises `XdslAneError` with a one-line message naming the file,
op, value or weight and what is wrong.
"""

from __future__ import annotations

import gc
import json
import math
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import builtin, func

from xdsl_ane.ane.chips import DEFAULT_CHIP
from xdsl_ane.errors import XdslAneError, first_line, option, reported
from xdsl_ane.frontend.mlir import parse_module
from xdsl_ane.locations import location
from xdsl_ane.outputs import atomic_output, check_output
from xdsl_ane.passes.driver import parse_pipeline, verify
from xdsl_ane.progress import NO_PROGRESS, Progress
from xdsl_ane.weights.arrays import load_arrays
from xdsl_ane.weights.check import check_weights

DEFAULT_PIPELINE = "ane-pipeline"
"""The pipeline of `compile` unless another is given. Its `ane-lint` keeps
its report (`CompiledModel.lint`) rather than printing it, and fails on its
errors unless `allow_lint_errors` (`passes/compile_pipeline.py`)."""

EMITS = ("mlpackage", "mil-text", "proto")


@dataclass
class CompiledModel:
    """The result of `compile`: the compiled mil module, its weights and lint
    report, and lazily its MIL protobuf and MIL text."""

    module: builtin.ModuleOp
    weights: dict[str, np.ndarray]
    pipeline: str
    target: str = "iOS18"
    source: str = "<module>"
    unused_weights: list[str] = field(default_factory=list)
    progress: Progress = field(default=NO_PROGRESS, repr=False)
    """Where the steps of `save` report (the command line's progress)."""
    compression: Any = None
    """What `mil-compress-weights` did (`CompressionReport`), if it ran."""
    activations: Any = None
    """What `--compress w8a8` made int8 of the activations
    (`passes.quantize_activations.ActivationReport`), if it ran."""
    uncompressed: builtin.ModuleOp | None = field(default=None, repr=False)
    """The module as it was before `mil-compress-weights`, for the output
    error of the compression."""
    notes: list[str] = field(default_factory=list)
    """What the import changed without changing the numbers (a torch
    program's bf16 or f64 tensors held as f32: `TorchImport.notes`)."""
    prefetch: Any = field(default=None, repr=False)
    """fp16 copies of the weights made while the passes ran
    (`backend.weights.Fp16Prefetch`), used by the first print and freed
    once the model is saved."""

    @cached_property
    def lint(self):
        """The `ane-lint` report of the compiled module (`LintReport`)."""
        from xdsl_ane.passes.ane_lint import lint_module

        with reported(f"{self.source}: ane-lint", self.source):
            return lint_module(self.module)

    @cached_property
    def proto(self):
        """The MIL protobuf (`ProtoResult`: `.spec` is coremltools'
        `Model_pb2.Model`, `.blob` the weight blob)."""
        with self.progress.step("MIL protobuf"):
            return self.print_proto()

    def print_proto(self, blob=None):
        """The MIL protobuf, its blob planned into `blob` (see
        `module_to_proto`)."""
        from xdsl_ane.backend.milproto import module_to_proto

        if self.prefetch is not None:
            self.prefetch.stop()  # what it has not converted yet, the writer does
        with reported(f"{self.source}: MIL protobuf", self.source):
            return module_to_proto(
                self.module,
                self.weights,
                target=self.target,
                blob=blob,
                prefetch=self.prefetch,
            )

    @property
    def spec(self):
        return self.proto.spec

    @cached_property
    def mil_text(self) -> str:
        """The `program(1.3)` MIL text (weights as BLOBFILE references)."""
        from xdsl_ane.backend.mil_text import module_to_mil_text

        with reported(f"{self.source}: MIL text", self.source):
            text, _ = module_to_mil_text(self.module, self.weights, target=self.target)
        return text

    @property
    def functions(self) -> list[func.FuncOp]:
        return [op for op in self.module.ops if isinstance(op, func.FuncOp)]

    def op_counts(self) -> dict[str, Counter[str]]:
        """Ops by type per function, consts excluded."""
        return {
            f.sym_name.data: Counter(
                op.name.removeprefix("mil.")
                for op in f.walk()
                if op.name.startswith("mil.") and op.name != "mil.const"
            )
            for f in self.functions
        }

    def weight_bytes(self) -> int:
        return sum(e.nbytes for e in self.proto.blob.entries)

    def manifest(self) -> dict[str, Any]:
        """What a runtime needs to drive each function: its output names
        (those of the MIL program), the `[1, C, 1, S]` layout of every
        argument and result, dynamic weight arguments and the packing of
        inputs and outputs."""
        from xdsl_ane.interface import FunctionInterface

        functions = {
            f.sym_name.data: FunctionInterface.of_function(f).manifest()
            for f in self.functions
        }
        return {"functions": functions}

    def validate(self):
        """coremltools' milproto loader and re-export check (`ValidationReport`)."""
        proto = self.proto
        with reported(f"{self.source}: validation", self.source):
            return proto.validate()

    def save(
        self, path: str | Path, emit: str = "mlpackage", force: bool = False
    ) -> Path:
        """Writes the model: an `.mlpackage` (default), a MIL text directory
        (`DIR/model.mil`, `DIR/weights/weight.bin`) or a bare protobuf
        directory, plus the manifest next to it. Nothing is left at `path`
        if it fails; an existing output is kept unless `force`."""
        path = Path(path)
        check_emit(path, emit)
        check_output(path, force)
        with collection_paused():
            self._save(path, emit, force)
        self.release_prefetch()
        return path

    def _save(self, path: Path, emit: str, force: bool) -> None:
        from xdsl_ane.backend.mil_text import BLOB_PATH, print_program, write_printed

        # What can fail on the program fails before anything is written.
        with reported(f"{self.source}: manifest", self.source):
            manifest = json.dumps(self.manifest(), indent=2) + "\n"
        if emit == "mlpackage" and "proto" not in self.__dict__:
            step = f"MIL protobuf, writing {path.name}"
            with (
                self.progress.step(step),
                atomic_output(manifest_path(path, emit)) as tmp,
            ):
                tmp.write_text(manifest)
                self.write_mlpackage(path, force)
            return
        if emit != "mil-text":
            self.proto  # noqa: B018  (printed before anything is written)
        with reported(str(path)), self.progress.step(f"writing {path.name}"):
            if emit == "mlpackage":
                # The manifest beside the package is staged first and moved
                # into place right after the package.
                with atomic_output(manifest_path(path, emit)) as tmp:
                    tmp.write_text(manifest)
                    self.proto.save(path, force=force)
            else:
                # A directory output is assembled in full (model, weights
                # and manifest) beside `path`, then moved into place; the
                # MIL text is printed first, so that what fails on the
                # program fails before a file is written (and errors name
                # `path`, not where it is assembled).
                if emit == "mil-text":
                    text, blob = print_program(
                        self.module, self.weights, BLOB_PATH, self.target
                    )
                with atomic_output(path) as tmp:
                    if emit == "proto":
                        self.proto.write_proto(tmp)
                    else:
                        write_printed(text, blob, tmp)
                    manifest_path(tmp, emit).write_text(manifest)

    def write_mlpackage(self, path: str | Path, force: bool = False) -> None:
        """The `.mlpackage` at `path` alone (no manifest): printed and
        written at once where the protobuf is not printed yet, the blob
        written while the rest of it is printed; nothing is left at `path`
        if either fails."""
        self.start_mlpackage(path, force).finish()

    def start_mlpackage(self, path: str | Path, force: bool = False) -> PendingPackage:
        """`write_mlpackage` in two steps: the model printed now, its blob
        still being written on a thread when this returns, the package made
        by the `finish` of what it returns (or nothing left by its
        `abort`), so that the caller goes on while the weights go to disk."""
        from xdsl_ane.backend.mlpackage import PackageWrite

        with reported(str(path)):
            if "proto" in self.__dict__:
                self.proto.save(path, force=force)
                return PendingPackage(self, Path(path), None)
            return PendingPackage(
                self, Path(path), PackageWrite(self.print_proto, path, force=force)
            )

    def release_prefetch(self) -> None:
        """Frees the prefetched fp16 copies (later writes convert again)."""
        if self.prefetch is not None:
            self.prefetch.release()
            self.prefetch = None

    def release_weights(self) -> None:
        """Drops the weight data of a model already saved (its blob's
        arrays, the prefetched copies, `weights`), keeping the module and
        the blob's plan: what a summary or manifest needs, not a save."""
        self.release_prefetch()
        if "proto" in self.__dict__:
            self.proto.blob.drop_data()
        self.weights.clear()

    def compression_output_error(self, seed: int = 0) -> str:
        """The model's output error from compression: each function run by
        the interpreter on the same random inputs with the compressed
        weights and with the fp16 ones, ‖y − y₁₆‖ / ‖y₁₆‖ over its outputs
        (the worst function), or why it cannot be computed."""
        from xdsl_ane.interpreter.core import random_inputs, run_function

        if self.uncompressed is None:
            return "output error vs fp16: not computed (no uncompressed module)"
        worst: tuple[float, str] | None = None
        for f in self.functions:
            name = f.sym_name.data
            try:
                inputs = random_inputs(f, seed)
                ours = run_function(self.module, inputs, self.weights, name)
                fp16 = run_function(self.uncompressed, inputs, self.weights, name)
            except Exception as e:  # an op the interpreter lacks, a state input
                return f"output error vs fp16: not computed (@{name}: {first_line(e)})"
            error = sum(
                float(np.sum((a.astype(np.float64) - b.astype(np.float64)) ** 2))
                for a, b in zip(ours, fp16)
            )
            norm = sum(float(np.sum(b.astype(np.float64) ** 2)) for b in fp16)
            relative = math.sqrt(error / norm) if norm else math.sqrt(error)
            if worst is None or relative > worst[0]:
                worst = (relative, name)
        if worst is None:
            return "output error vs fp16: no function to run"
        return (
            f"output error vs fp16: {worst[0]:.4f} relative (@{worst[1]}, "
            f"interpreter, random inputs seed {seed})"
        )

    def compression_lines(self) -> list[str]:
        """What the compression did (auto:BITS's choice) and what w8a8 made
        int8, a line each; none if uncompressed."""
        if self.compression is None:
            return []
        lines = [line.strip() for line in self.compression.summary().splitlines()]
        if self.activations is not None:
            lines.append(self.activations.summary())
        return lines

    def summary(
        self, output: str | Path | None = None, chip: str | None = DEFAULT_CHIP
    ) -> str:
        """Functions, ops per function by type, lint findings, weight bytes,
        the placement and latency estimate on `chip` (none with None) and
        the output path, in a few lines."""
        lines = [f"{self.source}: compiled with {self.pipeline}"]
        for name, counts in self.op_counts().items():
            ops = ", ".join(f"{n} {op}" for op, n in sorted(counts.items()))
            lines.append(f"  @{name}: {sum(counts.values())} ops ({ops})")
        report = self.lint
        for finding in report.findings:
            lines.append("  " + finding.format())
        lines.append(f"  {report.summary()}")
        if chip is not None:
            from xdsl_ane.estimator import estimate
            from xdsl_ane.estimator.report import summary

            lines.append(f"  {summary(estimate(self, chip))}")
        lines.append(f"  weights: {self.weight_bytes():,} bytes in the blob")
        if self.compression is not None:
            lines += [f"  {line}" for line in self.compression_lines()]
            lines.append("  " + self.compression_output_error())
        if self.unused_weights:
            names = ", ".join(self.unused_weights[:5])
            more = (
                ""
                if len(self.unused_weights) <= 5
                else f" and {len(self.unused_weights) - 5} more"
            )
            lines.append(f"  warning: weights not used by the program: {names}{more}")
        if output is not None:
            lines.append(f"  wrote {output}")
        return "\n".join(lines)


def check_emit(path: Path, emit: str) -> None:
    """Fails on an --emit kind that does not exist, or whose directory
    would be named as a package it is not (`-o X.mlpackage --emit
    mil-text`)."""
    if emit not in EMITS:
        raise XdslAneError(
            f"{option('emit', emit)}: expected one of {', '.join(EMITS)}"
        )
    if emit != "mlpackage" and path.suffix == ".mlpackage":
        raise XdslAneError(
            f"{path}: {option('emit', emit)} writes a directory of {emit}, not a "
            "package; name it without .mlpackage"
        )


def manifest_path(path: Path, emit: str) -> Path:
    """`X.mlpackage` -> `X.manifest.json`; a directory output -> `DIR/manifest.json`
    (written after the directory is in place)."""
    if emit == "mlpackage":
        return path.with_name(path.stem + ".manifest.json")
    return path / "manifest.json"


def load_weights(
    weights: Mapping[str, np.ndarray] | str | Path | None,
) -> dict[str, np.ndarray]:
    if weights is None:
        return {}
    if isinstance(weights, str | Path):
        return load_arrays(weights, "weights")
    if not isinstance(weights, Mapping):
        raise XdslAneError(
            "weights: expected a mapping of names to arrays or the path of an "
            f".npz / .safetensors file, got {type(weights).__name__}"
        )
    from xdsl_ane.weights.lazy import LazyWeight

    arrays = {}
    for name, value in weights.items():
        # a LazyWeight (a checkpoint tensor) stays unread until it is used
        array = value if isinstance(value, LazyWeight) else np.asarray(value)
        if array.dtype.kind not in "fiub":
            raise XdslAneError(
                f"weights: '{name}' is not a numeric array (dtype {array.dtype})"
            )
        arrays[str(name)] = array
    return arrays


def load_module(
    module_or_path: builtin.ModuleOp | str | Path,
) -> tuple[builtin.ModuleOp, str, dict[str, np.ndarray]]:
    """A module from an object or a `.mlir` / `.mil` file (MIL text brings
    its BLOBFILE weights along)."""
    if isinstance(module_or_path, builtin.ModuleOp):
        module = module_or_path.clone()
        verify(module, "<module>")
        return module, "<module>", {}
    if not isinstance(module_or_path, str | Path):
        raise XdslAneError(
            "expected a builtin.ModuleOp or the path of a .mlir / .mil file, got "
            f"{type(module_or_path).__name__}"
        )
    path = Path(module_or_path)
    if path.suffix == ".mil":
        from xdsl_ane.frontend.mil_text import read_mil_file

        module, weights = read_mil_file(path)
        return module, str(path), weights
    return parse_module(path), str(path), {}


def check_not_empty(module: builtin.ModuleOp, source: str) -> None:
    """Fails on a function argument or result with no elements (a
    dimension of 0), naming it: Core ML has no empty tensors (compiled,
    `tensor<0x4xf32>` became a package input [1, 4, 1, 0]). An empty value
    inside (a constant a concat drops) is the pipeline's to remove."""
    from xdsl.dialects.builtin import TensorType

    for function in module.walk():
        if not isinstance(function, func.FuncOp):
            continue
        t = function.function_type
        for kind, types in (("argument", t.inputs.data), ("result", t.outputs.data)):
            for i, value_type in enumerate(types):
                if isinstance(value_type, TensorType) and 0 in value_type.get_shape():
                    raise XdslAneError(
                        f"{location(function) or source}: @{function.sym_name.data}"
                        f" {kind} {i} has type {value_type}, with no elements; "
                        "Core ML has no empty tensors"
                    )


def check_fp16_weights(
    module: builtin.ModuleOp, weights: Mapping[str, np.ndarray], source: str
) -> None:
    """Fails on a weight that the compiled program holds in fp16 and that
    has a value fp16 cannot (|v| > 65504, which would be written as inf),
    naming the op and the weight."""
    from xdsl.dialects.builtin import f16

    from xdsl_ane.dialects import mil
    from xdsl_ane.dialects.typing import element_type_of

    limit = float(np.finfo(np.float16).max)
    for op in module.walk():
        if not isinstance(op, mil.ConstOp) or op.weight is None:
            continue
        value = weights.get(op.weight.data)
        if element_type_of(op.result) != f16 or not isinstance(value, np.ndarray):
            continue
        if value.dtype.kind != "f" or value.dtype == np.float16 or not value.size:
            continue
        largest = float(np.abs(value).max())
        if largest > limit:
            raise XdslAneError(
                f"{location(op) or source}: weight '{op.weight.data}' holds "
                f"{largest:g}, outside fp16's range (±65504); scale it into range, "
                "or keep the program in f32 (pipeline option fp16=false)"
            )


@dataclass
class PendingPackage:
    """A package of `model` being written (`CompiledModel.start_mlpackage`):
    `finish` waits for its blob and moves it into place, `abort` waits for
    the writer and leaves nothing."""

    model: CompiledModel
    path: Path
    write: Any
    """The `backend.mlpackage.PackageWrite`; None once done."""

    def finish(self) -> None:
        if self.write is not None:
            write, self.write = self.write, None
            with reported(str(self.path)):
                self.model.__dict__["proto"] = write.finish()

    def abort(self) -> None:
        if self.write is not None:
            write, self.write = self.write, None
            write.abort()


def compile(
    module_or_path: builtin.ModuleOp | str | Path,
    weights: Mapping[str, np.ndarray] | str | Path | None = None,
    pipeline: str | None = None,
    target: str = "iOS18",
    example_args: tuple[Any, ...] | None = None,
    allow_lint_errors: bool = False,
    progress: Progress = NO_PROGRESS,
    compress: str | None = None,
    compress_head: str = "same",
    compress_embedding: str = "none",
    calibration: Mapping[str, np.ndarray] | str | Path | None = None,
) -> CompiledModel:
    """Compiles an rlx (or mil) program with `pipeline` (an `xdsl-opt` pass
    pipeline; default `ane-pipeline`) into a `CompiledModel`. The input
    module is not modified. `compress` (`MODE[:GRANULARITY[:GROUP]]`, e.g.
    "lut4", "int4:per-block:32") appends `mil-compress-weights` to the
    pipeline, the LM head compressed as `compress_head` (a mode, "same" or
    "none") and the embedding as `compress_embedding`; the pass may also be
    named in `pipeline` itself. `compress="w8a8"` makes the weights int8
    and the activations they multiply too, with scales from `calibration`
    (`api/w8a8.py`). A `torch.export.ExportedProgram`, an
    `nn.Module` (exported on `example_args`) or a `.pt2` file is imported
    with `xdsl_ane.from_torch` first. An `ane-lint` of the pipeline
    (`ane-pipeline` has one unless `lint=false`) fails the compile on an
    error (with `strict`, a warning) unless `allow_lint_errors`. Raises
    `XdslAneError`."""
    from xdsl_ane.backend.targets import deployment_target
    from xdsl_ane.frontend.torch import from_torch, is_torch_input

    deployment_target(target)  # an unknown target fails before any work
    if is_torch_input(module_or_path):
        imported = from_torch(module_or_path, example_args)
        try:
            model = compile(
                imported.module,
                {**imported.weights, **load_weights(weights)},
                pipeline,
                target,
                allow_lint_errors=allow_lint_errors,
                progress=progress,
                compress=compress,
                compress_head=compress_head,
                compress_embedding=compress_embedding,
                calibration=calibration,
            )
        except XdslAneError as e:  # named by the program, not "<module>"
            message = str(e).replace("<module>", imported.source, 1)
            raise type(e)(message) from e.__cause__
        model.source = imported.source
        model.notes = list(imported.notes)
        return model
    with collection_paused():
        return _compile_module(
            module_or_path,
            weights,
            pipeline,
            target,
            allow_lint_errors,
            progress,
            compress,
            compress_head,
            compress_embedding,
            calibration,
        )


def _compile_module(
    module_or_path: builtin.ModuleOp | str | Path,
    weights: Mapping[str, np.ndarray] | str | Path | None,
    pipeline: str | None,
    target: str,
    allow_lint_errors: bool,
    progress: Progress,
    compress: str | None,
    compress_head: str,
    compress_embedding: str,
    calibration: Any = None,
) -> CompiledModel:
    """`compile` of a module or file (not a torch input), with the garbage
    collector paused by the caller."""
    from xdsl_ane.api import auto_bits, w8a8
    from xdsl_ane.passes.compile_pipeline import run_pipeline

    w8a8.check_calibration(compress, calibration)
    activations = w8a8.is_w8a8(compress)
    auto = compress if w8a8.is_auto(compress) else None
    if auto is not None:
        auto_bits.budget(auto)  # a bad BITS fails before any work
    compress = None if auto is not None else w8a8.weight_mode(compress)

    where = (
        "<module>"
        if isinstance(module_or_path, builtin.ModuleOp)
        else str(module_or_path)
    )
    spec = pipeline or DEFAULT_PIPELINE
    if compress is not None:
        spec += "," + compression_pass(
            compress, compress_head, compress_embedding, target
        )
    with reported(where, where):
        parse_pipeline(spec)  # a misspelled pipeline fails before any work
        module, source, file_weights = load_module(module_or_path)
    with reported(str(weights) if isinstance(weights, str | Path) else where):
        all_weights = {**file_weights, **load_weights(weights)}
    with reported(source, source):
        check_not_empty(module, source)
        unused = check_weights(module, all_weights, source)
        prefetch = fp16_prefetch(spec, all_weights, compress)
        try:
            run = run_pipeline(
                module, spec, source, allow_lint_errors, progress, all_weights
            )
            check_fp16_weights(module, all_weights, source)
            report = (
                w8a8.quantize(module, all_weights, calibration) if activations else None
            )
            if auto is not None:
                run.uncompressed = module.clone()
                run.compression = auto_bits.compress(
                    module, all_weights, calibration, auto, compress_head
                )
        except BaseException:
            if prefetch is not None:
                prefetch.release()
            raise
    model = CompiledModel(
        module,
        all_weights,
        spec,
        target=target,
        source=source,
        unused_weights=unused,
        progress=progress,
        compression=run.compression,
        activations=report,
        uncompressed=run.uncompressed,
        prefetch=prefetch,
    )
    if run.lint is not None:
        model.lint = run.lint  # the pipeline's own lint of the final module
    return model


@contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused (and restored after): a
    compile builds and drops tens of thousands of IR objects, and the
    collections they trigger traverse every live object each time (about a
    tenth of a 28-layer compile). What is dropped meanwhile is freed at the
    next collection after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def fp16_prefetch(spec: str, weights: dict[str, np.ndarray], compress: str | None):
    """An `Fp16Prefetch` of the weights while the passes run, when the
    pipeline makes the program fp16 (`ane-pipeline` with fp16, or
    `mil-fp16`) and nothing compresses the weights; else None."""
    from xdsl_ane.backend.weights import Fp16Prefetch
    from xdsl_ane.passes.fp16 import MilFp16Pass
    from xdsl_ane.passes.pipeline import AnePipelinePass

    if compress is not None or not weights:
        return None
    passes = parse_pipeline(spec).passes
    if any(p.name == "mil-compress-weights" for p in passes):
        return None
    if not any(
        isinstance(p, MilFp16Pass) or (isinstance(p, AnePipelinePass) and p.fp16)
        for p in passes
    ):
        return None
    return Fp16Prefetch(weights)


def compression_pass(mode: str, head: str, embedding: str, target: str) -> str:
    """The `mil-compress-weights{...}` of `compile(compress=...)`; a bad
    setting, or a target without the iOS18 constexpr ops, is an error."""
    from xdsl.utils.exceptions import PassFailedException

    from xdsl_ane.backend.targets import TARGET_VERSIONS, deployment_target
    from xdsl_ane.passes.compress_weights import (
        CompressionSetting,
        MilCompressWeightsPass,
    )

    try:
        setting = CompressionSetting.parse(mode)
        MilCompressWeightsPass(
            setting.mode,
            setting.granularity,
            setting.group,
            head=head,
            embedding=embedding,
        ).plan()
    except ValueError as e:
        raise XdslAneError(f"{option('compress', mode)}: {e}") from None
    except PassFailedException as e:  # the pass's check of head and embedding
        message = first_line(e).removeprefix("mil-compress-weights: ")
        raise XdslAneError(f"{option('compress', mode)}: {message}") from None
    deployment = deployment_target(target)
    if deployment.specification_version < TARGET_VERSIONS["iOS18"]:
        op = (
            "lut_to_dense"
            if setting.mode.startswith("lut")
            else "blockwise_shift_scale"
        )
        raise XdslAneError(
            f"{option('compress', mode)}: compressed weights are iOS18 ops "
            f"(constexpr_{op}), not in deployment target {deployment.name}"
        )
    return (
        f"mil-compress-weights{{mode={setting.mode} granularity={setting.granularity} "
        f"group={setting.group} head={head} embedding={embedding}}}"
    )
