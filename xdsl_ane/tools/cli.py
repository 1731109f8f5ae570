"""The `xdsl-ane` command.

    xdsl-ane run IN.mlir [-p PIPELINE] [--function NAME] [--weights W.npz]
                 (--inputs X.npz | --random SEED) [--output Y.npz]

Every failure ends in one line `xdsl-ane: error: ...` on stderr naming the
file, op or value, and exit status 1; no traceback, no partial output file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from xdsl_ane.tools.common import XdslAneError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xdsl-ane",
        description="Compile rlx/mil programs for Apple's Neural Engine, and run "
        "them with the numpy interpreter.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run",
        help="apply passes, then interpret a function with numpy",
        description="Applies the passes of -p, then interprets one function of "
        "IN.mlir. Inputs are keyed arg0, arg1, ... in argument order; outputs "
        "out0, out1, ...",
    )
    run.add_argument("input", help="the .mlir file")
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
        "--output", help="write outputs to this .npz (keys out0, out1, ...)"
    )
    run.set_defaults(handler=command_run)
    return parser


def command_run(args: argparse.Namespace) -> int:
    from xdsl_ane.interpreter.core import (
        InterpretationError,
        find_function,
        random_inputs,
        run_function,
    )
    from xdsl_ane.tools.common import (
        apply_pipeline,
        load_arrays,
        make_context,
        parse_module,
        save_npz,
    )

    ctx = make_context()
    module = parse_module(args.input, ctx)
    apply_pipeline(module, args.pipeline, ctx)
    try:
        function = find_function(module, args.function)
        name = function.sym_name.data
        if args.inputs is not None:
            arrays = load_arrays(args.inputs, "inputs")
            n = len(function.function_type.inputs.data)
            missing = [f"arg{i}" for i in range(n) if f"arg{i}" not in arrays]
            if missing:
                raise XdslAneError(
                    f"{args.inputs}: no array {', '.join(missing)} for @{name} "
                    f"(it takes {n} arguments, keyed arg0..arg{n - 1})"
                )
            inputs = [arrays[f"arg{i}"] for i in range(n)]
        else:
            inputs = random_inputs(function, args.random)
        weights = load_arrays(args.weights, "weights") if args.weights else {}
        results = run_function(module, inputs, weights, name)
    except InterpretationError as e:
        raise XdslAneError(f"{args.input}: {e}") from None
    outputs = {f"out{i}": r for i, r in enumerate(results)}
    if args.output:
        save_npz(args.output, outputs)
        print(f"wrote {len(outputs)} outputs of @{name} to {args.output}")
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except XdslAneError as e:
        print(f"xdsl-ane: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("xdsl-ane: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("xdsl-ane: error: out of memory", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
