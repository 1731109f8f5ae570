"""`xdsl-ane run` on what `xdsl-ane compile` wrote: an .mlpackage, a --emit
proto or mil-text directory, a .mil file; inputs in the source program's
logical layout (by the manifest) or the compiled function's own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_helpers import cli, error_line
from tiny_decoder import TINY_DECODER

OUTPUTS = {
    "mlpackage": "layer.mlpackage",
    "proto": "layer_proto",
    "mil-text": "layer_text",
}


def compiled_package(source: Path, weights: Path, directory: Path) -> Path:
    """`xdsl-ane compile` of the layer to `directory/layer.mlpackage`."""
    package = directory / "layer.mlpackage"
    result = cli("compile", str(source), "-o", str(package), "--weights", str(weights))
    assert result.returncode == 0, result.stderr
    return package


def run_outputs(*args: str, tmp: Path, name: str) -> np.ndarray:
    out = tmp / f"{name}.npz"
    result = cli("run", *args, "--output", str(out))
    assert result.returncode == 0, result.stderr
    return np.load(out)["out0"]


@pytest.mark.parametrize(
    "pipeline", ["ane-pipeline", "ane-pipeline{weights=dynamic pack-io=true}"]
)
@pytest.mark.parametrize("emit", list(OUTPUTS))
def test_compiled_model_runs_like_its_source(
    decoder_layer_files, tmp_path, emit, pipeline
):
    source, weights, _ = decoder_layer_files
    output = tmp_path / OUTPUTS[emit]
    result = cli(
        "compile",
        str(source),
        "-o",
        str(output),
        "--weights",
        str(weights),
        "--emit",
        emit,
        "-p",
        pipeline,
    )
    assert result.returncode == 0, result.stderr
    expected = run_outputs(
        str(source),
        "--random",
        "7",
        "--weights",
        str(weights),
        tmp=tmp_path,
        name="src",
    )
    # The package holds its static weights; dynamic ones come from --weights.
    extra = ["--weights", str(weights)] if "dynamic" in pipeline else []
    got = run_outputs(str(output), "--random", "7", *extra, tmp=tmp_path, name="out")
    assert (
        got.shape
        == expected.shape
        == (1, TINY_DECODER.seq_len, TINY_DECODER.hidden_size)
    )
    assert got.dtype == np.float16
    scale = np.abs(expected).max()
    assert np.abs(got.astype(np.float32) - expected).max() <= 2e-2 * scale
    if emit == "mil-text":  # the .mil file itself, with its directory's manifest
        again = run_outputs(
            str(output / "model.mil"), "--random", "7", *extra, tmp=tmp_path, name="mil"
        )
        np.testing.assert_array_equal(again, got)


def test_inputs_in_both_layouts(decoder_layer_files, tmp_path):
    source, weights, _ = decoder_layer_files
    package = compiled_package(source, weights, tmp_path)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(
        (1, TINY_DECODER.seq_len, TINY_DECODER.hidden_size)
    )  # float64
    np.savez(tmp_path / "x.npz", arg0=x)
    result = cli(
        "run",
        str(package),
        "--inputs",
        str(tmp_path / "x.npz"),
        "--output",
        str(tmp_path / "y.npz"),
    )
    assert result.returncode == 0, result.stderr
    assert "arg0: float64 cast to float16" in result.stderr  # a note, not an error
    logical = np.load(tmp_path / "y.npz")["out0"]
    # the same input in [1, C, 1, S] form, fed to the function as it is
    ane = np.ascontiguousarray(
        x.reshape(TINY_DECODER.seq_len, TINY_DECODER.hidden_size).T
    )
    np.savez(
        tmp_path / "xa.npz",
        arg0=ane.reshape(1, TINY_DECODER.hidden_size, 1, TINY_DECODER.seq_len).astype(
            np.float16
        ),
    )
    result = cli(
        "run",
        str(package),
        "--layout",
        "ane",
        "--inputs",
        str(tmp_path / "xa.npz"),
        "--output",
        str(tmp_path / "ya.npz"),
    )
    assert result.returncode == 0, result.stderr
    raw = np.load(tmp_path / "ya.npz")["out0"]
    assert raw.shape == (1, TINY_DECODER.hidden_size, 1, TINY_DECODER.seq_len)
    np.testing.assert_array_equal(raw[0, :, 0, :].T[None], logical)


def test_bad_inputs_to_a_compiled_model(decoder_layer_files, tmp_path):
    source, weights, _ = decoder_layer_files
    package = compiled_package(source, weights, tmp_path)
    np.savez(tmp_path / "wrong.npz", arg0=np.zeros((1, 4, 64), np.float32))
    error_line(
        cli("run", str(package), "--inputs", str(tmp_path / "wrong.npz")),
        "arg0 has shape [1, 4, 64], the program takes [1, 8, 64]",
    )
    np.savez(tmp_path / "ints.npz", arg0=np.zeros((1, 8, 64), np.int64))
    error_line(
        cli("run", str(package), "--inputs", str(tmp_path / "ints.npz")),
        "arg0 has dtype int64, expected float16",
    )
    error_line(
        cli("run", str(package), "--random", "0", "-p", "canonicalize"),
        "does not apply to a compiled model",
    )
    (tmp_path / "layer.manifest.json").unlink()
    error_line(
        cli("run", str(package), "--random", "0", "--layout", "logical"),
        "no layout record",
        "--layout ane",
    )
    assert cli("run", str(package), "--random", "0", "--layout", "ane").returncode == 0
    # without a manifest there is no other layout: the default
    default = cli("run", str(package), "--random", "0")
    assert default.returncode == 0, default.stderr
    assert "has no layout record: run on its own arguments" in default.stderr
    assert "[1, 64, 1, 8]" in default.stdout


TWO_FUNCTIONS = """
func.func @zeta(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = rlx.relu %x : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
func.func @alpha(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = rlx.neg %x : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
"""


@pytest.mark.slow
def test_a_package_runs_and_lists_its_first_function_in_every_process(tmp_path):
    """A package's functions are a protobuf map, whose order changes from
    process to process: `run` without --function took whichever came
    first. It runs the default function (the source's first, @zeta: relu,
    so no negative output) and `estimate` lists the source's order, in
    each of several processes."""
    import subprocess
    import sys

    source = tmp_path / "two.mlir"
    source.write_text(TWO_FUNCTIONS)
    package = tmp_path / "two.mlpackage"
    assert cli("compile", str(source), "-o", str(package)).returncode == 0
    script = (
        "import sys, numpy as np; from xdsl_ane.tools.cli import main; "
        f"main(['run', '{package}', '--random', '0', '--output', sys.argv[1]]); "
        f"main(['estimate', '{package}'])"
    )
    for i in range(4):
        out = tmp_path / f"out{i}.npz"
        done = subprocess.run(
            [sys.executable, "-c", script, str(out)], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert np.load(out)["out0"].min() >= 0
        rows = [ln for ln in done.stdout.splitlines() if ln.startswith("@")]
        assert [r.split()[0] for r in rows] == ["@zeta", "@alpha"]
