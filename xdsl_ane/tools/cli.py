"""The `xdsl-ane` command.

    xdsl-ane compile IN.mlir|IN.mil|IN.pt2 -o OUT [--weights W.npz|W.safetensors]
                 [-p PIPELINE] [--emit mlpackage|mil-text|proto] [--target iOS18|iOS17]
                 [--validate] [--force] [--chip m4]
    xdsl-ane import K.mil|MODEL.pt2 [-o OUT.mlir] [--force]
    xdsl-ane compile-model qwen3-0.6b (--training | [--layers N]) -o OUT
                 [--seq-len S] [--seed N] [--validate] [--force]
    xdsl-ane run IN.mlir|IN.pt2|COMPILED [-p PIPELINE] [--function NAME]
                 [--weights W.npz] (--inputs X.npz | --random SEED) [-o Y.npz] [--force]
    xdsl-ane compile-llm CHECKPOINT -o OUT ...   (tools/llm.py over api/llm.py)
    xdsl-ane generate PACKAGE --prompt-ids IDS [--max-new-tokens N]
                 [--reference CHECKPOINT]
    xdsl-ane compile-asr CHECKPOINT -o OUT ...   (tools/asr.py over api/asr.py)
    xdsl-ane transcribe OUT AUDIO.wav [--language L] [--show-ids]
                 [--reference CHECKPOINT]
    xdsl-ane estimate COMPILED|IN.mlir|IN.pt2 [--chip m4] [--json] [--plot FILE]
    xdsl-ane --version

Every failure ends in one line `xdsl-ane: error: ...` on stderr naming the
file, op or value, and exit status 1; no traceback, no partial output file.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from xdsl_ane.diagnostics import counted
from xdsl_ane.errors import XdslAneError, command_line, internal_error
from xdsl_ane.progress import Progress
from xdsl_ane.tools.options import (
    add_chip_argument,
    add_compress_arguments,
    add_output_arguments,
    compress_options,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xdsl-ane",
        description="Compile rlx/mil programs for Apple's Neural Engine, and run "
        "them with the numpy interpreter.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {package_version()}"
    )
    commands = parser.add_subparsers(dest="command", required=True)

    add_compile_command(commands)
    add_compile_model_command(commands)
    add_import_command(commands)
    add_run_command(commands)
    add_estimate_command(commands)
    from xdsl_ane.tools.asr import add_asr_commands
    from xdsl_ane.tools.llm import add_llm_commands
    from xdsl_ane.tools.train import add_train_commands

    add_llm_commands(commands)
    add_asr_commands(commands)
    add_train_commands(commands)
    return parser


def add_compile_command(commands: Any) -> None:
    compile_ = commands.add_parser(
        "compile",
        help="compile rlx (or mil) to an .mlpackage, MIL text or a bare protobuf",
        description="Runs the pass pipeline (default: ane-pipeline) and writes "
        "the model with its weights, plus a manifest of the layouts a runtime "
        "needs; prints a summary.",
    )
    compile_.add_argument(
        "input", help="the .mlir (rlx or mil), .mil or .pt2 (torch.export) file"
    )
    add_output_arguments(
        compile_,
        "the model: OUT.mlpackage and OUT.manifest.json, or a directory with "
        "--emit mil-text or proto",
    )
    compile_.add_argument("--weights", help=".npz or .safetensors with the weights")
    compile_.add_argument("-p", "--passes", dest="pipeline", help="pass pipeline")
    compile_.add_argument(
        "--emit",
        choices=("mlpackage", "mil-text", "proto"),
        default="mlpackage",
        help="what to write (default: %(default)s)",
    )
    compile_.add_argument(
        "--target",
        choices=("iOS18", "iOS17"),
        default="iOS18",
        help="deployment target (default: %(default)s)",
    )
    compile_.add_argument(
        "--validate",
        action="store_true",
        help="reload the protobuf with coremltools' MIL loader and compare a "
        "re-export; nothing is written if it finds a problem",
    )
    compile_.add_argument(
        "--allow-lint-errors",
        action="store_true",
        help="write the model even when ane-lint finds errors (they are printed)",
    )
    add_chip_argument(compile_, "the chip of the summary's estimate")
    add_compress_arguments(compile_)
    compile_.add_argument(
        "--calibration",
        metavar="FILE.npz",
        help="with --compress w8a8 or auto:BITS: the calibration samples, one "
        "array per program input stacked along a new first axis (default: 8 "
        "random samples per function)",
    )
    compile_.set_defaults(handler=command_compile)


def add_compile_model_command(commands: Any) -> None:
    model = commands.add_parser(
        "compile-model",
        help="compile a built-in model: the training-step kernel set, or the forward model",
        description="With --training, writes every kernel of one layer's training "
        "step (dynamic weights, one packed input and output each) as "
        "DIR/NAME.mlpackage, DIR/NAME/model.mil + weights, and the manifests "
        "DIR/NAME.manifest.json; DIR/kernels.json lists them. Without it, "
        "compiles the forward decoder stack with seeded random weights.",
    )
    model.add_argument("model", help="model name: " + ", ".join(sorted(model_names())))
    model.add_argument(
        "--training", action="store_true", help="the training kernel set"
    )
    model.add_argument("--layers", type=int, help="forward model: number of layers")
    model.add_argument(
        "--seq-len", type=int, help="sequence length (default: the config's)"
    )
    model.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the random weights (default: %(default)s)",
    )
    add_output_arguments(model, "the kernels: a directory")
    model.add_argument("--validate", action="store_true", help="validate every package")
    add_compress_arguments(model)
    model.set_defaults(handler=command_compile_model)


def add_import_command(commands: Any) -> None:
    import_ = commands.add_parser(
        "import",
        help="MIL text to the mil dialect, or a torch.export program to rlx",
        description="Reads MIL text (program(1.3)), resolving BLOBFILE paths "
        "against the file's directory, and prints the mil dialect; or reads a "
        ".pt2 written by torch.export.save and prints it in rlx; with -o, "
        "writes OUT.mlir and its weights as OUT.weights.npz.",
    )
    import_.add_argument("input", help="the .mil or .pt2 (torch.export) file")
    add_output_arguments(
        import_,
        "the program: OUT.mlir and its weights OUT.weights.npz (default: print it)",
        required=False,
    )
    import_.set_defaults(handler=command_import)


def add_run_command(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        help="apply passes, then interpret a function with numpy",
        description="Applies the passes of -p, then interprets one function of "
        "IN.mlir. Inputs are keyed arg0, arg1, ... in argument order; outputs "
        "out0, out1, ...",
    )
    run.add_argument(
        "input",
        help="the .mlir file, or what compile wrote: an .mlpackage, a --emit "
        "proto or mil-text directory, or a .mil file",
    )
    run.add_argument(
        "-p", "--passes", dest="pipeline", help="pass pipeline to apply first"
    )
    run.add_argument("--function", help="function to run (default: the first)")
    run.add_argument(
        "--weights", help=".npz or .safetensors with rlx.param / mil.const weights"
    )
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--inputs", help=".npz with arrays arg0, arg1, ...")
    source.add_argument(
        "--random", type=int, metavar="SEED", help="random inputs from SEED"
    )
    run.add_argument(
        "--layout",
        choices=("logical", "ane"),
        help="for a compiled model: inputs and outputs as the source program's "
        "logical tensors (the default where a manifest records them) or as the "
        "compiled function's own [1, C, 1, S] arguments (the default otherwise)",
    )
    add_output_arguments(
        run,
        "the results: an .npz keyed out0, out1, ... (default: print a summary)",
        required=False,
    )
    run.set_defaults(handler=command_run)


def add_estimate_command(commands) -> None:
    estimate = commands.add_parser(
        "estimate",
        help="where each op runs on a chip's ANE (or why not) and how long it takes",
        description="Places each op of a compiled model on the ANE or the "
        "CPU/GPU by the chip's rules (those of ane-lint) and estimates its "
        "time from its FLOPs and bytes (a roofline at the chip's peak and "
        "bandwidth, plus dispatches and transfers); prints a table per op "
        "(per layer for large models) and a summary. A source program is "
        "compiled first with the default pipeline.",
    )
    estimate.add_argument(
        "input",
        help="a compiled model (.mlpackage, compile-llm output, --emit "
        "directory, .mil) or what compile takes (.mlir, .pt2)",
    )
    add_chip_argument(estimate, "the chip")
    estimate.add_argument(
        "--json", action="store_true", help="print the estimate as one JSON object"
    )
    estimate.add_argument(
        "--plot",
        metavar="FILE",
        help="write a bar chart of the table's rows, per op or per layer (.png, .svg)",
    )
    estimate.add_argument(
        "--by",
        choices=("auto", "op", "layer"),
        default="auto",
        help="table rows (default: per op, per layer above 120 ops)",
    )
    estimate.add_argument(
        "--force", action="store_true", help="replace an existing --plot file"
    )
    estimate.add_argument("--weights", help="a source's weights (not needed)")
    estimate.add_argument(
        "-p", "--passes", dest="pipeline", help="a source's pass pipeline"
    )
    estimate.set_defaults(handler=command_estimate)


def command_estimate(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from xdsl_ane.ane.chips import get_chip
    from xdsl_ane.api.estimation import estimate
    from xdsl_ane.estimator import report
    from xdsl_ane.outputs import check_outputs

    chip = get_chip(args.chip)  # checked before the work
    if args.plot:
        report.check_plot(args.plot, args.force)
        check_outputs([args.plot], args.force, [args.input, args.weights])
    result = estimate(args.input, chip, args.weights, args.pipeline)
    if args.plot:
        report.plot(result, args.plot, args.by, args.force)
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    else:
        print(f"{args.input}:")
        print(report.table(result, args.by))
        print(report.summary(result))
        if (Path(args.input) / "plan.json").is_file():  # compile-train's kernels
            from xdsl_ane.api.train import load_kernels, step_estimate

            kernels, plan = load_kernels(args.input)
            print(step_estimate(kernels, plan, chip).summary())
    if args.plot:
        print(f"wrote {args.plot}", file=sys.stderr if args.json else sys.stdout)
    return 0


def command_compile(args: argparse.Namespace) -> int:
    from pathlib import Path

    from xdsl_ane.ane.chips import get_chip
    from xdsl_ane.api import check_emit, compile, manifest_path
    from xdsl_ane.outputs import check_outputs

    get_chip(args.chip)  # an unknown chip fails before the work
    output = Path(args.output)
    check_emit(output, args.emit)
    # (a directory output holds its manifest)
    outputs = (
        [output, manifest_path(output, args.emit)]
        if args.emit == "mlpackage"
        else [output]
    )
    check_outputs(outputs, args.force, [args.input, args.weights])
    progress = Progress()
    model = compile(
        args.input,
        weights=args.weights,
        pipeline=args.pipeline,
        target=args.target,
        allow_lint_errors=args.allow_lint_errors,
        progress=progress,
        calibration=args.calibration,
        **compress_options(args),
    )
    if args.validate:
        with progress.step("validating"):
            report = model.validate()
        for finding in report.findings:
            print(f"  validate: {finding}", file=sys.stderr)
        if not report.ok:
            raise XdslAneError(
                f"{args.input}: the emitted ML program is not valid "
                f"({len(report.findings)} findings, first: {report.findings[0]})"
            )
    for note in model.notes:
        print(f"xdsl-ane: note: {note}", file=sys.stderr)
    # (prints the program before writing)
    summary = model.summary(output, chip=args.chip)
    model.save(output, emit=args.emit, force=args.force)
    print(summary)
    if args.validate:
        print(
            "  validated: coremltools' MIL loader rebuilt every op; the re-export matches"
        )
    if model.unused_weights:
        print(
            f"xdsl-ane: warning: {counted(len(model.unused_weights), 'weight')} in "
            f"{args.weights} are not used by the program",
            file=sys.stderr,
        )
    return 0


def package_version() -> str:
    """The installed distribution's version (pyproject.toml's)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("xdsl-ane")
    except PackageNotFoundError:
        return "(not installed)"


def model_names() -> list[str]:
    from xdsl_ane.models.configs import CONFIGS

    return list(CONFIGS)


def command_compile_model(args: argparse.Namespace) -> int:
    from xdsl_ane.api.models import compile_model

    written = compile_model(
        args.model,
        args.output,
        seq_len=args.seq_len,
        layers=args.layers,
        training=args.training,
        seed=args.seed,
        validate=args.validate,
        force=args.force,
        progress=Progress(),
        **compress_options(args),
    )
    for line in written.notes:
        print(f"  {line}")
    for kernel in written.kernels:
        print(f"  {kernel['name']}: {kernel['ops']} ops, {kernel['lint']}")
    checked = " and validated" if args.validate else ""
    print(f"wrote {counted(len(written.kernels), 'kernel')}{checked} to {written.path}")
    return 0


def command_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from xdsl_ane.frontend.mil_text import read_mil_file
    from xdsl_ane.outputs import atomic_output, check_outputs

    if args.force and args.output is None:
        raise XdslAneError("--force: applies only with -o (import prints otherwise)")
    if args.output is not None:  # checked before the work, not after it
        output = Path(args.output)
        weights_path = output.with_name(output.stem + ".weights.npz")
        check_outputs([output, weights_path], args.force, [args.input])
    if Path(args.input).suffix == ".pt2":  # torch.export.save: rlx and its weights
        from xdsl_ane.frontend.torch import from_torch

        imported = from_torch(args.input)
        module, weights = imported.module, imported.weights
        for note in imported.notes:
            print(f"xdsl-ane: note: {note}", file=sys.stderr)
    else:
        module, weights = read_mil_file(args.input)
    text = str(module) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        if weights:
            print(
                f"xdsl-ane: note: {counted(len(weights), 'weight')} not written; use -o "
                "to write them next to the .mlir",
                file=sys.stderr,
            )
        return 0
    # Both files are written beside their paths and moved into place together.
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(atomic_output(output))
        tmp.write_text(text)
        if weights:
            tmp_weights = stack.enter_context(atomic_output(weights_path))
            with open(tmp_weights, "wb") as f:
                np.savez(f, **weights)
    note = (
        f" and {counted(len(weights), 'weight')} to {weights_path}" if weights else ""
    )
    print(f"wrote {output}{note}")
    return 0


def command_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from xdsl_ane.api.llm import split_record
    from xdsl_ane.api.run import run
    from xdsl_ane.outputs import check_outputs, save_npz
    from xdsl_ane.weights.arrays import load_arrays

    if args.random is not None and args.random < 0:
        raise XdslAneError(f"--random {args.random}: the seed must be at least 0")
    if args.force and not args.output:
        raise XdslAneError("--force: applies only with --output (-o)")
    if args.output:  # before the work, not after it
        check_outputs(
            [args.output], args.force, [args.input, args.inputs, args.weights]
        )
    path = Path(args.input)
    if split_record(path) is not None:
        raise XdslAneError(
            f"{path}: stateful package (a compile-llm model split into "
            "packages): use xdsl-ane generate"
        )
    arrays = load_arrays(args.inputs, "inputs") if args.inputs is not None else None
    weights = load_arrays(args.weights, "weights") if args.weights else {}
    name, results = run(
        args.input,
        args.function,
        arrays=arrays,
        seed=args.random,
        weights=weights,
        layout=args.layout,
        pipeline=args.pipeline,
        source=str(args.inputs),
    )
    outputs = {f"out{i}": r for i, r in enumerate(results)}
    if args.output:
        save_npz(args.output, outputs)
        print(f"wrote {counted(len(outputs), 'output')} of @{name} to {args.output}")
    else:
        for key, value in outputs.items():
            print(summarize(key, value))
    return 0


def summarize(key: str, value: np.ndarray) -> str:
    """`out0: [1, 256, 1024] float32 mean=... std=... min=... max=...`."""
    shape = list(value.shape)
    if value.size == 0:
        return f"{key}: {shape} {value.dtype} (empty)"
    v = value.astype(np.float64)
    return (
        f"{key}: {shape} {value.dtype} mean={v.mean():.6g} std={v.std():.6g} "
        f"min={v.min():.6g} max={v.max():.6g}"
    )


@contextlib.contextmanager
def quiet_numerics() -> Iterator[None]:
    """No numpy floating-point warning reaches the user: fp16 arithmetic
    that overflows in the interpreter is the program's, not a fault of the
    command, and what the compiler refuses it says in its own line."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


class Terminated(KeyboardInterrupt):
    """SIGTERM (what `timeout`, `kill` and a cancelled CI job send), raised
    in the main thread like Ctrl-C's KeyboardInterrupt, so that every
    `finally` removes what the command staged."""


@contextlib.contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may take a signal
        return

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with terminated_as_interrupt(), quiet_numerics(), command_line():
            return args.handler(args)
    except XdslAneError as e:
        print(f"xdsl-ane: error: {e}", file=sys.stderr)
        return 1
    except Terminated:
        print("xdsl-ane: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("xdsl-ane: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        source = getattr(args, "input", None) or getattr(args, "model", args.command)
        print(f"xdsl-ane: error: {source}: out of memory", file=sys.stderr)
        return 1
    except Exception as e:  # a bug; still one line, no traceback
        print(f"xdsl-ane: error: {internal_error(args.command, e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
