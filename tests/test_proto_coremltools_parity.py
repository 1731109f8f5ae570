"""The MIL protobuf as coremltools writes it: each op's declared inputs,
the same program built with coremltools' Builder, compile-time parameters
as typed consts, which consts go to the blob, int8 data and fp32 weights of
fp16 consts.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
from proto_check import (
    emit,
    immediate,
    op_named,
    operations,
    program,
    read_blob,
)

from xdsl_ane.backend.weights import next_blob_offset, quiet_coremltools
from xdsl_ane.dialects import mil

with quiet_coremltools():
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.converter import mil_convert
    from coremltools.converters.mil.mil import types as ct_types
    from coremltools.converters.mil.mil.builder import Builder
    from coremltools.converters.mil.mil.ops.registry import SSAOpRegistry
    from coremltools.proto import MIL_pb2


REDEFINED_IN_IOS18 = {"constexpr_lut_to_dense": "iOS16"}
"""Ops whose iOS18 form (which the dialect has) replaces an older one with
other inputs."""


def test_declared_inputs_match_coremltools_registry():
    """MIL input names and order per op (the op class's `MIL_INPUTS`) are
    coremltools' `input_spec`, every operand and property of the dialect is
    one, and each op exists in the deployment target its `OPSET` names."""
    for op in mil.MIL_OPS:
        if op is mil.ConstOp:
            continue
        op_type = op.name.removeprefix("mil.")
        declared = [d.name for d in op.MIL_INPUTS]
        if op_type == "coreml_update_state":  # coremltools' own dialect op
            cls = SSAOpRegistry.dialect_ops[op_type]
            assert declared == list(cls.input_spec.input_types)
            continue
        introduced_in = getattr(ct.target, op.OPSET)
        for target in (ct.target.iOS17, ct.target.iOS18):
            if target < introduced_in:
                continue
            cls = SSAOpRegistry.core_ops[op_type][target]
            assert declared == list(cls.input_spec.input_types), op_type
        # ML programs start at iOS15; older ops are registered from iOS13
        first = max(min(SSAOpRegistry.core_ops[op_type]), ct.target.iOS15)
        if op_type in REDEFINED_IN_IOS18:  # we have only the iOS18 form
            assert first.name == REDEFINED_IN_IOS18[op_type], op_type
        else:
            assert first.name == op.OPSET, op_type
        definition = op.get_irdl_definition()
        names = {n for n, _ in definition.operands} | set(definition.properties)
        names.discard("operandSegmentSizes")
        assert names <= set(declared), op.name


def test_proto_equals_coremltools_builder_program(monkeypatch):
    """The same program built with coremltools' own builder (every optional
    input in MIL's order) and exported by coremltools gives exactly our
    mlProgram and description."""
    text = """
func.func @f(%x: tensor<1x4x1x8xf16>, %i: tensor<1x8xi32>) {
  %m = mil.reduce_mean %x {axes = array<i64: 1>, keep_dims = true} : (tensor<1x4x1x8xf16>) -> tensor<1x1x1x8xf16>
  %r = mil.rsqrt %m : tensor<1x1x1x8xf16>
  %w = mil.const weight "proj" : tensor<6x4x1x1xf16>
  %c = mil.conv %x, %w : (tensor<1x4x1x8xf16>, tensor<6x4x1x1xf16>) -> tensor<1x6x1x8xf16>
  %s:2 = mil.split %c {axis = 1 : i64, num_splits = 2 : i64} : (tensor<1x6x1x8xf16>) -> (tensor<1x3x1x8xf16>, tensor<1x3x1x8xf16>)
  %sm = mil.softmax %s#0 {axis = 1 : i64} : tensor<1x3x1x8xf16>
  %g = mil.const dense<1.0> : tensor<4xf16>
  %ln = mil.layer_norm %x, gamma %g {axes = array<i64: 1>, epsilon = 1.0e-05 : f32} : (tensor<1x4x1x8xf16>, tensor<4xf16>) -> tensor<1x4x1x8xf16>
  %oh = mil.one_hot %i {one_hot_vector_size = 5 : i64, on_value = 1.0 : f16, off_value = 0.0 : f16} : (tensor<1x8xi32>) -> tensor<1x8x5xf16>
  %t = mil.transpose %x {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x1x8xf16>) -> tensor<1x4x8x1xf16>
  %sq = mil.reshape %t {shape = array<i64: 4, 8>} : (tensor<1x4x8x1xf16>) -> tensor<4x8xf16>
  %lw = mil.const dense<0.5> : tensor<12x8xf16>
  %lin = mil.linear %sq, %lw : (tensor<4x8xf16>, tensor<12x8xf16>) -> tensor<4x12xf16>
  func.return
}
"""
    module = program(text)
    proj = np.arange(24, dtype=np.float32).reshape(6, 4, 1, 1)
    ours = emit(module, {"proj": proj})

    monkeypatch.setattr(Builder, "name_count", defaultdict(int))
    fp16 = ct_types.fp16

    @mb.program(
        input_specs=[
            mb.TensorSpec(shape=(1, 4, 1, 8), dtype=fp16),
            mb.TensorSpec(shape=(1, 8), dtype=ct_types.int32),
        ],
        opset_version=ct.target.iOS18,
    )
    def prog(x, i):
        r = mb.rsqrt(
            x=mb.reduce_mean(x=x, axes=[1], keep_dims=True, name="m"), name="r"
        )
        w = mb.const(val=proj.astype(np.float16), name="w")
        s = mb.split(x=mb.conv(x=x, weight=w, name="c"), num_splits=2, axis=1, name="s")
        sm = mb.softmax(x=s[0], axis=1, name="sm")
        g = mb.const(val=np.ones(4, np.float16), name="g")
        ln = mb.layer_norm(x=x, axes=[1], gamma=g, epsilon=np.float16(1e-5), name="ln")
        oh = mb.one_hot(
            indices=i,
            one_hot_vector_size=5,
            axis=-1,
            on_value=np.float16(1),
            off_value=np.float16(0),
            name="oh",
        )
        t = mb.transpose(x=x, perm=[0, 1, 3, 2], name="t")
        sq = mb.reshape(x=t, shape=[4, 8], name="sq")
        lw = mb.const(val=np.full((12, 8), 0.5, np.float16), name="lw")
        lin = mb.linear(x=sq, weight=lw, name="lin")
        return r, s[1], sm, ln, oh, lin

    with quiet_coremltools():
        theirs = mil_convert(
            prog,
            convert_from="milinternal",
            convert_to="mlprogram",
            compute_units=ct.ComputeUnit.ALL,
            pass_pipeline=ct.PassPipeline.EMPTY,
            skip_model_load=True,
            specification_version=9,
        )
    assert ours.spec.mlProgram == theirs.get_spec().mlProgram
    assert ours.spec.description == theirs.get_spec().description
    theirs_blob = (Path(theirs.weights_dir) / "weight.bin").read_bytes()
    assert ours.weight_bytes() == theirs_blob


def test_compile_time_parameters_are_typed_consts_before_the_op():
    module = program(
        """
func.func @f(%x: tensor<1x4x1x8xf16>, %y: tensor<2x8xf32>) {
  %m = mil.reduce_mean %x {axes = array<i64: 1>, keep_dims = true} : (tensor<1x4x1x8xf16>) -> tensor<1x1x1x8xf16>
  %r = mil.rsqrt %m : tensor<1x1x1x8xf16>
  %l = mil.log %y {epsilon = 1.0e-03 : f32} : tensor<2x8xf32>
  %g = mil.gelu %x : tensor<1x4x1x8xf16>
  %s = mil.squeeze %x : (tensor<1x4x1x8xf16>) -> tensor<4x8xf16>
  func.return
}
"""
    )
    result = emit(module)
    names = [op.outputs[0].name for op in operations(result)]
    assert names == [
        "m_axes_0",
        "m_keep_dims_0",
        "m",
        "r_epsilon_0",
        "r",
        "l_epsilon_0",
        "l",
        "g_mode_0",
        "g",
        "s",
    ]
    axes = op_named(result, "m_axes_0").attributes["val"]
    assert axes.type.tensorType.dataType == MIL_pb2.INT32
    assert list(immediate(axes)) == [1]
    assert immediate(op_named(result, "m_keep_dims_0").attributes["val"]) == np.True_
    # an absent epsilon is MIL's default in x's dtype: fp16 bytes
    epsilon = op_named(result, "r_epsilon_0").attributes["val"]
    assert epsilon.type.tensorType.dataType == MIL_pb2.FLOAT16
    assert epsilon.immediateValue.tensor.bytes.values == np.float16(1e-12).tobytes()
    log_epsilon = op_named(result, "l_epsilon_0").attributes["val"]
    assert list(log_epsilon.immediateValue.tensor.floats.values) == [np.float32(1e-3)]
    assert immediate(op_named(result, "g_mode_0").attributes["val"]) == "EXACT"
    reduce = op_named(result, "m")
    assert reduce.inputs["axes"].arguments[0].name == "m_axes_0"
    assert reduce.inputs["x"].arguments[0].name == "x"
    assert set(op_named(result, "s").inputs) == {"x"}  # squeeze's axes: no default


def test_consts_of_ten_elements_go_to_the_blob_smaller_ones_inline():
    module = program(
        """
func.func @f(%x: tensor<10xf16>, %i: tensor<10xi32>, %b: tensor<10xi1>) {
  %small16 = mil.const dense<[1.0, -2.0, 0.5, 65504.0, 0.0, 1.0, 2.0, 3.0, 4.0]> : tensor<9xf16>
  %big16 = mil.const dense<1.5> : tensor<10xf16>
  %small32 = mil.const dense<[1.0, 2.5, 3.0, 4.0, 5.0]> : tensor<5xf32>
  %big32 = mil.const dense<0.25> : tensor<2x5xf32>
  %ints = mil.const dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]> : tensor<10xi32>
  %flags = mil.const dense<true> : tensor<10xi1>
  %a = mil.add %x, %big16 : (tensor<10xf16>, tensor<10xf16>) -> tensor<10xf16>
  %s = mil.slice_by_size %x {begin = array<i64: 0>, size = array<i64: 9>} : (tensor<10xf16>) -> tensor<9xf16>
  %a2 = mil.mul %s, %small16 : (tensor<9xf16>, tensor<9xf16>) -> tensor<9xf16>
  %c = mil.add %big32, %small32 : (tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %d = mil.add %i, %ints : (tensor<10xi32>, tensor<10xi32>) -> tensor<10xi32>
  %e = mil.select %flags, %x, %x : (tensor<10xi1>, tensor<10xf16>, tensor<10xf16>) -> tensor<10xf16>
  %f = mil.select %b, %x, %x : (tensor<10xi1>, tensor<10xf16>, tensor<10xf16>) -> tensor<10xf16>
  func.return
}
"""
    )

    def kind(result, name):
        return op_named(result, name).attributes["val"].WhichOneof("value")

    ios18 = emit(module)
    assert kind(ios18, "small16") == "immediateValue"
    small = op_named(ios18, "small16").attributes["val"].immediateValue.tensor
    assert (
        small.bytes.values
        == np.array([1.0, -2.0, 0.5, 65504.0, 0, 1, 2, 3, 4], "<f2").tobytes()
    )
    assert kind(ios18, "big16") == "blobFileValue"
    assert kind(ios18, "small32") == "immediateValue"
    assert kind(ios18, "big32") == "blobFileValue"
    assert kind(ios18, "ints") == "blobFileValue"  # int32 blobs from iOS18
    assert kind(ios18, "flags") == "immediateValue"  # bool never
    offsets = [
        op_named(ios18, n).attributes["val"].blobFileValue.offset
        for n in ("big16", "big32", "ints")
    ]
    assert offsets == [64, next_blob_offset(64, 20), next_blob_offset(192, 40)]
    ios17 = emit(module, target="iOS17")
    assert kind(ios17, "ints") == "immediateValue"
    ints = op_named(ios17, "ints").attributes["val"].immediateValue.tensor
    assert list(ints.ints.values) == list(range(10))


def test_fp32_weights_for_fp16_consts_are_converted():
    module = program(
        """
func.func @f(%x: tensor<1x8x1x4xf16>, %y: tensor<1x8x1x4xf32>) {
  %w16 = mil.const weight "w" {weight_shape = array<i64: 16, 8>} : tensor<16x8x1x1xf16>
  %w32 = mil.const weight "w" {weight_shape = array<i64: 16, 8>} : tensor<16x8x1x1xf32>
  %wt = mil.const weight "wt" {weight_shape = array<i64: 8, 16>, perm = array<i64: 1, 0>} : tensor<16x8x1x1xf16>
  %a = mil.conv %x, %w16 : (tensor<1x8x1x4xf16>, tensor<16x8x1x1xf16>) -> tensor<1x16x1x4xf16>
  %b = mil.conv %y, %w32 : (tensor<1x8x1x4xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x1x4xf32>
  %c = mil.conv %x, %wt : (tensor<1x8x1x4xf16>, tensor<16x8x1x1xf16>) -> tensor<1x16x1x4xf16>
  func.return
}
"""
    )
    w = np.linspace(-1, 1, 128, dtype=np.float32).reshape(16, 8)
    result = emit(module, {"w": w, "wt": w.T.copy()})
    w16 = op_named(result, "w16").attributes["val"]
    assert w16.type.tensorType.dataType == MIL_pb2.FLOAT16
    blob = result.weight_bytes()
    raw = read_blob(blob, w16.blobFileValue.offset, "fp16", 128)
    assert raw == w.astype("<f2").tobytes()
    w32 = op_named(result, "w32").attributes["val"]
    assert read_blob(blob, w32.blobFileValue.offset, "fp32", 128) == w.tobytes()
    # the transposed view has the same content as w16: one shared record
    wt = op_named(result, "wt").attributes["val"]
    assert wt.blobFileValue.offset != w16.blobFileValue.offset
    assert read_blob(blob, wt.blobFileValue.offset, "fp16", 128) == raw
