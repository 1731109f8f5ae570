"""Diagnostics name where and what: file:line:col of the op, the closest
known names, lint errors that fail a compile, options that do not apply."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_helpers import cli, error_line

import xdsl_ane
from xdsl_ane.errors import XdslAneError

MISTYPED = """\
func.func @f(%x: tensor<16x64xf32>) -> tensor<16x127xf32> {
  %w = rlx.param "w" : tensor<128x64xf32>
  %y = rlx.matmul %x, %w {transpose_rhs = true} : (tensor<16x64xf32>, tensor<128x64xf32>) -> tensor<16x127xf32>
  func.return %y : tensor<16x127xf32>
}
"""

WIDE = """\
func.func @f(%x: tensor<16x70000xf32>) -> tensor<16x70000xf32> {
  %y = rlx.relu %x : tensor<16x70000xf32>
  func.return %y : tensor<16x70000xf32>
}
"""

LINEAR = """\
func.func @f(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %w = rlx.param "layers.0.mlp.w" : tensor<16x32xf32>
  %y = rlx.matmul %x, %w {transpose_rhs = true} : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}
"""

RANK5 = """\
func.func @f(%x: tensor<16x8xf32>, %z: tensor<2x3x4x5x6xf32>) -> tensor<2x3x4x5x6xf32> {
  %y = rlx.relu %z : tensor<2x3x4x5x6xf32>
  func.return %y : tensor<2x3x4x5x6xf32>
}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- locations ---------------------------------------------------------------


def test_verifier_error_names_line_and_column(tmp_path):
    source = write(tmp_path, "e7.mlir", MISTYPED)
    line = error_line(
        cli("compile", str(source), "-o", str(tmp_path / "o.mlpackage")),
        "e7.mlir:3:3: rlx.matmul",
        "[16, 127]",
    )
    assert "[16, 128]" in line
    with pytest.raises(XdslAneError, match=r"e7.mlir:3:3: rlx.matmul"):
        xdsl_ane.compile(source)


def test_pass_error_names_the_function(tmp_path):
    source = write(tmp_path, "r5.mlir", RANK5)
    error_line(
        cli("compile", str(source), "-o", str(tmp_path / "o.mlpackage")),
        "r5.mlir:1:1: ane-pipeline: mil-ane-layout: @f: argument",
    )


def test_weight_errors_name_the_param(tmp_path):
    source = write(tmp_path, "w.mlir", LINEAR)
    np.savez(tmp_path / "w.npz", **{"layers.0.mlp.w": np.ones((3, 2), np.float32)})
    error_line(
        cli("run", str(source), "--random", "0", "--weights", str(tmp_path / "w.npz")),
        "w.mlir:2:3: rlx.param 'layers.0.mlp.w': weight has shape [3, 2]",
    )


def test_lowered_ops_keep_the_location_of_their_rlx_op(tmp_path):
    from xdsl_ane.frontend.mlir import parse_module
    from xdsl_ane.locations import location
    from xdsl_ane.passes.driver import make_context
    from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass

    source = write(tmp_path, "w.mlir", LINEAR)
    module = parse_module(source)
    ConvertRlxToMilPass().apply(make_context(), module)
    where = {op.name: location(op) for op in module.walk() if op.name != "func.return"}
    assert where["mil.matmul"] == f"{source}:3:3"
    assert where["mil.const"] == f"{source}:2:3"
    assert where["func.func"] == f"{source}:1:1"


# --- lint errors fail a compile ----------------------------------------------


def test_lint_errors_fail_unless_allowed(tmp_path):
    source = write(tmp_path, "wide.mlir", WIDE)
    out = tmp_path / "wide.mlpackage"
    line = error_line(
        cli("compile", str(source), "-o", str(out)),
        "wide.mlir:1:1: ane-lint: error: @f: argument %x",
        "70000",
        "2 errors",
        "--allow-lint-errors",
    )
    assert "nothing written" in line
    assert not out.exists()
    assert not (tmp_path / "wide.manifest.json").exists()
    with pytest.raises(XdslAneError, match="ane-lint: error"):
        xdsl_ane.compile(source)
    allowed = cli("compile", str(source), "-o", str(out), "--allow-lint-errors")
    assert allowed.returncode == 0, allowed.stderr
    assert out.exists()
    # the summary names the pipeline as it ran, and shows the findings
    assert f"{source}: compiled with ane-pipeline\n" in allowed.stdout
    assert "ane-lint: 1 function, 1 op, 2 errors, 0 warnings" in allowed.stdout
    # lint=false in the pipeline opts out as well
    model = xdsl_ane.compile(source, pipeline="ane-pipeline{lint=false}")
    assert model.lint.errors == 2


def test_strict_lint_fails_on_warnings(tmp_path):
    # 20000 channels: above the 16384 of older chips, a warning
    source = write(tmp_path, "w.mlir", WIDE.replace("70000", "20000"))
    model = xdsl_ane.compile(source)
    assert model.lint.warnings == 2 and model.lint.errors == 0
    with pytest.raises(XdslAneError, match="ane-lint: warning"):
        xdsl_ane.compile(source, pipeline="ane-pipeline{strict=true}")
    model = xdsl_ane.compile(
        source, pipeline="ane-pipeline{strict=true}", allow_lint_errors=True
    )
    assert model.pipeline == "ane-pipeline{strict=true}"


# --- options that do not apply -------------------------------------------------


def test_options_that_do_not_apply_are_rejected(tmp_path):
    source = write(tmp_path, "w.mlir", LINEAR)
    error_line(
        cli(
            "compile-model",
            "qwen3-0.6b",
            "--training",
            "--layers",
            "3",
            "-o",
            str(tmp_path / "k"),
        ),
        "--layers 3: does not apply with --training",
    )
    assert not (tmp_path / "k").exists()
    error_line(
        cli("import", str(tmp_path / "k.mil"), "--force"),
        "--force: applies only with -o",
    )
    error_line(
        cli("run", str(source), "--random", "0", "--force"),
        "--force: applies only with --output",
    )
    error_line(
        cli("run", str(source), "--random", "0", "--layout", "ane"),
        "--layout ane: applies only to a compiled model",
    )


# --- suggestions ------------------------------------------------------------------


@pytest.mark.parametrize(
    "pipeline, needles",
    [
        ("ane-pipline", ["unknown pass 'ane-pipline'", "did you mean 'ane-pipeline'"]),
        (
            "ane-pipeline{weight=static}",
            [
                "ane-pipeline has no option 'weight'",
                "did you mean 'weights'",
                "pack-io",
            ],
        ),
        (
            "canonicalize,mil-fp61",
            ["unknown pass 'mil-fp61'", "did you mean 'mil-fp16'"],
        ),
    ],
)
def test_misspelled_passes_and_options(tmp_path, pipeline, needles):
    source = write(tmp_path, "w.mlir", LINEAR)
    error_line(
        cli(
            "compile", str(source), "-o", str(tmp_path / "o.mlpackage"), "-p", pipeline
        ),
        *needles,
    )


def test_weight_names_with_another_prefix_or_a_typo(tmp_path):
    source = write(tmp_path, "w.mlir", LINEAR)
    w = np.ones((16, 32), np.float32)
    np.savez(tmp_path / "hf.npz", **{"model.layers.0.mlp.w": w})
    np.savez(tmp_path / "typo.npz", **{"layers.0.mlp.ww": w})
    error_line(
        cli(
            "compile",
            str(source),
            "-o",
            str(tmp_path / "o.mlpackage"),
            "--weights",
            str(tmp_path / "hf.npz"),
        ),
        "'model.layers.0.mlp.w'",
        "carry the prefix 'model.'",
    )
    error_line(
        cli(
            "run", str(source), "--random", "0", "--weights", str(tmp_path / "typo.npz")
        ),
        "did you mean 'layers.0.mlp.ww'",
    )


def test_misspelled_function_and_model(tmp_path):
    source = write(tmp_path, "w.mlir", LINEAR.replace("@f", "@forward"))
    np.savez(tmp_path / "w.npz", **{"layers.0.mlp.w": np.ones((16, 32), np.float32)})
    error_line(
        cli(
            "run",
            str(source),
            "--random",
            "0",
            "--weights",
            str(tmp_path / "w.npz"),
            "--function",
            "forwrd",
        ),
        "no function named 'forwrd'",
        "did you mean 'forward'",
    )
    error_line(
        cli("compile-model", "qwen3-0.6", "-o", str(tmp_path / "m")),
        "did you mean 'qwen3-0.6b'",
    )


def test_ops_imported_from_mil_text_have_locations(tmp_path):
    source = write(
        tmp_path,
        "wide.mil",
        "program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1, 70000, 1, 4]> x) {\n"
        '        tensor<fp16, [1, 70000, 1, 4]> y = relu(x = x)[name = string("y")];\n'
        "    } -> (y);\n}\n",
    )
    model = xdsl_ane.compile(source, allow_lint_errors=True)
    sources = [f.source for f in model.lint.findings]
    assert sources == [f"{source}:3:10", f"{source}:4:40"]
