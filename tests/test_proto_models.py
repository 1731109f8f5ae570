"""Whole models through the MIL protobuf printer: a Qwen3 decoder layer at a
small and the real size, and multifunction programs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from proto_check import (
    FLOAT16,
    FLOAT32,
    emit,
    op_named,
    operations,
    program,
    random_weights,
)
from xdsl.transforms.canonicalize import CanonicalizePass

from xdsl_ane.backend.milproto import module_to_proto, module_to_protos
from xdsl_ane.errors import XdslAneError
from xdsl_ane.models.transformer import QWEN3_0_6B, build_decoder_layer, make_weights
from xdsl_ane.passes.ane_layout import MilAneLayoutPass
from xdsl_ane.passes.driver import make_context
from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass

SMALL = QWEN3_0_6B.with_(
    hidden_size=64, num_heads=4, num_kv_heads=2, head_dim=16, ffn_size=128, seq_len=8
)


def lowered_decoder_layer(config, fp16: bool = False):
    module = build_decoder_layer(config)
    weights = make_weights(module, config)
    ctx = make_context()
    ConvertRlxToMilPass().apply(ctx, module)
    MilAneLayoutPass().apply(ctx, module)
    CanonicalizePass().apply(ctx, module)
    if fp16:
        from xdsl_ane.passes.fp16 import MilFp16Pass

        MilFp16Pass().apply(ctx, module)
        CanonicalizePass().apply(ctx, module)
    return module, weights


@pytest.mark.parametrize("fp16", [False, True])
def test_qwen3_decoder_layer_small(fp16: bool):
    module, weights = lowered_decoder_layer(SMALL, fp16)
    result = emit(module, weights)
    types = {op.type for op in operations(result)}
    assert {"conv", "matmul", "softmax", "reduce_mean", "rsqrt"} <= types
    data_type = FLOAT16 if fp16 else FLOAT32
    (x,) = result.spec.description.input
    assert x.type.multiArrayType.dataType == data_type
    assert list(x.type.multiArrayType.shape) == [1, 64, 1, 8]


def test_qwen3_decoder_layer_real_size(tmp_path: Path):
    module, weights = lowered_decoder_layer(QWEN3_0_6B, fp16=True)
    result = emit(module, weights)
    (x,) = result.spec.description.input
    assert list(x.type.multiArrayType.shape) == [1, 1024, 1, 256]
    path = result.save(tmp_path / "layer.mlpackage")
    weight_file = path / "Data" / "com.apple.CoreML" / "weights" / "weight.bin"
    # the seven projections in fp16 and the norms, RoPE tables and mask
    assert weight_file.stat().st_size > 2 * 15_000_000


MULTI = """
func.func @forward(%x: tensor<1x8x1x4xf16>) {
  %w = mil.const weight "proj" {weight_shape = array<i64: 16, 8>} : tensor<16x8x1x1xf16>
  %y = mil.conv %x, %w : (tensor<1x8x1x4xf16>, tensor<16x8x1x1xf16>) -> tensor<1x16x1x4xf16>
  func.return
}
func.func @backward(%dy: tensor<1x16x1x4xf16>, %x: tensor<1x8x1x4xf16>) {
  %w = mil.const weight "proj" {weight_shape = array<i64: 16, 8>} : tensor<16x8x1x1xf16>
  %t = mil.transpose %w {perm = array<i64: 1, 0, 2, 3>} : (tensor<16x8x1x1xf16>) -> tensor<8x16x1x1xf16>
  %dx = mil.conv %dy, %t : (tensor<1x16x1x4xf16>, tensor<8x16x1x1xf16>) -> tensor<1x8x1x4xf16>
  %s = mil.add %dx, %x : (tensor<1x8x1x4xf16>, tensor<1x8x1x4xf16>) -> tensor<1x8x1x4xf16>
  func.return
}
"""


def test_multifunction_model():
    module = program(MULTI)
    weights = random_weights(module)
    result = emit(module, weights)
    spec = result.spec
    assert set(spec.mlProgram.functions) == {"forward", "backward"}
    assert spec.description.defaultFunctionName == "forward"
    assert [f.name for f in spec.description.functions] == ["forward", "backward"]
    backward = spec.description.functions[1]
    assert [i.name for i in backward.input] == ["dy", "x"]
    assert [o.name for o in backward.output] == ["s"]
    assert not spec.description.input  # described per function
    # both functions' consts of the same weight share one blob record
    forward_w = op_named(result, "w", "forward").attributes["val"].blobFileValue
    backward_w = op_named(result, "w", "backward").attributes["val"].blobFileValue
    assert forward_w.offset == backward_w.offset == 64
    assert len(result.blob.entries) == 1


def test_one_spec_per_function_and_selected_functions():
    module = program(MULTI)
    weights = random_weights(module)
    protos = module_to_protos(module, weights)
    assert set(protos) == {"forward", "backward"}
    for result in protos.values():
        assert list(result.spec.mlProgram.functions) == ["main"]
        assert result.validate().ok
    assert [i.name for i in protos["backward"].spec.description.input] == ["dy", "x"]
    selected = emit(module, weights, function=["backward", "forward"])
    assert selected.spec.description.defaultFunctionName == "backward"
    with pytest.raises(XdslAneError, match="no function named 'sideways'"):
        module_to_proto(module, weights, function="sideways")
    with pytest.raises(
        XdslAneError, match="multifunction model .* needs deployment target iOS18"
    ):
        module_to_proto(module, weights, target="iOS17")
    with pytest.raises(XdslAneError, match="deployment target 'iOS16'"):
        module_to_proto(module, weights, function="forward", target="iOS16")
