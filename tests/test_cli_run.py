"""`xdsl-ane run`: results, and one clean line for every kind of bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_helpers import cli as xdsl_ane
from cli_helpers import error_line as assert_clean_error

SMALL = """\
func.func @f(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2xf32>) {
  %w = rlx.param "w" : tensor<2x3xf32>
  %0 = rlx.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = rlx.mul %0, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = rlx.reduce_sum %1 {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %1, %2 : tensor<2x3xf32>, tensor<2xf32>
}
"""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "small.mlir"
    path.write_text(SMALL)
    return path


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, Path, dict[str, np.ndarray]]:
    rng = np.random.default_rng(1)
    arrays = {
        "arg0": rng.standard_normal((2, 3)).astype(np.float32),
        "arg1": rng.standard_normal(3).astype(np.float32),
        "w": rng.standard_normal((2, 3)).astype(np.float32),
    }
    inputs = tmp_path / "x.npz"
    np.savez(inputs, arg0=arrays["arg0"], arg1=arrays["arg1"])
    weights = tmp_path / "w.npz"
    np.savez(weights, w=arrays["w"])
    return inputs, weights, arrays


def test_run_writes_outputs(program, data, tmp_path):
    inputs, weights, arrays = data
    out = tmp_path / "y.npz"
    result = xdsl_ane(
        "run",
        str(program),
        "--inputs",
        str(inputs),
        "--weights",
        str(weights),
        "--output",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    with np.load(out) as y:
        expected = (arrays["arg0"] + arrays["arg1"]) * arrays["w"]
        np.testing.assert_allclose(y["out0"], expected, rtol=1e-6)
        np.testing.assert_allclose(y["out1"], expected.sum(axis=1), rtol=1e-5)
        assert y["out0"].dtype == np.float32


def test_run_prints_summary_with_random_inputs(program, data):
    _, weights, _ = data
    result = xdsl_ane("run", str(program), "--random", "3", "--weights", str(weights))
    assert result.returncode == 0, result.stderr
    assert "out0: [2, 3] float32" in result.stdout
    assert "out1: [2] float32" in result.stdout


def test_run_applies_a_pipeline(tmp_path):
    src = tmp_path / "gqa.mlir"
    src.write_text(
        """\
func.func @f(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>) -> tensor<1x4x3x8xf32> {
  %0 = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<1x4x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x4x3x8xf32>
  func.return %0 : tensor<1x4x3x8xf32>
}
"""
    )
    before, after = tmp_path / "a.npz", tmp_path / "b.npz"
    assert (
        xdsl_ane("run", str(src), "--random", "0", "--output", str(before)).returncode
        == 0
    )
    result = xdsl_ane(
        "run", str(src), "-p", "rlx-gqa-tile", "--random", "0", "--output", str(after)
    )
    assert result.returncode == 0, result.stderr
    with np.load(before) as a, np.load(after) as b:
        np.testing.assert_allclose(a["out0"], b["out0"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "text, needles",
    [
        (SMALL[:200], ["small.mlir:"]),
        (SMALL.replace("rlx.add", "rlx.addd"), ["small.mlir:3:", "rlx.addd"]),
        (
            SMALL.replace(
                "%2 = rlx.reduce_sum %1 {axes = array<i64: 1>}",
                "%2 = rlx.reduce_sum %1 {axis = array<i64: 1>}",
            ),
            ["axes"],
        ),
        (
            SMALL.replace("-> tensor<2xf32>\n  func", "-> tensor<3xf32>\n  func")
            .replace(
                "(tensor<2x3xf32>, tensor<2xf32>) {",
                "(tensor<2x3xf32>, tensor<3xf32>) {",
            )
            .replace(
                "%1, %2 : tensor<2x3xf32>, tensor<2xf32>",
                "%1, %2 : tensor<2x3xf32>, tensor<3xf32>",
            ),
            ["rlx.reduce_sum", "[3] f32", "[2] f32"],
        ),
    ],
    ids=["truncated", "unknown-op", "misspelled-property", "verifier"],
)
def test_bad_ir_is_one_line(tmp_path, text, needles):
    path = tmp_path / "small.mlir"
    path.write_text(text)
    out = tmp_path / "y.npz"
    result = xdsl_ane("run", str(path), "--random", "0", "--output", str(out))
    assert_clean_error(result, *needles)
    assert not out.exists()


def test_missing_weight(program, data, tmp_path):
    inputs, _, _ = data
    out = tmp_path / "y.npz"
    result = xdsl_ane(
        "run", str(program), "--inputs", str(inputs), "--output", str(out)
    )
    assert_clean_error(result, "rlx.param", "'w'", "not in the weights file")
    assert not out.exists()


def test_misshaped_weight(program, data, tmp_path):
    inputs, _, _ = data
    weights = tmp_path / "bad.npz"
    np.savez(weights, w=np.zeros((3, 2), np.float32))
    result = xdsl_ane(
        "run", str(program), "--inputs", str(inputs), "--weights", str(weights)
    )
    assert_clean_error(result, "'w'", "[3, 2]", "[2, 3]")


def test_mistyped_weight(program, data, tmp_path):
    inputs, _, _ = data
    weights = tmp_path / "bad.npz"
    np.savez(weights, w=np.zeros((2, 3), np.int32))
    result = xdsl_ane(
        "run", str(program), "--inputs", str(inputs), "--weights", str(weights)
    )
    assert_clean_error(result, "small.mlir:2:3", "'w'", "int32", "f32")


def test_corrupt_weights_file(program, data, tmp_path):
    inputs, _, _ = data
    weights = tmp_path / "bad.npz"
    weights.write_bytes(b"PK\x03\x04 not really a zip")
    result = xdsl_ane(
        "run", str(program), "--inputs", str(inputs), "--weights", str(weights)
    )
    assert_clean_error(result, "bad.npz")


def test_missing_input(program, data, tmp_path):
    _, weights, arrays = data
    inputs = tmp_path / "partial.npz"
    np.savez(inputs, arg0=arrays["arg0"])
    result = xdsl_ane(
        "run", str(program), "--inputs", str(inputs), "--weights", str(weights)
    )
    assert_clean_error(result, "arg1")


def test_misshaped_input(program, data, tmp_path):
    _, weights, arrays = data
    inputs = tmp_path / "bad.npz"
    np.savez(inputs, arg0=arrays["arg0"], arg1=np.zeros(4, np.float32))
    result = xdsl_ane(
        "run", str(program), "--inputs", str(inputs), "--weights", str(weights)
    )
    assert_clean_error(result, "arg1", "[4]", "[3]")


def test_missing_file(tmp_path):
    result = xdsl_ane("run", str(tmp_path / "nope.mlir"), "--random", "0")
    assert_clean_error(result, "nope.mlir")


def test_unknown_function(program, data):
    _, weights, _ = data
    result = xdsl_ane(
        "run",
        str(program),
        "--random",
        "0",
        "--function",
        "g",
        "--weights",
        str(weights),
    )
    assert_clean_error(result, "'g'", "f")


def test_unknown_pass(program):
    result = xdsl_ane("run", str(program), "-p", "no-such-pass", "--random", "0")
    assert_clean_error(result, "no-such-pass")


def test_unwritable_output(program, data, tmp_path):
    _, weights, _ = data
    result = xdsl_ane(
        "run",
        str(program),
        "--random",
        "0",
        "--weights",
        str(weights),
        "--output",
        str(tmp_path / "missing-dir" / "y.npz"),
    )
    assert_clean_error(result, "missing-dir")


def test_failed_run_keeps_previous_output(program, data, tmp_path):
    inputs, weights, _ = data
    out = tmp_path / "y.npz"
    out.write_bytes(b"previous")
    result = xdsl_ane(
        "run", str(program), "--inputs", str(inputs), "--output", str(out)
    )
    assert result.returncode == 1
    assert out.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".y.npz")] == []


def test_run_function_raises_xdsl_ane_error(tmp_path):
    """The Python API's one exception type, for a bad argument and for an op
    failing at run time alike."""
    from xdsl_ane import XdslAneError
    from xdsl_ane.frontend.mlir import parse_module_text
    from xdsl_ane.interpreter.core import run_function

    module = parse_module_text(SMALL, "small.mlir")
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(XdslAneError, match="takes 2 arguments, got 1"):
        run_function(module, [x], {"w": x})
    with pytest.raises(XdslAneError, match="weight 'w'"):
        run_function(module, [x, np.zeros(3, np.float32)], {})


def test_run_a_torch_export_file(tmp_path):
    """A `.pt2` runs as its import does: the numbers are torch's."""
    import torch

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(3, 4)

        def forward(self, x):
            return torch.relu(self.linear(x)) * 2

    torch.manual_seed(0)
    block = Block().eval()
    x = torch.randn(2, 3)
    torch.export.save(torch.export.export(block, (x,)), tmp_path / "m.pt2")
    np.savez(tmp_path / "x.npz", arg0=x.numpy())
    out = tmp_path / "y.npz"
    result = xdsl_ane(
        "run",
        str(tmp_path / "m.pt2"),
        "--inputs",
        str(tmp_path / "x.npz"),
        "--output",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    with torch.no_grad():
        expected = block(x).numpy()
    np.testing.assert_allclose(np.load(out)["out0"], expected, rtol=1e-6, atol=1e-6)
