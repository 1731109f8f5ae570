"""Values fp16 cannot hold, in `xdsl-ane compile`: a constant or a weight
beyond ±65504 is refused naming it (saturating it silently changed the
result), a stand-in for ±∞ (magnitude ≥ 1e9) and an additive mask still
saturate, a NaN or inf weight is refused, and no numpy warning reaches the
user. Each refusal is one line, exit 1, and leaves no output behind."""

from __future__ import annotations

import numpy as np
import pytest
from cli_helpers import cli, error_line

import xdsl_ane
from xdsl_ane.errors import XdslAneError

SHIFT = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {{
  %c = rlx.constant dense<{value}> : tensor<1xf32>
  %y = rlx.add %x, %c : (tensor<4x8xf32>, tensor<1xf32>) -> tensor<4x8xf32>
  %z = rlx.sub %y, %c : (tensor<4x8xf32>, tensor<1xf32>) -> tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}}
"""

FLOOR = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = rlx.constant dense<-3.0e+38> : tensor<1xf32>
  %y = rlx.max %x, %c : (tensor<4x8xf32>, tensor<1xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
"""

MATMUL = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = rlx.param "w" : tensor<8x8xf32>
  %y = rlx.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
"""


def compile_cli(tmp_path, text: str, weights: dict | None = None):
    source = tmp_path / "m.mlir"
    source.write_text(text)
    args = ["compile", str(source), "-o", str(tmp_path / "m.mlpackage")]
    if weights is not None:
        np.savez(tmp_path / "w.npz", **weights)
        args += ["--weights", str(tmp_path / "w.npz")]
    return cli(*args)


def assert_nothing_written(tmp_path):
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(n for n in ("m.mlir", "w.npz") if n in left), left


def test_a_constant_beyond_fp16_is_refused_naming_it(tmp_path):
    result = compile_cli(tmp_path, SHIFT.format(value="70000.0"))
    error_line(result, "mil-fp16", "const 70000", "±65504", "fp16=false")
    assert "Warning" not in result.stderr
    assert_nothing_written(tmp_path)


def run_cli(tmp_path, text: str, pipeline: str) -> np.ndarray:
    source = tmp_path / "m.mlir"
    source.write_text(text)
    out = tmp_path / "y.npz"
    result = cli(
        "run", str(source), "-p", pipeline, "--random", "0", "--output", str(out)
    )
    assert result.returncode == 0, result.stderr
    return np.load(out)["out0"].astype(np.float32)


def test_a_constant_in_range_compiles(tmp_path):
    result = compile_cli(tmp_path, SHIFT.format(value="65504.0"))
    assert result.returncode == 0, result.stderr


def test_the_f32_pipeline_keeps_the_value(tmp_path):
    y = run_cli(tmp_path, SHIFT.format(value="70000.0"), "ane-pipeline{fp16=false}")
    assert np.abs(y).max() > 0.1


def test_an_infinity_standin_saturates(tmp_path):
    result = compile_cli(tmp_path, FLOOR)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr


@pytest.mark.parametrize("value", [1e5, -7e4])
def test_a_weight_beyond_fp16_is_refused_naming_it(tmp_path, value):
    w = np.eye(8, dtype=np.float32)
    w[0, 0] = value
    result = compile_cli(tmp_path, MATMUL, {"w": w})
    error_line(result, "weight 'w'", f"{abs(value):g}", "±65504")
    assert "Warning" not in result.stderr
    assert_nothing_written(tmp_path)


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_a_non_finite_weight_is_refused_naming_it(tmp_path, value):
    w = np.eye(8, dtype=np.float32)
    w[1, 2] = value
    result = compile_cli(tmp_path, MATMUL, {"w": w})
    error_line(result, "rlx.param 'w'", "non-finite", str(value))
    assert_nothing_written(tmp_path)
    with pytest.raises(XdslAneError, match="non-finite"):
        xdsl_ane.compile(tmp_path / "m.mlir", weights={"w": w})


def test_a_weight_beyond_fp16_compiles_in_f32(tmp_path):
    w = np.eye(8, dtype=np.float32) * 1e5
    source = tmp_path / "m.mlir"
    source.write_text(MATMUL)
    compiled = xdsl_ane.compile(
        source, weights={"w": w}, pipeline="ane-pipeline{fp16=false}"
    )
    assert compiled.weights["w"].max() == 1e5
