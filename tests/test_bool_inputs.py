"""Bool (i1) arguments and results of a compiled program. Core ML has no
bool multiarray, so `mil-io-types` declares them as the program's floats
(fp16 here; coremltools' fp32 in an fp32 program) and casts inside, and
`--emit mil-text` and the package now declare them alike. The manifest records which logical arguments are bool (`bool_args`), so
`run` (CLI and API) takes bool arrays for them and `--random` draws the same
0/1 data for the source program and for the package: their outputs compare
directly."""

from __future__ import annotations

import numpy as np
import pytest
from cli_helpers import cli

from xdsl_ane.api.run import run

SELECT = """
func.func @main(%m: tensor<4x8xi1>, %x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>) {
  %z = rlx.neg %x : tensor<4x8xf32>
  %y = rlx.where %m, %x, %z : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = rlx.compare %y, %x {predicate = "lt"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  func.return %y, %b : tensor<4x8xf32>, tensor<4x8xi1>
}
"""

EMITS = {"mlpackage": "m.mlpackage", "mil-text": "m_text", "proto": "m_proto"}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bool")
    source = directory / "m.mlir"
    source.write_text(SELECT)
    for emit, name in EMITS.items():
        args = ["compile", str(source), "-o", str(directory / name)]
        result = cli(*args, *([] if emit == "mlpackage" else ["--emit", emit]))
        assert result.returncode == 0, result.stderr
    return directory


def inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "arg0": rng.random((4, 8)) < 0.5,
        "arg1": rng.standard_normal((4, 8)).astype(np.float32),
    }


def assert_same(expected, actual):
    y, b = expected
    np.testing.assert_allclose(actual[0].astype(np.float32), y, rtol=1e-2, atol=1e-3)
    np.testing.assert_array_equal(actual[1].astype(bool), b.astype(bool))


@pytest.mark.parametrize("emit", sorted(EMITS))
def test_random_inputs_are_the_same_for_the_source_and_the_package(compiled, emit):
    _, expected = run(compiled / "m.mlir", seed=3)
    _, actual = run(compiled / EMITS[emit], seed=3)
    assert_same(expected, actual)
    assert expected[1].dtype == bool and expected[1].any() and not expected[1].all()


@pytest.mark.parametrize("emit", sorted(EMITS))
def test_bool_arrays_are_taken_for_bool_arguments(compiled, emit, tmp_path):
    arrays = inputs(5)
    _, expected = run(compiled / "m.mlir", arrays=arrays)
    _, actual = run(compiled / EMITS[emit], arrays=arrays)
    assert_same(expected, actual)
    np.savez(tmp_path / "in.npz", **arrays)
    out = tmp_path / "out.npz"
    path = str(compiled / EMITS[emit])
    result = cli(
        "run", path, "--inputs", str(tmp_path / "in.npz"), "--output", str(out)
    )
    assert result.returncode == 0, result.stderr
    with np.load(out) as saved:
        assert_same(expected, [saved["out0"], saved["out1"]])


def test_the_manifest_records_the_bool_argument(compiled):
    import json

    record = json.loads((compiled / "m.manifest.json").read_text())
    assert record["functions"]["main"]["bool_args"] == [0]


def test_mil_text_declares_bool_io_as_the_protobuf_does(compiled):
    """Both declare the bool input and output fp32 and cast inside."""
    text = (compiled / "m_text" / "model.mil").read_text()
    assert "tensor<fp16, [1, 8, 1, 4]> m," in text
    assert text.count(" = cast(") == 2
    assert 'val = string("bool")' in text and 'val = string("fp16")' in text
    from xdsl_ane.frontend.milproto import read_compiled

    for emit in ("m_text", "m.mlpackage"):
        (function,) = read_compiled(compiled / emit).module.ops
        types = [str(t) for t in function.function_type.inputs.data]
        assert types[0] == "tensor<1x8x1x4xf16>", (emit, types)
        assert str(function.function_type.outputs.data[1]).endswith("xf16>")
