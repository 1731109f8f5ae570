"""`python -m bench.pymil [--layers 4] [--reps 3] [--output FILE.json]`:
`export` and `coverage`, each in a child process, stored under
`pymil_writer` in bench/results.json (or written to `--output`)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import report
from bench.common import run_child


def measure_pymil_writer(layers: int, reps: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="xdsl-ane-pymil-") as scratch:
        print(f"pymil writer: export, {layers} layers ...", flush=True)
        export = run_child(
            "pymil.export",
            ["--layers", str(layers), "--reps", str(reps)],
            Path(scratch),
            "pymil export",
        )
        print("pymil writer: coverage ...", flush=True)
        coverage = run_child("pymil.coverage", [], Path(scratch), "pymil coverage")
    return {"export": export, "coverage": coverage}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--output", type=Path, help="instead of results.json")
    parser.add_argument("--workdir", type=Path, help="unused: scratch is temporary")
    args = parser.parse_args(argv)
    result = measure_pymil_writer(args.layers, args.reps)
    print(report.pymil_writer_table(result))
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n")
    else:
        report.store_section("pymil_writer", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
