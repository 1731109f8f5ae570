"""How `run` takes its inputs: keyed `argI` or by argument name, a key
that is neither named in a note (it used to be ignored without a word),
and random integer inputs drawn below the size they index (token type ids
of a 2-row table), the same for the source and its package."""

from __future__ import annotations

import numpy as np
import pytest
from cli_helpers import cli, error_line

from xdsl_ane.api.run import run

TOKEN_TYPES = """
func.func @main(%ids: tensor<8xi32>, %x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %t = rlx.param "token_type" : tensor<2x4xf32>
  %e = rlx.gather %t, %ids {axis = 0 : i64} : (tensor<2x4xf32>, tensor<8xi32>) -> tensor<8x4xf32>
  %y = rlx.add %e, %x : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  func.return %y : tensor<8x4xf32>
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    directory = tmp_path_factory.mktemp("inputs")
    source = directory / "m.mlir"
    source.write_text(TOKEN_TYPES)
    weights = directory / "w.npz"
    np.savez(weights, token_type=np.arange(8, dtype=np.float32).reshape(2, 4))
    package = directory / "m.mlpackage"
    compiled = cli(
        "compile", str(source), "--weights", str(weights), "-o", str(package)
    )
    assert compiled.returncode == 0, compiled.stderr
    return source, weights, package


def test_random_ids_lie_below_the_table(program):
    source, weights, package = program
    table = {"token_type": np.load(weights)["token_type"]}
    _, (expected,) = run(source, seed=1, weights=table)
    _, (actual,) = run(package, seed=1)
    np.testing.assert_allclose(
        actual.astype(np.float32), expected, rtol=1e-2, atol=1e-2
    )
    from xdsl_ane.frontend.mlir import parse_module
    from xdsl_ane.interpreter.core import random_inputs
    from xdsl_ane.passes.driver import make_context

    (function,) = parse_module(str(source), make_context()).ops
    ids = random_inputs(function, 1)[0]
    assert set(np.unique(ids)) == {0, 1}


def test_inputs_keyed_by_argument_name(program, tmp_path):
    source, weights, package = program
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 2, 8).astype(np.int32)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    np.savez(tmp_path / "by_name.npz", ids=ids, x=x)
    np.savez(tmp_path / "by_index.npz", arg0=ids, arg1=x)
    outputs = []
    for path in (source, package):
        for name in ("by_name", "by_index"):
            out = tmp_path / f"{path.suffix}{name}.npz"
            args = ["run", str(path), "--inputs", str(tmp_path / f"{name}.npz")]
            if path == source:
                args += ["--weights", str(weights)]
            result = cli(*args, "--output", str(out))
            assert result.returncode == 0, result.stderr
            assert "is no argument" not in result.stderr
            outputs.append(np.load(out)["out0"].astype(np.float32))
    for other in outputs[1:]:
        np.testing.assert_allclose(other, outputs[0], rtol=1e-2, atol=1e-2)


def test_a_key_that_is_no_argument_is_named(program, tmp_path):
    source, weights, _ = program
    np.savez(
        tmp_path / "in.npz",
        arg0=np.zeros(8, np.int32),
        arg1=np.zeros((8, 4), np.float32),
        token_type_ids=np.zeros(8, np.int32),
    )
    args = ["run", str(source), "--weights", str(weights), "--random", "0"]
    result = cli(*args[:4], "--inputs", str(tmp_path / "in.npz"))
    assert result.returncode == 0, result.stderr
    assert "token_type_ids is no argument of @main, not read" in result.stderr
    assert "keys: arg0..arg1 or ids, x" in result.stderr
    np.savez(tmp_path / "short.npz", ids=np.zeros(8, np.int32))
    error_line(
        cli(*args[:4], "--inputs", str(tmp_path / "short.npz")),
        "no array arg1 (x) for @main (it takes 2 arguments, keyed arg0..arg1 or by name)",
    )
