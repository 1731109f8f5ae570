"""Start-up: the wall time of the commands that start xdsl-ane, next to a
bare import of xDSL's own `xdsl-opt`, and the time of the lit suite, whose
every RUN line starts `xdsl-opt` or `xdsl-ane` afresh.

    python -m bench.startup [--repeats 5] [--no-lit] [--output FILE.json]

The commands (`COMMANDS`) run `--repeats` times, interleaved, each in a
fresh process with its output discarded; the fastest run of each is
reported, and its ratio to the fastest bare import (`python -c "import
xdsl.xdsl_opt_main"`). The lit suite (`lit -q tests/filecheck`) runs once;
its wall time depends on what else the machine runs, so the CPU time of
its processes (user + system, all of them) is recorded as well.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.common import ROOT

BIN = Path(sys.executable).parent

PROGRAM = """\
func.func @f(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %w = rlx.param "w" : tensor<64x64xf32>
  %y = rlx.matmul %x, %w {transpose_rhs = true} : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %z = rlx.gelu %y : tensor<16x64xf32>
  func.return %z : tensor<16x64xf32>
}
"""
"""The input of the lit-like command: one matmul and one GELU."""

TARGET = 1.5
"""`xdsl-ane --help` and `xdsl-opt --help` should take at most this many
times the bare import."""


def commands(program: Path) -> dict[str, list[str]]:
    python = sys.executable
    return {
        "bare_xdsl_import": [python, "-c", "import xdsl.xdsl_opt_main"],
        "import_xdsl_ane": [python, "-c", "import xdsl_ane"],
        "xdsl_ane_help": [str(BIN / "xdsl-ane"), "--help"],
        "xdsl_opt_help": [str(BIN / "xdsl-opt"), "--help"],
        "xdsl_opt_lower_to_mil_text": [
            str(BIN / "xdsl-opt"),
            str(program),
            "-p",
            "convert-rlx-to-mil",
            "-t",
            "mil-text",
        ],
    }


def wall_time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        cwd=ROOT,
    )
    return time.perf_counter() - start


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure_lit() -> dict[str, Any]:
    """One run of the lit suite: wall and CPU time, and the tests' count."""
    cpu = children_cpu_s()
    start = time.perf_counter()
    done = subprocess.run(
        [str(BIN / "lit"), "-q", "-s", "tests/filecheck"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"},
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"lit failed:\n{done.stdout[-4000:]}{done.stderr[-4000:]}")
    tests = None
    for line in done.stdout.splitlines():
        if line.strip().startswith("Total Discovered Tests:"):
            tests = int(line.split(":", 1)[1])
    return {
        "tests": tests,
        "wall_s": round(wall, 2),
        "cpu_s": round(children_cpu_s() - cpu, 2),
        "jobs": os.cpu_count(),
    }


def measure_startup(repeats: int = 5, lit: bool = True) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="xdsl-ane-startup-") as scratch:
        program = Path(scratch) / "in.mlir"
        program.write_text(PROGRAM)
        todo = commands(program)
        for command in todo.values():  # once untimed: compiled bytecode on disk
            wall_time(command)
        runs: dict[str, list[float]] = {name: [] for name in todo}
        for _ in range(repeats):
            for name, command in todo.items():
                runs[name].append(round(wall_time(command), 4))
    bare = min(runs["bare_xdsl_import"])
    results: dict[str, Any] = {
        "repeats": repeats,
        "commands": {
            name: {
                "command": shlex.join(Path(a).name if "/" in a else a for a in cmd),
                "best_s": min(runs[name]),
                "runs_s": runs[name],
                "over_bare_xdsl_import": round(min(runs[name]) / bare, 2),
            }
            for name, cmd in commands(Path("IN.mlir")).items()
        },
        "target": TARGET,
    }
    results["within_target"] = all(
        results["commands"][name]["over_bare_xdsl_import"] <= TARGET
        for name in ("xdsl_ane_help", "xdsl_opt_help")
    )
    if lit:
        results["lit"] = measure_lit()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-lit", action="store_true", help="skip the lit suite")
    parser.add_argument("--output", type=Path, help="instead of results.json")
    parser.add_argument("--workdir", type=Path, help="unused: scratch is temporary")
    args = parser.parse_args(argv)
    results = measure_startup(args.repeats, lit=not args.no_lit)
    print(report.startup_table(results))
    if args.output:
        args.output.write_text(json.dumps(results, indent=2) + "\n")
    else:
        report.store_section("startup", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
