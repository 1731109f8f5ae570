"""Weight compression, side by side: each mode of `mil-compress-weights` and
coremltools' `palettize_weights` / `linear_quantize_weights` (same mode,
same granularity) on the same weights of a Qwen3-0.6B-shaped decoder stack
(seeded random weights, N(0, 0.02²) projections).

    python -m bench.compression [--layers 1] [--modes lut4,int8:per-channel,...]
                                [--repeats 2] [--output FILE.json]

Ours is timed as the pass itself (`compress_module` on the compiled fp16
module, k-means included) and as the whole compile with `--compress`;
coremltools' as its optimize call on the same fp16 model (loaded with
`skip_model_load`), restricted to the weights of convs (`op_type_configs`)
so that both compress the same tensors. The pass and coremltools' call are
both the fastest of `--repeats` runs (the first pays warm-up; a call of
coremltools' over REPEAT_UNDER_S is run once); the k-means
alone is `bench.kmeans`. The errors of both are measured the
same way: each package is loaded with coremltools' milproto loader, every
constexpr op feeding a conv is decompressed by coremltools
(`materialized_val_inference`) and compared with the fp16 weight:
‖ŵ − w‖ / ‖w‖ over all of them. Package sizes are the saved .mlpackage.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.common import REPEAT_UNDER_S

MODES = (
    "int8:per-channel",
    "int4:per-block:32",
    "lut4:per-tensor",
    "lut4:per-grouped-channel:16",
    "lut6:per-grouped-channel:16",
)
"""The modes compared by default. lut8 is left to the k-means section
(`bench.kmeans`), where its k-means, nearly all of both sides' time, is
compared directly: coremltools' `palettize_weights` takes six minutes
on it here, what would keep `make bench` past its budget; `--modes`
runs it."""
SEQ_LEN = 64
"""The model's sequence length (weights do not depend on it; the output
error's interpretation does)."""


def coremltools_config(spec: str):
    """coremltools' optimize function and op config for one of our modes."""
    import coremltools.optimize.coreml as cto

    from xdsl_ane.passes.compress_weights import CompressionSetting

    setting = CompressionSetting.parse(spec)
    granularity = setting.granularity.replace("-", "_")
    if setting.mode.startswith("lut"):
        extra = {"group_size": setting.group} if setting.group else {}
        config = cto.OpPalettizerConfig(
            mode="kmeans", nbits=setting.bits, granularity=granularity, **extra
        )
        return cto.palettize_weights, config
    extra = {"block_size": setting.group} if granularity == "per_block" else {}
    config = cto.OpLinearQuantizerConfig(
        mode="linear_symmetric", dtype=setting.mode, granularity=granularity, **extra
    )
    return cto.linear_quantize_weights, config


def package_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def conv_weights(package: Path) -> dict[str, Any]:
    """Each conv's weight (by the conv's name, which coremltools keeps), as
    coremltools decompresses it: a const's value, or a constexpr op's
    materialized value."""
    import coremltools as ct
    from coremltools.converters.mil.frontend.milproto.load import load

    model = ct.models.MLModel(str(package), skip_model_load=True)
    program = load(
        model.get_spec(), specification_version=9, file_weights_dir=model.weights_dir
    )
    weights = {}
    for op in program.functions["main"].operations:
        if op.op_type != "conv":
            continue
        source = op.weight.op
        if source.op_type == "const":
            weights[op.outputs[0].name] = op.weight.val
        elif source.op_type.startswith("constexpr_"):
            weights[op.outputs[0].name] = source.materialized_val_inference()
    return weights


def relative_error(compressed: dict[str, Any], fp16: dict[str, Any]) -> float:
    import numpy as np

    if set(compressed) != set(fp16):
        raise RuntimeError(
            f"the compressed model's conv weights {sorted(compressed)[:3]}... are "
            f"not the fp16 model's {sorted(fp16)[:3]}..."
        )
    error = norm = 0.0
    for name, w in fp16.items():
        w = w.astype(np.float64)
        error += float(np.sum((compressed[name].astype(np.float64) - w) ** 2))
        norm += float(np.sum(w**2))
    return (error / norm) ** 0.5


def measure_compression(
    layers: int = 1, modes: tuple[str, ...] = MODES, repeats: int = 2
) -> dict[str, Any]:
    """Every mode, ours and coremltools', on one decoder stack."""
    import warnings

    warnings.simplefilter("ignore")
    import coremltools as ct

    import xdsl_ane
    from xdsl_ane.models.transformer import (
        QWEN3_0_6B,
        build_decoder_stack,
        make_weights,
    )
    from xdsl_ane.passes.compress_weights import (
        MilCompressWeightsPass,
        compress_module,
    )

    config = QWEN3_0_6B.with_(seq_len=SEQ_LEN)
    module = build_decoder_stack(config, layers)
    weights = make_weights(module, config, 0)
    scratch = Path(tempfile.mkdtemp(prefix="xdsl-ane-compression-"))
    try:
        fp16 = xdsl_ane.compile(module, weights=weights)
        fp16.save(scratch / "fp16.mlpackage")
        originals = conv_weights(scratch / "fp16.mlpackage")
        base = ct.models.MLModel(str(scratch / "fp16.mlpackage"), skip_model_load=True)
        results: dict[str, Any] = {
            "model": f"Qwen3-0.6B-shaped decoder stack, {layers} layer(s)",
            "weights": len(originals),
            "parameters": sum(int(w.size) for w in originals.values()),
            "fp16_package_bytes": package_bytes(scratch / "fp16.mlpackage"),
            "repeats": repeats,
            "modes": {},
        }
        for spec in modes:
            name = spec.replace(":", "_")
            setting = MilCompressWeightsPass(
                *_pass_arguments(spec)
            )  # the pass alone, on the compiled fp16 module
            pass_s = float("inf")
            for _ in range(repeats):
                target = fp16.module.clone()
                start = time.perf_counter()
                compress_module(target, setting.plan(), dict(fp16.weights))
                pass_s = min(pass_s, time.perf_counter() - start)
            start = time.perf_counter()
            ours = xdsl_ane.compile(module, weights=weights, compress=spec)
            ours.save(scratch / f"{name}.mlpackage")
            compile_s = time.perf_counter() - start
            output_error = ours.compression_output_error()
            optimize, op_config = coremltools_config(spec)
            theirs_s, theirs_runs = float("inf"), 0
            for _ in range(repeats):
                theirs_runs += 1
                start = time.perf_counter()
                theirs = optimize(
                    base,
                    ct.optimize.coreml.OptimizationConfig(
                        op_type_configs={"conv": op_config}
                    ),
                )
                theirs_s = min(theirs_s, time.perf_counter() - start)
                if theirs_s > REPEAT_UNDER_S:  # (warm-up is noise at minutes)
                    break
            theirs.save(str(scratch / f"{name}.coremltools.mlpackage"))
            ours_error = relative_error(
                conv_weights(scratch / f"{name}.mlpackage"), originals
            )
            theirs_error = relative_error(
                conv_weights(scratch / f"{name}.coremltools.mlpackage"), originals
            )
            entry = {
                "ours_pass_s": round(pass_s, 3),
                "ours_compile_and_save_s": round(compile_s, 3),
                "coremltools_s": round(theirs_s, 3),
                "coremltools_runs": theirs_runs,
                "speedup_vs_coremltools": round(theirs_s / pass_s, 2),
                "ours_relative_error": round(ours_error, 9),
                "coremltools_relative_error": round(theirs_error, 9),
                "error_ratio_vs_coremltools": round(ours_error / theirs_error, 8),
                "ours_package_bytes": package_bytes(scratch / f"{name}.mlpackage"),
                "coremltools_package_bytes": package_bytes(
                    scratch / f"{name}.coremltools.mlpackage"
                ),
                "ours_output_error": output_error,
            }
            results["modes"][spec] = entry
            print(f"  {spec}: {json.dumps(entry)}", file=sys.stderr, flush=True)
        return results
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _pass_arguments(spec: str) -> tuple[str, str, int]:
    from xdsl_ane.passes.compress_weights import CompressionSetting

    setting = CompressionSetting.parse(spec)
    return setting.mode, setting.granularity, setting.group


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output", type=Path, help="instead of results.json")
    parser.add_argument("--workdir", type=Path, help="unused: scratch is temporary")
    args = parser.parse_args(argv)
    results = measure_compression(
        args.layers, tuple(args.modes.split(",")), args.repeats
    )
    print(report.compression_table(results))
    if args.output:
        args.output.write_text(json.dumps(results, indent=2) + "\n")
    else:
        report.store_section("compression", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
