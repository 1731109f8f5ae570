"""`make demo`: compile a Qwen3-0.6B decoder layer for the ANE.

Builds the layer in rlx (hidden 1024, 16 query / 8 key-value heads of 128,
QK-norm, RoPE, causal grouped-query attention, SwiGLU FFN 3072, sequence
256) with seeded random weights, runs it with the numpy interpreter,
compiles it with `ane-pipeline` (fp16, `[1, C, 1, S]`, 1×1 convs) to an
`.mlpackage`, validates the package with coremltools' MIL loader, runs the
compiled fp16 program on the same input and prints what it produced.

    python -m xdsl_ane.tools.demo [--out DIR] [--seed N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from xdsl.dialects import func

from xdsl_ane.api import compile as compile_model
from xdsl_ane.errors import XdslAneError
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.models.transformer import QWEN3_0_6B, build_decoder_layer, make_weights
from xdsl_ane.outputs import atomic_output, save_npz
from xdsl_ane.passes.layouts import layout_of


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out", help="directory for the artifacts")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        return run_demo(Path(args.out), args.seed)
    except XdslAneError as e:
        print(f"demo: error: {e}", file=sys.stderr)
        return 1


def run_demo(out: Path, seed: int) -> int:
    config = QWEN3_0_6B
    out.mkdir(parents=True, exist_ok=True)
    print(
        f"Qwen3-0.6B decoder layer: hidden {config.hidden_size}, {config.num_heads} "
        f"query / {config.num_kv_heads} key-value heads of {config.head_dim}, FFN "
        f"{config.ffn_size}, sequence {config.seq_len}"
    )
    start = time.perf_counter()
    module = build_decoder_layer(config)
    module.verify()
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    counts = Counter(op.name for op in function.walk() if op.name.startswith("rlx."))
    print(
        f"built and verified {sum(counts.values())} rlx ops in "
        f"{time.perf_counter() - start:.2f} s: "
        + ", ".join(
            f"{n} {name.removeprefix('rlx.')}" for name, n in sorted(counts.items())
        )
    )
    mlir_path = out / "qwen3_decoder_layer.mlir"
    with atomic_output(mlir_path) as tmp:
        tmp.write_text(str(module) + "\n")
    weights = make_weights(module, config, seed)
    weights_path = out / "qwen3_decoder_layer.weights.npz"
    save_npz(weights_path, weights)
    print(
        f"wrote {mlir_path} and {weights_path} ({len(weights)} tensors, "
        f"{sum(w.size for w in weights.values()):,} values, seed {seed})"
    )

    (x,) = random_inputs(function, seed)
    start = time.perf_counter()
    (y,) = run_function(module, [x], weights)
    print(
        f"interpreted the rlx layer in {time.perf_counter() - start:.2f} s: "
        f"out0 {list(y.shape)} {y.dtype}, checksum {float(y.sum(dtype=np.float64)):.6f}"
    )

    start = time.perf_counter()
    model = compile_model(mlir_path, weights=weights_path)
    compile_time = time.perf_counter() - start
    package = out / "qwen3_decoder_layer.mlpackage"
    report = model.validate()
    if not report.ok:
        raise XdslAneError(f"validation failed: {report.findings[0]}")
    model.save(package, force=True)
    print(f"compiled in {compile_time:.2f} s")
    print(model.summary(package))
    print(
        "  validated: coremltools' MIL loader rebuilt every op; the re-export matches"
    )

    compiled = next(op for op in model.module.walk() if isinstance(op, func.FuncOp))
    layout = layout_of(x.shape)
    start = time.perf_counter()
    (y_ane,) = run_function(
        model.module,
        [layout.to_ane(x).astype(np.float16)],
        weights,
        compiled.sym_name.data,
    )
    y16 = layout_of(y.shape).to_logical(y_ane)
    error = float(np.linalg.norm(y16.astype(np.float64) - y) / np.linalg.norm(y))
    print(
        f"interpreted the compiled fp16 [1, C, 1, S] program in "
        f"{time.perf_counter() - start:.2f} s: {list(y_ane.shape)} {y_ane.dtype}, "
        f"relative error vs the fp32 rlx layer {error:.2e}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
