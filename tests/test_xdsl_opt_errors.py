"""Plain `xdsl-opt --verify-diagnostics` and xdsl-opt's targets report our
passes' and printers' failures in one line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from robustness_inputs import PROGRAM

XDSL_OPT = Path(sys.executable).with_name("xdsl-opt")


@pytest.mark.slow
@pytest.mark.parametrize(
    "program, passes, needle",
    [
        ("rank5", "ane-pipeline", "no [1, C, 1, S] layout"),
        ("scalar", "ane-pipeline", "not a tensor"),
        ("scalar", "mil-ane-layout", "not a tensor"),
        ("ok", "mil-ane-layout{weights=foo}", "weights=foo"),
        ("ok", "ane-pipeline{weights=foo}", "weights=foo"),
        ("ok", "convert-rlx-to-mil,mil-pack-io", "mil-pack-io"),
    ],
)
def test_xdsl_opt_pass_failures_are_one_line(tmp_path, program, passes, needle):
    texts = {
        "ok": PROGRAM,
        "rank5": "func.func @f(%x: tensor<1x2x1x2x2xf32>) -> tensor<1x2x1x2x2xf32> {\n"
        "  func.return %x : tensor<1x2x1x2x2xf32>\n}\n",
        "scalar": "func.func @f(%x: f32) -> f32 {\n  func.return %x : f32\n}\n",
    }
    path = tmp_path / "p.mlir"
    path.write_text(texts[program])
    result = subprocess.run(
        [str(XDSL_OPT), str(path), "-p", passes, "--verify-diagnostics"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in result.stderr + result.stdout
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], result.stdout


@pytest.mark.slow
def test_xdsl_opt_printer_rejects_non_tensors_in_one_line(tmp_path):
    path = tmp_path / "p.mlir"
    path.write_text("func.func @f(%x: f32) -> f32 {\n  func.return %x : f32\n}\n")
    for target in ("mil-text", "mil-proto-text"):
        result = subprocess.run(
            [str(XDSL_OPT), str(path), "-t", target, "--verify-diagnostics"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "Traceback" not in result.stderr, result.stderr
        lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
        assert len(lines) == 1 and "f32" in lines[0], result.stdout
