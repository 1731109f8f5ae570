"""K-means alone: our palettization against coremltools' exact 1-D k-means
called directly, group by group, on the weights `compression.py` compresses.

    python -m bench.kmeans [--modes lut4:per-grouped-channel:16,...] [--repeats 2]
                           [--output FILE.json]

Why it is measured: coremltools ships an exact k-means in one dimension
(`kmeans1d`, bundled as `coremltools._deps.kmeans1d`), which its
`palettize_weights` calls once per group through
`_get_kmeans_lookup_table_and_weight`. Ours (`passes/compression/kmeans.py`)
is a vectorised search over all groups at once. It stays only if it is
faster than that exact k-means run in parallel over the groups, at no worse
an error: this section is the evidence.

The weights: the projections of a Qwen3-0.6B-shaped decoder layer
(`make_weights`, seed 0) in fp16, each viewed as `compress_lut` views it
(a row per group of output channels, or the whole tensor per-tensor).
The sides, each in a process of its own and timed the same way (the
fastest of `--repeats` runs):

- `ours`: `palettize(groups, nbits, float16)` on each weight;
- `coremltools`: `_get_kmeans_lookup_table_and_weight(nbits, group,
  force_kmeans1d=True)` on every group, the LUT cast to fp16 as
  `palettize_weights` casts it, over a pool of one process per core
  (started, and given the weights, before the clock).

The error of both: ‖ŵ − w‖ / ‖w‖ over all the weights, ŵ the fp16 LUT's
entries at the indices.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import report
from bench.common import REPEAT_UNDER_S, BenchError, run_child

MODES = (
    "lut4:per-tensor",
    "lut4:per-grouped-channel:16",
    "lut6:per-grouped-channel:16",
    "lut8:per-grouped-channel:16",
)
SIDES = ("ours", "coremltools")
LAYERS = 1
SEQ_LEN = 64


def weight_groups(spec: str) -> tuple[list[np.ndarray], int]:
    """Each projection weight of the layer in fp16 as [G, n] groups, and the
    mode's bits."""
    from xdsl_ane.models.transformer import (
        QWEN3_0_6B,
        build_decoder_stack,
        make_weights,
    )
    from xdsl_ane.passes.compress_weights import CompressionSetting

    setting = CompressionSetting.parse(spec)
    if not setting.mode.startswith("lut"):
        raise BenchError(f"{spec}: not a palettization mode")
    config = QWEN3_0_6B.with_(seq_len=SEQ_LEN)
    weights = make_weights(build_decoder_stack(config, LAYERS), config, 0)
    groups = []
    for name, w in weights.items():
        if not name.endswith("_proj.weight"):
            continue
        rows = 1 if setting.granularity == "per-tensor" else w.shape[0] // setting.group
        groups.append(np.ascontiguousarray(w.astype(np.float16)).reshape(rows, -1))
    return groups, setting.bits


def squared_error(groups: np.ndarray, lut: np.ndarray, indices: np.ndarray) -> float:
    """Σ (w − lut[g, indices])² over every group, in float64."""
    decoded = np.take_along_axis(lut.astype(np.float64), indices.astype(np.int64), 1)
    return float(np.sum((decoded - groups.astype(np.float64)) ** 2))


def run_ours(groups: list[np.ndarray], bits: int) -> tuple[float, float]:
    from xdsl_ane.passes.compression import palettize

    start = time.perf_counter()
    results = [palettize(g, bits, np.float16) for g in groups]
    elapsed = time.perf_counter() - start
    error = sum(squared_error(g, r.lut, r.indices) for g, r in zip(groups, results))
    return elapsed, error


_GROUPS: list[np.ndarray] = []
"""The weights, inherited by the pool's forked workers."""


def _kmeans1d_group(task: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    from coremltools.models.neural_network.quantization_utils import (
        _get_kmeans_lookup_table_and_weight,
    )

    weight, row, bits = task
    group = _GROUPS[weight][row]
    lut, indices = _get_kmeans_lookup_table_and_weight(bits, group, force_kmeans1d=True)
    return lut.astype(group.dtype), indices.astype(np.uint8)


def _warm(_: int) -> int:
    import coremltools.models.neural_network.quantization_utils  # noqa: F401

    return os.getpid()


def run_coremltools(groups: list[np.ndarray], bits: int, pool) -> tuple[float, float]:
    tasks = [(w, r, bits) for w, g in enumerate(groups) for r in range(g.shape[0])]
    start = time.perf_counter()
    done = pool.map(_kmeans1d_group, tasks, chunksize=max(1, len(tasks) // 64))
    elapsed = time.perf_counter() - start
    error = 0.0
    for (w, r, _), (lut, indices) in zip(tasks, done):
        error += squared_error(groups[w][r : r + 1], lut[None], indices[None])
    return elapsed, error


def measure_case(side: str, spec: str, repeats: int) -> dict[str, Any]:
    """One side on one mode: the fastest of `repeats` runs (one where a
    run takes over REPEAT_UNDER_S) and the error."""
    global _GROUPS
    groups, bits = weight_groups(spec)
    norm = sum(float(np.sum(g.astype(np.float64) ** 2)) for g in groups)
    pool = None
    if side == "coremltools":
        import multiprocessing

        _GROUPS = groups
        processes = os.cpu_count() or 1
        pool = multiprocessing.get_context("fork").Pool(processes)
        pool.map(_warm, range(processes))
    runs, error = [], 0.0
    try:
        for _ in range(repeats):
            if pool is None:
                elapsed, error = run_ours(groups, bits)
            else:
                elapsed, error = run_coremltools(groups, bits, pool)
            runs.append(round(elapsed, 3))
            if elapsed > REPEAT_UNDER_S:  # (warm-up is noise at minutes)
                break
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return {
        "best_s": min(runs),
        "runs_s": runs,
        "relative_error": round((error / norm) ** 0.5, 9),
        "groups": sum(g.shape[0] for g in groups),
        "values": sum(g.size for g in groups),
        "processes": 1 if pool is None else os.cpu_count(),
    }


def measure_kmeans(
    modes: tuple[str, ...] = MODES, repeats: int = 2, scratch: Path | None = None
) -> dict[str, Any]:
    """Each mode, each side in a child process."""
    import tempfile

    result: dict[str, Any] = {
        "model": f"Qwen3-0.6B-shaped decoder stack, {LAYERS} layer(s): the 7 "
        "projection weights in fp16",
        "repeats": repeats,
        "cores": os.cpu_count(),
        "modes": {},
    }
    with tempfile.TemporaryDirectory(prefix="xdsl-ane-kmeans-", dir=scratch) as tmp:
        for spec in modes:
            entry = {}
            for side in SIDES:
                print(f"kmeans: {spec}, {side} ...", flush=True)
                entry[side] = run_child(
                    "kmeans",
                    ["--case", side, "--modes", spec, "--repeats", str(repeats)],
                    Path(tmp),
                    f"kmeans {spec} {side}",
                )
            ours, theirs = entry["ours"], entry["coremltools"]
            entry["speedup_vs_coremltools"] = round(
                theirs["best_s"] / ours["best_s"], 2
            )
            entry["error_ratio_vs_coremltools"] = round(
                ours["relative_error"] / theirs["relative_error"], 8
            )
            result["modes"][spec] = entry
            print(f"  {spec}: {json.dumps(entry)}", file=sys.stderr, flush=True)
    result["ours_kept"] = all(
        e["speedup_vs_coremltools"] > 1 and e["error_ratio_vs_coremltools"] <= 1.0001
        for e in result["modes"].values()
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output", type=Path, help="instead of results.json")
    parser.add_argument("--case", choices=SIDES)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    if args.case:
        result = measure_case(args.case, args.modes, args.repeats)
        args.output.write_text(json.dumps(result, indent=2) + "\n")
        return 0
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    result = measure_kmeans(tuple(args.modes.split(",")), args.repeats, args.workdir)
    print(report.kmeans_table(result))
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n")
    else:
        report.store_section("kmeans", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
