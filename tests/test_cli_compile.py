"""`xdsl-ane compile` and `xdsl-ane import`: real outputs, and one clean
line (nothing written) for every kind of bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import cli as xdsl_ane_cli
from cli_helpers import error_line as assert_clean_error

import xdsl_ane
from xdsl_ane.errors import XdslAneError
from xdsl_ane.weights.safetensors import write_safetensors


def test_compile_mlpackage_validated(decoder_layer_files, tmp_path):
    source, weights, _ = decoder_layer_files
    out = tmp_path / "layer.mlpackage"
    result = xdsl_ane_cli(
        "compile", str(source), "-o", str(out), "--weights", str(weights), "--validate"
    )
    assert result.returncode == 0, result.stderr
    assert "@decoder_layer: 67 ops" in result.stdout
    assert "7 conv" in result.stdout
    assert "ane-lint: 1 function, 67 ops, 0 errors, 0 warnings" in result.stdout
    assert "validated" in result.stdout
    assert (out / "Manifest.json").exists()
    manifest = json.loads((tmp_path / "layer.manifest.json").read_text())
    layouts = manifest["functions"]["decoder_layer"]["arg_layouts"]
    assert layouts[0]["ane"] == [1, 64, 1, 8]
    # the package reloads as a spec with the weights in place
    import coremltools as ct

    spec = ct.utils.load_spec(str(out))
    assert spec.specificationVersion == 9
    assert list(spec.mlProgram.functions) == ["main"]  # a single function is main


def test_compile_existing_output_needs_force(decoder_layer_files, tmp_path):
    source, weights, _ = decoder_layer_files
    out = tmp_path / "layer.mlpackage"
    out.mkdir()
    (out / "keep").write_text("previous")
    result = xdsl_ane_cli(
        "compile", str(source), "-o", str(out), "--weights", str(weights)
    )
    assert_clean_error(result, str(out), "--force")
    assert (out / "keep").read_text() == "previous"
    # not even --force replaces a directory xdsl-ane did not write
    args = ["compile", str(source), "-o", str(out), "--weights", str(weights)]
    result = xdsl_ane_cli(*args, "--force")
    assert_clean_error(result, str(out), "a directory xdsl-ane did not write")
    assert (out / "keep").read_text() == "previous"
    (out / "keep").unlink()
    out.rmdir()
    assert xdsl_ane_cli(*args).returncode == 0
    result = xdsl_ane_cli(*args, "--force")
    assert result.returncode == 0, result.stderr


def test_compile_mil_text_and_import_round_trip(decoder_layer_files, tmp_path):
    source, weights, arrays = decoder_layer_files
    out = tmp_path / "kernel"
    result = xdsl_ane_cli(
        "compile",
        str(source),
        "-o",
        str(out),
        "--weights",
        str(weights),
        "-p",
        "ane-pipeline{weights=dynamic pack-io=true lint=false}",
        "--emit",
        "mil-text",
    )
    assert result.returncode == 0, result.stderr
    assert (out / "model.mil").read_text().startswith("program(1.3)")
    assert (out / "weights" / "weight.bin").exists()
    packing = json.loads((out / "manifest.json").read_text())["functions"][
        "decoder_layer"
    ]["packing"]
    assert len(packing["inputs"]) == 1 and len(packing["outputs"]) == 1

    imported = tmp_path / "kernel.mlir"
    result = xdsl_ane_cli("import", str(out / "model.mil"), "-o", str(imported))
    assert result.returncode == 0, result.stderr
    assert "mil.matmul" in imported.read_text()
    assert (tmp_path / "kernel.weights.npz").exists()
    # the imported program runs on the packed input
    from xdsl_ane.frontend.mlir import parse_module
    from xdsl_ane.interpreter.core import run_function
    from xdsl_ane.weights.arrays import load_arrays

    module = parse_module(imported)
    shape = packing["inputs"][0]["shape"]
    (y,) = run_function(
        module,
        [np.zeros(shape, np.float16)],
        load_arrays(tmp_path / "kernel.weights.npz", "w"),
    )
    assert list(y.shape) == packing["outputs"][0]["shape"]


def test_compile_proto(decoder_layer_files, tmp_path):
    source, weights, _ = decoder_layer_files
    out = tmp_path / "proto"
    result = xdsl_ane_cli(
        "compile",
        str(source),
        "-o",
        str(out),
        "--weights",
        str(weights),
        "--emit",
        "proto",
    )
    assert result.returncode == 0, result.stderr
    assert (out / "model.mlmodel").exists() and (
        out / "weights" / "weight.bin"
    ).exists()


def test_compile_safetensors_weights(decoder_layer_files, tmp_path):
    source, _, arrays = decoder_layer_files
    weights = tmp_path / "w.safetensors"
    write_safetensors(weights, arrays)
    result = xdsl_ane_cli(
        "compile",
        str(source),
        "-o",
        str(tmp_path / "a.mlpackage"),
        "--weights",
        str(weights),
    )
    assert result.returncode == 0, result.stderr


def bad_weights(arrays, kind):
    name = "layers.0.self_attn.k_proj.weight"
    arrays = dict(arrays)
    if kind == "missing":
        del arrays[name]
    elif kind == "shape":
        arrays[name] = arrays[name].T.copy()
    elif kind == "dtype":
        arrays[name] = arrays[name].astype(np.int32)
    return arrays


@pytest.mark.parametrize(
    "kind, needles",
    [
        ("missing", ["k_proj.weight", "not in the weights file"]),
        ("shape", ["k_proj.weight", "[64, 32]", "[32, 64]"]),
        ("dtype", ["k_proj.weight", "int32"]),
    ],
)
def test_compile_bad_weights(decoder_layer_files, tmp_path, kind, needles):
    source, _, arrays = decoder_layer_files
    weights = tmp_path / "w.npz"
    np.savez(weights, **bad_weights(arrays, kind))
    out = tmp_path / "out.mlpackage"
    assert_clean_error(
        xdsl_ane_cli("compile", str(source), "-o", str(out), "--weights", str(weights)),
        *needles,
    )
    assert list(tmp_path.iterdir()) == [weights]


def test_compile_extra_weights_warn(decoder_layer_files, tmp_path):
    source, _, arrays = decoder_layer_files
    weights = tmp_path / "w.npz"
    np.savez(weights, extra=np.zeros(3, np.float32), **arrays)
    result = xdsl_ane_cli(
        "compile",
        str(source),
        "-o",
        str(tmp_path / "a.mlpackage"),
        "--weights",
        str(weights),
    )
    assert result.returncode == 0, result.stderr
    assert "not used by the program" in result.stderr


def test_compile_corrupt_weights(decoder_layer_files, tmp_path):
    source, _, _ = decoder_layer_files
    weights = tmp_path / "w.npz"
    weights.write_bytes(b"not a zip file at all")
    assert_clean_error(
        xdsl_ane_cli(
            "compile",
            str(source),
            "-o",
            str(tmp_path / "o.mlpackage"),
            "--weights",
            str(weights),
        ),
        "w.npz",
    )


def test_compile_unwritable_output(decoder_layer_files, tmp_path):
    source, weights, _ = decoder_layer_files
    out = tmp_path / "no" / "such" / "dir" / "o.mlpackage"
    assert_clean_error(
        xdsl_ane_cli("compile", str(source), "-o", str(out), "--weights", str(weights)),
        "o.mlpackage",
    )


def test_compile_lint_errors_fail_unless_allowed(tmp_path):
    """A vocabulary-sized axis: the compile fails with the first lint error
    and nothing written; with --allow-lint-errors the summary carries the
    errors with the split suggestion."""
    source = tmp_path / "head.mlir"
    source.write_text(
        """func.func @head(%x: tensor<4x70000xf32>) -> tensor<4x70000xf32> {
  %0 = rlx.softmax %x : tensor<4x70000xf32>
  func.return %0 : tensor<4x70000xf32>
}
"""
    )
    out = tmp_path / "h.mlpackage"
    result = xdsl_ane_cli("compile", str(source), "-o", str(out))
    assert_clean_error(result, "head.mlir:1:1: ane-lint: error", "split")
    assert not out.exists()
    result = xdsl_ane_cli("compile", str(source), "-o", str(out), "--allow-lint-errors")
    assert result.returncode == 0, result.stderr
    assert "ane-lint: error" in result.stdout and "split" in result.stdout


def test_import_malformed_mil_names_line_and_column(tmp_path):
    kernel = tmp_path / "k.mil"
    kernel.write_text(
        "program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1, 4, 1, 8]> x) {\n"
        '        tensor<fp16, [1, 4, 1, 8]> y = relu(x = z)[name = string("y")];\n'
        "    } -> (y);\n}\n"
    )
    result = xdsl_ane_cli("import", str(kernel), "-o", str(tmp_path / "k.mlir"))
    assert_clean_error(result, "k.mil:4:")
    assert not (tmp_path / "k.mlir").exists()


def test_api_embedding_without_text():
    """Another compiler builds rlx in Python and compiles it directly."""
    from xdsl.dialects import builtin
    from xdsl.dialects.builtin import f32

    from xdsl_ane.dialects import rlx
    from xdsl_ane.dialects.functions import build_function
    from xdsl_ane.dialects.typing import tensor

    w = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)

    def body(x):
        y = rlx.MatmulOp(
            x, rlx.ParamOp("w", tensor((16, 32), f32)).result, transpose_rhs=True
        )
        return [rlx.SiluOp(y.result).result]

    module = builtin.ModuleOp(
        [build_function("f", [tensor((8, 32), f32)], body, ["x"])]
    )
    model = xdsl_ane.compile(module, weights={"w": w})
    assert model.spec.specificationVersion == 9
    assert "conv(" in model.mil_text
    assert model.lint.errors == 0
    assert model.validate().ok
    assert not any(
        op.name.startswith("mil.") for op in module.walk()
    )  # input untouched


def test_api_raises_one_exception_type(tmp_path):
    with pytest.raises(XdslAneError, match="nope.mlir"):
        xdsl_ane.compile(tmp_path / "nope.mlir")
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "func.func @f(%x: tensor<2xf32>) {\n  %0 = rlx.relux %x : tensor<2xf32>\n}\n"
    )
    with pytest.raises(XdslAneError, match=r"bad.mlir:2:"):
        xdsl_ane.compile(bad)
