"""A command stopped from outside leaves nothing half-written: SIGTERM
(what `timeout`, `kill` and a cancelled CI job send) cleans up as Ctrl-C
does, and what a run killed outright (SIGKILL) staged beside its output is
removed by the next run into the same place. Each run here is a real
process, held just before it would move its output into place."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROGRAM = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = rlx.relu %x : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
"""

# Runs `xdsl-ane ARGS`, but the first move into place says STAGED and
# waits: the signal then comes while the output is still staged.
HELD = textwrap.dedent(
    """
    import os, sys, time
    real = os.replace
    def held(a, b):
        print("STAGED", flush=True)
        time.sleep(60)
        real(a, b)
    os.replace = held
    from xdsl_ane.tools.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def staged(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def held_compile(tmp_path: Path) -> subprocess.Popen[str]:
    source = tmp_path / "m.mlir"
    source.write_text(PROGRAM)
    command = [sys.executable, "-c", HELD, "compile", str(source)]
    process = subprocess.Popen(
        [*command, "-o", str(tmp_path / "m.mlpackage")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.strip() == "STAGED":
            return process
    process.wait()
    pytest.fail(f"the compile ended before staging: {process.stderr.read()}")


@pytest.mark.slow
def test_sigterm_removes_what_was_staged(tmp_path):
    process = held_compile(tmp_path)
    assert staged(tmp_path)  # the package is staged beside its place
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert err.strip().endswith("xdsl-ane: terminated"), err
    assert "Traceback" not in err
    assert staged(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mlir"]


@pytest.mark.slow
def test_the_next_run_removes_a_killed_runs_staging(tmp_path):
    process = held_compile(tmp_path)
    process.kill()  # SIGKILL: nothing of the run cleans up
    process.communicate(timeout=60)
    left = staged(tmp_path)
    assert left and all(f".{process.pid}." in name for name in left), left
    # a live run's staging (this process's id) is not touched
    live = tmp_path / f".m.mlpackage.{os.getpid()}.abc.tmp"
    live.mkdir()
    from cli_helpers import cli

    result = cli(
        "compile", str(tmp_path / "m.mlir"), "-o", str(tmp_path / "m.mlpackage")
    )
    assert result.returncode == 0, result.stderr
    assert staged(tmp_path) == [live.name]
    assert (tmp_path / "m.mlpackage").is_dir()
