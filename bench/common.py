"""What every measurement of the bench shares: the results store, the
child-process runner, markdown tables, resident memory and op counting.

The modules of `bench` import this one and nothing above it (`report`
imports it, the measurement modules import both, `run` imports them all;
tests/test_bench_package.py checks that no import goes the other way), so
the package has no import cycle.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results.json"
"""The one results file: every section of the bench, and the docs' figures."""


class BenchError(Exception):
    """A measurement failed; the bench stops and leaves results.json as it was."""


# --- the results store -------------------------------------------------------------


def write_atomically(path: Path, text: str) -> None:
    """`text` into `path` through a temporary file renamed over it, so that a
    reader never sees half of it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def read_results(path: Path = RESULTS) -> dict[str, Any]:
    return json.loads(path.read_text())


def write_results(results: dict[str, Any], path: Path = RESULTS) -> None:
    write_atomically(path, json.dumps(results, indent=2) + "\n")


def with_section(name: str, section: dict[str, Any]) -> dict[str, Any]:
    """bench/results.json with `section` under `name` (the rest kept),
    written atomically; the results as written."""
    results = read_results()
    results[name] = section
    write_results(results)
    return results


# --- child processes ---------------------------------------------------------------


class ChildFailed(BenchError):
    def __init__(self, label: str, returncode: int, log: str):
        lines = [line for line in log.splitlines() if line.strip()]
        self.last_line = lines[-1] if lines else f"exit {returncode}"
        super().__init__(f"{label}: exited with {returncode}")


REPEAT_UNDER_S = 30.0
"""A timing is repeated (`--repeats`) only while its runs take less: the
lut8 k-means runs take minutes, where warming up is noise and a second run
costs the bench minutes more."""


def memory_total_mb() -> float:
    """This machine's memory (MemTotal of /proc/meminfo), in MiB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024
    raise BenchError("/proc/meminfo has no MemTotal")


def resident_mb(pid: int) -> float:
    """The resident memory of process `pid` now (VmRSS), in MiB; 0 once gone."""
    try:
        return proc_status_mb("VmRSS", pid)
    except (OSError, RuntimeError):
        return 0.0


def watch(child: subprocess.Popen, rss_limit_mb: float | None) -> float | None:
    """Waits for `child`; with `rss_limit_mb`, kills it once its resident
    memory passes the limit (sampled every 0.2 s) and returns the RSS it
    had then, so that a measurement that would exhaust the machine fails
    with a figure instead of taking the machine down."""
    if rss_limit_mb is None:
        child.wait()
        return None
    while child.poll() is None:
        rss = resident_mb(child.pid)
        if rss > rss_limit_mb:
            child.kill()
            child.wait()
            return rss
        time.sleep(0.2)
    return None


def run_child(
    module: str,
    arguments: list[str],
    scratch: Path,
    label: str | None = None,
    rss_limit_mb: float | None = None,
) -> dict[str, Any]:
    """The JSON that `python -m bench.MODULE ARGUMENTS --workdir W --output O`
    writes to O, run in a child process.

    A child of its own, so that a measurement's peak memory is its own and
    goes back to the system after it; W lies in a directory of `scratch`
    removed after it. On failure the last 40 lines of its log go to stderr
    and `ChildFailed` is raised, so that the bench stops; a child whose
    RSS passes `rss_limit_mb` is killed and fails with a last line giving
    the RSS it reached and the last line it had logged (what it was
    doing)."""
    label = label or module
    job = Path(tempfile.mkdtemp(prefix=f"{module.replace('.', '-')}-", dir=scratch))
    output, log = job / "result.json", job / "log.txt"
    (job / "work").mkdir()
    command = [sys.executable, "-m", f"bench.{module}", *arguments]
    command += ["--workdir", str(job / "work"), "--output", str(output)]
    with log.open("w") as stream:
        child = subprocess.Popen(
            command, stdout=stream, stderr=subprocess.STDOUT, cwd=ROOT
        )
        killed_at = watch(child, rss_limit_mb)
    try:
        if killed_at is not None:
            lines = [x for x in log.read_text(errors="replace").splitlines() if x]
            doing = f" while {lines[-1]}" if lines else ""
            raise ChildFailed(
                label,
                -9,
                f"killed at {killed_at / 1024:.1f} GB RSS (the limit: "
                f"{rss_limit_mb / 1024:.1f} GB of this machine's "
                f"{memory_total_mb() / 1024:.1f} GB){doing}",
            )
        returncode = child.returncode
        if returncode != 0:
            text = log.read_text(errors="replace")
            print("\n".join(text.splitlines()[-40:]), file=sys.stderr)
            raise ChildFailed(label, returncode, text)
        return json.loads(output.read_text())
    finally:
        shutil.rmtree(job, ignore_errors=True)


def best(runs: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The fastest run by `key`, with every run's `key` and the highest peaks.

    How every side of every comparison is reported, so that ours and
    coremltools' are chosen the same way: `runs_s` keeps every run, and each
    peak RSS is the highest over the runs (a peak is not a timing)."""
    fastest = dict(min(runs, key=lambda r: r[key]))
    fastest["runs_s"] = [r[key] for r in runs]
    for field in fastest:
        if field.endswith("rss_mb") and field != "rss_before_mb":
            fastest[field] = max(r[field] for r in runs)
    return fastest


def git(*args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def git_state() -> dict[str, Any]:
    """The commit measured and whether tracked files were modified."""
    return {
        "git_commit": git("rev-parse", "--short", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
    }


# --- tables ------------------------------------------------------------------------

NONE = "–"


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def seconds(value: float | None) -> str:
    if value is None:
        return NONE
    return f"{value:.3f}" if value < 10 else f"{value:.2f}"


# --- resident memory ---------------------------------------------------------------


def proc_status_mb(key: str, pid: int | str = "self") -> float:
    """A `VmRSS`/`VmHWM` line of /proc/PID/status, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/{pid}/status has no {key}")


def maxrss_mb() -> float:
    """The process' peak RSS over its whole life (`ru_maxrss`), in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Region:
    """A measured region: wall time per stage and the peak RSS."""

    def __init__(self) -> None:
        self.stages: dict[str, float] = {}
        self.rss_before_mb = 0.0
        self.peak_rss_mb = 0.0

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.stages[name] = self.stages.get(name, 0.0) + time.perf_counter() - start

    def total(self, *names: str) -> float:
        return sum(self.stages[n] for n in names)


@contextmanager
def region() -> Iterator[Region]:
    """Syncs, resets the peak RSS, yields a `Region`, then reads the peak.

    `os.sync()` first, so that dirty pages left by the preparation are not
    flushed on the region's clock; the reset (`/proc/self/clear_refs`)
    makes the peak the region's own: what it holds plus what it allocates."""
    os.sync()
    Path("/proc/self/clear_refs").write_text("5")
    r = Region()
    r.rss_before_mb = proc_status_mb("VmRSS")
    yield r
    r.peak_rss_mb = proc_status_mb("VmHWM")


def memory_fields(r: Region) -> dict[str, float]:
    return {
        "rss_before_mb": round(r.rss_before_mb),
        "peak_rss_mb": round(r.peak_rss_mb),
    }


# --- op counting -------------------------------------------------------------------


def op_counts(module: Any) -> Counter[str]:
    """mil ops of an xDSL module by type (without `mil.`), consts excluded."""
    return Counter(
        op.name.removeprefix("mil.")
        for op in module.walk()
        if op.name.startswith("mil.") and op.name != "mil.const"
    )


def function_op_counts(spec: Any) -> dict[str, Counter[str]]:
    """Ops by type of each function of an mlProgram spec, consts excluded:
    the count used for every compiler's package."""
    functions = {}
    for name, function in spec.mlProgram.functions.items():
        counts: Counter[str] = Counter()
        for block in function.block_specializations.values():
            counts.update(op.type for op in block.operations if op.type != "const")
        functions[name] = counts
    return functions


def proto_op_counts(spec: Any) -> Counter[str]:
    """`function_op_counts` summed over the functions."""
    return sum(function_op_counts(spec).values(), Counter())
