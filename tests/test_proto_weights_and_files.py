"""Weights and files of the MIL protobuf printer: weight errors that name
the weight and op, the `.mlpackage` and bare protobuf directories, and the
`mil-proto-text` target's blob offsets planned without weights.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from proto_check import emit, op_named, program, random_weights

from xdsl_ane.backend.milproto import MilProtoTextTarget, module_to_proto
from xdsl_ane.backend.validate import validate
from xdsl_ane.backend.weights import quiet_coremltools
from xdsl_ane.errors import XdslAneError
from xdsl_ane.passes.driver import make_context

with quiet_coremltools():
    import coremltools as ct
    from coremltools.proto import Model_pb2


WEIGHTED = """
func.func @f(%x: tensor<1x8x1x4xf16>) {
  %w = mil.const weight "proj" {weight_shape = array<i64: 16, 8>} : tensor<16x8x1x1xf16>
  %y = mil.conv %x, %w : (tensor<1x8x1x4xf16>, tensor<16x8x1x1xf16>) -> tensor<1x16x1x4xf16>
  func.return
}
"""


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({}, r"^@f: mil.const 'w': weight 'proj' is not in the weights file$"),
        (
            {"proj": np.zeros((8, 16), np.float32)},
            r"^@f: mil.const 'w': weight 'proj' has shape \[8, 16\], the IR declares \[16, 8\]$",
        ),
        (
            {"proj": np.zeros((16, 8), np.int32)},
            r"^@f: mil.const 'w': weight 'proj' has dtype int32, the IR declares float16$",
        ),
    ],
)
def test_weight_errors_name_weight_and_op_and_write_nothing(
    tmp_path: Path, weights, message
):
    module = program(WEIGHTED)
    with pytest.raises(XdslAneError, match=message):
        module_to_proto(module, weights).save(tmp_path / "out.mlpackage")
    assert list(tmp_path.iterdir()) == []


def test_mlpackage_is_written_and_loads_as_the_spec(tmp_path: Path):
    module = program(WEIGHTED)
    weights = random_weights(module)
    result = emit(module, weights)
    path = result.save(tmp_path / "model.mlpackage")
    assert path == tmp_path / "model.mlpackage"
    with quiet_coremltools():
        spec = ct.utils.load_spec(str(path))
    assert spec == result.spec
    weight_file = path / "Data" / "com.apple.CoreML" / "weights" / "weight.bin"
    assert weight_file.read_bytes() == result.weight_bytes()
    assert validate(spec, weight_file.parent).ok
    assert [p.name for p in tmp_path.iterdir()] == ["model.mlpackage"]


def test_existing_output_is_replaced_only_with_force(tmp_path: Path):
    module = program(WEIGHTED)
    result = emit(module, random_weights(module))
    path = tmp_path / "model.mlpackage"
    path.mkdir()
    (path / "old").write_text("keep me")
    with pytest.raises(XdslAneError, match=r"model.mlpackage: already exists"):
        result.save(path)
    assert (path / "old").read_text() == "keep me"
    result.save(path, force=True)
    assert not (path / "old").exists()
    assert (path / "Manifest.json").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["model.mlpackage"]
    with pytest.raises(XdslAneError, match="must end in .mlpackage"):
        result.save(tmp_path / "model.pkg")


def test_printed_without_weights_cannot_be_saved(tmp_path: Path):
    result = module_to_proto(program(WEIGHTED))
    with pytest.raises(XdslAneError, match="printed without weights .*'proj'"):
        result.save(tmp_path / "model.mlpackage")
    assert list(tmp_path.iterdir()) == []


def test_write_proto_directory(tmp_path: Path):
    module = program(WEIGHTED)
    weights = random_weights(module)
    result = emit(module, weights)
    out = result.write_proto(tmp_path / "out")
    spec = Model_pb2.Model()
    spec.ParseFromString((out / "model.mlmodel").read_bytes())
    assert spec == result.spec
    assert (out / "weights" / "weight.bin").read_bytes() == result.weight_bytes()
    assert validate(spec, out / "weights").ok
    with pytest.raises(XdslAneError, match="already exists"):
        result.write_proto(out)


# --- the xdsl-opt target ---------------------------------------------------------


def test_text_target_without_weights_plans_blob_offsets():
    module = program(
        """
func.func @f(%x: tensor<1x8x1x4xf16>) {
  %w = mil.const weight "proj" {weight_shape = array<i64: 16, 8>} : tensor<16x8x1x1xf16>
  %g = mil.const weight "gain" : tensor<1x6x1x1xf16>
  %v = mil.const weight "proj2" : tensor<16x8x1x1xf16>
  %y = mil.conv %x, %w : (tensor<1x8x1x4xf16>, tensor<16x8x1x1xf16>) -> tensor<1x16x1x4xf16>
  %z = mil.conv %x, %v : (tensor<1x8x1x4xf16>, tensor<16x8x1x1xf16>) -> tensor<1x16x1x4xf16>
  %s = mil.slice_by_size %y {begin = array<i64: 0, 0, 0, 0>, size = array<i64: 1, 6, 1, 4>} : (tensor<1x16x1x4xf16>) -> tensor<1x6x1x4xf16>
  %p = mil.mul %s, %g : (tensor<1x6x1x4xf16>, tensor<1x6x1x1xf16>) -> tensor<1x6x1x4xf16>
  func.return
}
"""
    )
    from io import StringIO

    out = StringIO()
    MilProtoTextTarget().emit(make_context(), module, out)
    text = out.getvalue()
    from google.protobuf import text_format

    spec = text_format.Parse(text, Model_pb2.Model())
    weights = random_weights(module)
    real = emit(module, weights)
    # without weights the offsets are those of the real blob
    for name in ("w", "v"):
        ours = op_named(real, name).attributes["val"].blobFileValue.offset
        f = spec.mlProgram.functions["main"]
        planned = next(
            op.attributes["val"].blobFileValue.offset
            for op in f.block_specializations["CoreML8"].operations
            if op.outputs[0].name == name
        )
        assert planned == ours
    assert 'docString: "data of weight gain (printed without weights)"' in text
    assert "shape: [1, 8, 1, 4]" in text
    out17 = StringIO()
    MilProtoTextTarget(target="iOS17").emit(make_context(), module, out17)
    assert 'opset: "CoreML7"' in out17.getvalue()
