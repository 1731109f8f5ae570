"""`make demo`: build the Qwen3-0.6B attention block in rlx, verify it, run it
with the numpy interpreter on random inputs and seeded random weights, and
print what came out.

    python -m xdsl_ane.models.demo [--out DIR] [--seed N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func

from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.models.transformer import QWEN3_0_6B, build_attention_block, make_weights
from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass
from xdsl_ane.tools.common import XdslAneError, atomic_output, save_npz


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
        f"Qwen3-0.6B attention block: hidden {config.hidden_size}, "
        f"{config.num_heads} query / {config.num_kv_heads} key-value heads of "
        f"{config.head_dim}, sequence {config.seq_len}"
    )
    start = time.perf_counter()
    module = build_attention_block(config)
    module.verify()
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    counts = Counter(op.name for op in function.walk() if op is not function)
    counts.pop("func.return", None)
    print(
        f"built and verified {sum(counts.values())} rlx ops in "
        f"{time.perf_counter() - start:.2f} s:"
    )
    for name, n in sorted(counts.items()):
        print(f"  {n:3d} × {name}")

    mlir_path = out / "qwen3_attention_block.mlir"
    with atomic_output(mlir_path) as tmp:
        tmp.write_text(str(module) + "\n")
    weights = make_weights(module, config, seed)
    weights_path = out / "qwen3_attention_block.weights.npz"
    save_npz(weights_path, weights)
    n_weights = sum(w.size for w in weights.values())
    print(
        f"wrote {mlir_path} and {weights_path} ({len(weights)} tensors, "
        f"{n_weights:,} values, seed {seed})"
    )

    inputs = random_inputs(function, seed)
    start = time.perf_counter()
    (y,) = run_function(module, inputs, weights)
    elapsed = time.perf_counter() - start
    x = inputs[0]
    print(f"interpreted @{function.sym_name.data} in {elapsed:.2f} s")
    print(f"  input  arg0: {list(x.shape)} {x.dtype}")
    print(
        f"  output out0: {list(y.shape)} {y.dtype}  checksum sum={float(y.sum(dtype=np.float64)):.6f} "
        f"mean|y|={float(np.abs(y).mean()):.6f}"
    )
    print(
        f"  finite: {bool(np.isfinite(y).all())}; max |y - x| = "
        f"{float(np.abs(y - x).max()):.6f} (the attention residual)"
    )

    lowered = module.clone()
    start = time.perf_counter()
    ConvertRlxToMilPass().apply(Context(), lowered)
    lowered.verify()
    lower_time = time.perf_counter() - start
    mil_counts = Counter(op.name for op in lowered.walk() if op.name.startswith("mil."))
    (y_mil,) = run_function(lowered, inputs, weights)
    print(
        f"convert-rlx-to-mil: {sum(mil_counts.values())} mil ops "
        f"({mil_counts['mil.const']} consts) in {lower_time:.2f} s; the mil "
        f"program agrees with rlx to max |Δ| = {float(np.abs(y_mil - y).max()):.3g}"
    )
    print(
        f"reproduce: xdsl-ane run {mlir_path} --weights {weights_path} --random {seed}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
