"""`make bench`: xdsl-ane's op counts and compile times, side by side with
coremltools' `ct.convert` of the same model, written to bench/results.json
and, through `report`, to the generated blocks of bench/README.md and
README.md.

    python -m bench.run [--repeats N] [--layers 4,28] [--no-readme]

Each measurement runs in a process of its own (`bench.measure` for the
Qwen3 stack, each other section's module for its own), so its peak memory
is its own and its memory goes back to the system after it. Timed
measurements run `--repeats` times, interleaved (ours, API, theirs, the
write limit, ours, ...); the tables report the fastest run of each and
results.json keeps every run. Anything that fails stops the bench with a
non-zero exit and leaves the previous results.json and README in place.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.common import (
    RESULTS,
    BenchError,
    best,
    git_state,
    run_child,
    write_results,
)

PACKAGES = ("xdsl-ane", "xdsl", "coremltools", "numpy", "torch", "protobuf")
RATIO_TARGET = 0.5
"""compile_time_ratio_vs_coremltools should be below this."""
WRITE_LIMIT_TARGET = 1.5
"""compile_time_over_write_limit should be at most this."""

SERIES = {
    # task -> the field of a run that ranks it (lowest is reported)
    "ours": "rlx_to_mlpackage_s",
    "api": "total_s",
    "theirs": "total_s",
    "write_limit": "limit_s",
}


# --- running the measurements -------------------------------------------------------


class Runner:
    """Runs the measurements in child processes under one scratch directory,
    printing each one's progress."""

    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.started = time.perf_counter()

    def run(self, task: str, layers: int | None = None) -> dict[str, Any]:
        """A task of `bench.measure`."""
        label = task if layers is None else f"{task} ({layers} layers)"
        arguments = [task] if layers is None else [task, "--layers", str(layers)]
        return self.child("measure", arguments, label)

    def section(self, module: str, *arguments: str) -> dict[str, Any]:
        """A section measured by its own module (which runs its cases in
        children of its own)."""
        return self.child(module, list(arguments), module)

    def child(self, module: str, arguments: list[str], label: str) -> dict[str, Any]:
        start = time.perf_counter()
        print(f"[{self.elapsed()}] {label} ...", flush=True)
        result = run_child(module, arguments, self.scratch, label)
        print(
            f"[{self.elapsed()}] {label}: {time.perf_counter() - start:.1f} s",
            flush=True,
        )
        return result

    def elapsed(self) -> str:
        seconds = int(time.perf_counter() - self.started)
        return f"{seconds // 60:2d}:{seconds % 60:02d}"


def measure_all(
    runner: Runner, layer_counts: list[int], repeats: int
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    results["sce_ops"] = runner.run("sce")
    kernels = runner.run("kernels")
    results["kernel_ops"] = {k: v for k, v in kernels.items() if k != "compile"}
    compile_time: dict[str, Any] = {}
    if kernels["available"]:
        compile_time["training_kernels"] = kernels["compile"]
    else:
        compile_time["training_kernels"] = {
            "available": False,
            "reason": kernels["reason"],
        }
    for layers in layer_counts:
        runs: dict[str, list[dict[str, Any]]] = {task: [] for task in SERIES}
        for _ in range(repeats):
            for task in SERIES:
                runs[task].append(runner.run(task, layers))
        model = {task: best(runs[task], key) for task, key in SERIES.items()}
        model["vs_coremltools"] = versus_coremltools(model)
        model["over_write_limit"] = over_write_limit(model)
        compile_time[f"qwen3_{layers}_layers"] = model
    results["compile_time"] = compile_time
    largest = max(layer_counts)
    results["numerics"] = runner.run("numerics", largest)
    results["torch_frontend"] = runner.section("torch_frontend")  # PyTorch in
    # vision, audio and encoder models, each through both compilers
    results["torch_models"] = runner.section("torch_models")
    # the Qwen3-0.6B package vs coremltools' stateful path
    results["llm"] = runner.section("llm")
    # compile-train and a training step of two checkpoints vs PyTorch's step
    results["train"] = runner.section("train")
    # the new decoders at real size: OLMoE (routed), LFM2, Qwen3.5, dense 3B
    results["decoders"] = runner.section("decoders")
    # W8A8 of ResNet-50 and MobileNetV2 vs coremltools'
    results["w8a8"] = runner.section("w8a8")
    # Whisper base and small: compile-asr, the estimates, coremltools' encoder
    results["asr"] = runner.section("asr")
    # a SmolVLM-shaped vision package vs ct.convert of the same tower
    results["vlm"] = runner.section("vlm")
    # weight compression vs coremltools', and the k-means alone
    results["compression"] = runner.section("compression")
    results["kmeans"] = runner.section("kmeans")
    # our protobuf writer vs coremltools' pymil serialisation
    results["pymil_writer"] = runner.section("pymil", "--reps", str(repeats))
    results["startup"] = runner.section("startup")  # commands and the lit suite
    results.update(comparison(compile_time[f"qwen3_{largest}_layers"], largest))
    return results


def ratio(ours: float, theirs: float) -> float:
    return round(ours / theirs, 3)


def versus_coremltools(model: dict[str, Any]) -> dict[str, float]:
    """Each figure of ours over coremltools' for the same work in the same
    run: compile (`xdsl_ane.compile` / `ct.convert`), save, the total with
    and without tracing, the staged pipeline, ops and memory."""
    api, ours, theirs = model["api"], model["ours"], model["theirs"]
    return {
        "compile_s": ratio(api["compile_s"], theirs["convert_s"]),
        "save_s": ratio(api["save_s"], theirs["save_s"]),
        "total_s": ratio(api["total_s"], theirs["total_s"]),
        "total_with_trace_s": ratio(api["total_s"], theirs["total_with_trace_s"]),
        "staged_total_s": ratio(ours["rlx_to_mlpackage_s"], theirs["total_s"]),
        "ops": ratio(api["ops"], theirs["ops"]),
        "peak_rss_mb": ratio(api["peak_rss_mb"], theirs["peak_rss_mb"]),
        "process_maxrss_mb": ratio(
            api["process_maxrss_mb"], theirs["process_maxrss_mb"]
        ),
    }


def over_write_limit(model: dict[str, Any]) -> dict[str, float]:
    """Each compiler's time to a saved package over the write limit (the
    weights converted to fp16 and written to a file of the blob's size),
    measured in the same run; ours also for the weight blob alone."""
    limit = model["write_limit"]["limit_s"]
    ours = model["ours"]
    return {
        "api_total": ratio(model["api"]["total_s"], limit),
        "staged_total": ratio(ours["rlx_to_mlpackage_s"], limit),
        "write_weights": ratio(ours["write_weights_s"], limit),
        "coremltools_total": ratio(model["theirs"]["total_s"], limit),
    }


def comparison(model: dict[str, Any], layers: int) -> dict[str, Any]:
    """Ours (`xdsl_ane.compile` + `save`: the rlx module in memory to the
    .mlpackage) over theirs (`ct.convert` + `save`: the traced module to the
    .mlpackage), at `layers` layers."""
    ours, api, theirs = model["ours"], model["api"], model["theirs"]
    if api["ops"] != ours["ops"]:
        raise BenchError(
            f"the API gives {api['ops']} ops, the staged pipeline {ours['ops']}"
        )
    vs = api["total_s"] / theirs["total_s"]
    limit = model["write_limit"]
    over_limit = api["total_s"] / limit["limit_s"]
    return {
        "compile_time_ratio_vs_coremltools": round(vs, 3),
        "compile_time_over_write_limit": round(over_limit, 3),
        "write_limit": {
            "layers": layers,
            "limit_s": limit["limit_s"],
            "convert_s": limit["convert_s"],
            "bytes": limit["bytes"],
            "ours_s": api["total_s"],
            "target": WRITE_LIMIT_TARGET,
            "within_target": over_limit <= WRITE_LIMIT_TARGET,
            "coremltools_over_write_limit": ratio(theirs["total_s"], limit["limit_s"]),
        },
        "compile_time_ratio_vs_coremltools_with_trace": round(
            api["total_s"] / theirs["total_with_trace_s"], 3
        ),
        "comparison": {
            "layers": layers,
            "ours_s": api["total_s"],
            "ours_staged_s": ours["rlx_to_mlpackage_s"],
            "coremltools_s": theirs["total_s"],
            "coremltools_with_trace_s": theirs["total_with_trace_s"],
            "staged_ratio": round(ours["rlx_to_mlpackage_s"] / theirs["total_s"], 3),
            "target": RATIO_TARGET,
            "below_target": vs < RATIO_TARGET,
            "ours_ops": api["ops"],
            "coremltools_ops": theirs["ops"],
            "ours_peak_rss_mb": api["peak_rss_mb"],
            "coremltools_peak_rss_mb": theirs["peak_rss_mb"],
        },
    }


# --- the machine -------------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    memory_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            memory_kb = int(line.split()[1])
    os_name = platform.platform()
    release = Path("/etc/os-release")
    if release.exists():
        for line in release.read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip('"')
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(memory_kb / 2**20, 1),
        "os": f"{os_name}, Linux {platform.release()}",
        "python": platform.python_version(),
        "packages": {p: importlib.metadata.version(p) for p in PACKAGES},
        **git_state(),
    }


def check_environment() -> None:
    """coremltools 9.0's torch frontend needs numpy < 2.4."""
    numpy = tuple(int(p) for p in importlib.metadata.version("numpy").split(".")[:2])
    if numpy >= (2, 4):
        raise BenchError(
            f"numpy {numpy}: coremltools' torch frontend needs numpy < 2.4"
        )
    for package in PACKAGES:
        try:
            importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            raise BenchError(
                f"{package} is not installed: run `make bench` (installs .[test,bench])"
            ) from None


# --- writing -------------------------------------------------------------------------


def update_readme(results: dict[str, Any]) -> None:
    """The generated blocks of bench/README.md and README.md, from `results`."""
    try:
        report.write(results)
    except ValueError as e:
        raise BenchError(str(e)) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each timing")
    parser.add_argument("--layers", default="4,28", help="decoder stack depths")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument(
        "--no-readme", action="store_true", help="leave bench/README.md as it is"
    )
    args = parser.parse_args(argv)
    layer_counts = sorted(int(n) for n in args.layers.split(","))
    try:
        check_environment()
        start = time.perf_counter()
        date = datetime.datetime.now(datetime.timezone.utc)
        scratch = Path(tempfile.mkdtemp(prefix="xdsl-ane-bench-"))
        try:
            measured = measure_all(Runner(scratch), layer_counts, args.repeats)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        results = {
            "date": date.isoformat(timespec="seconds"),
            "machine": machine(),
            "settings": {
                "repeats": args.repeats,
                "layers": layer_counts,
                "timings": "fastest of the repeats; runs_s lists every run",
            },
            **measured,
            "bench_wall_s": round(time.perf_counter() - start, 1),
            # every measurement is a child (or its child) that has been
            # waited for, so this is the largest peak of any of them
            "bench_peak_child_rss_mb": round(
                resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1
            ),
        }
        write_results(results, args.output)
        if not args.no_readme:
            update_readme(results)
    except BenchError as e:
        print(f"bench: error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {args.output}" + ("" if args.no_readme else " and the docs"))
    print(
        f"compile_time_ratio_vs_coremltools = "
        f"{results['compile_time_ratio_vs_coremltools']} (target < {RATIO_TARGET}), "
        f"compile_time_over_write_limit = "
        f"{results['compile_time_over_write_limit']} "
        f"(target <= {WRITE_LIMIT_TARGET}; {results['bench_wall_s']:.0f} s in all)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
