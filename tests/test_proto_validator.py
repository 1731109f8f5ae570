"""The validator (`xdsl_ane.backend.validate`): a protobuf mutated in each
way it can go wrong is reported naming what is wrong and where.
"""

from __future__ import annotations

from pathlib import Path

from proto_check import FLOAT32, emit, program, random_weights

from xdsl_ane.backend.milproto import ProtoResult
from xdsl_ane.backend.validate import validate
from xdsl_ane.backend.weights import quiet_coremltools

with quiet_coremltools():
    from coremltools.proto import MIL_pb2, Model_pb2


def mutated(result: ProtoResult, change) -> Model_pb2.Model:
    spec = Model_pb2.Model()
    spec.CopyFrom(result.spec)
    f = spec.mlProgram.functions["main"]
    change(spec, f.block_specializations[f.opset].operations)
    return spec


def findings(result: ProtoResult, spec: Model_pb2.Model, tmp_path: Path) -> list[str]:
    result.write_weights(tmp_path / "weights")
    return [str(f) for f in validate(spec, tmp_path / "weights").findings]


def test_validator_reports_what_is_wrong_and_where(tmp_path: Path):
    module = program(
        """
func.func @f(%x: tensor<1x8x1x4xf16>) {
  %w = mil.const weight "proj" {weight_shape = array<i64: 16, 8>} : tensor<16x8x1x1xf16>
  %y = mil.conv %x, %w : (tensor<1x8x1x4xf16>, tensor<16x8x1x1xf16>) -> tensor<1x16x1x4xf16>
  %m = mil.reduce_mean %y {axes = array<i64: 1>, keep_dims = true} : (tensor<1x16x1x4xf16>) -> tensor<1x1x1x4xf16>
  %s = mil.softmax %m {axis = 3 : i64} : tensor<1x1x1x4xf16>
  func.return
}
"""
    )
    result = emit(module, random_weights(module))

    def wrong_shape(spec, ops):
        conv = next(op for op in ops if op.type == "conv")
        conv.outputs[0].type.tensorType.dimensions[1].constant.size = 15

    assert findings(result, mutated(result, wrong_shape), tmp_path) == [
        "[load] @main conv 'y': AssertionError: Mismatch between var types in "
        "specification vs PyMIL"
    ]

    def no_groups(spec, ops):
        del next(op for op in ops if op.type == "conv").inputs["groups"]

    assert findings(result, mutated(result, no_groups), tmp_path)[-1] == (
        "[reexport] @main ops[6] conv 'y': coremltools' re-export has const "
        "'y_groups_0' here"
    )

    def duplicate(spec, ops):
        ops[-1].outputs[0].name = "m"
        spec.mlProgram.functions["main"].block_specializations["CoreML8"].outputs[0] = (
            "m"
        )
        spec.description.output[0].name = "m"

    assert "[names] @main: value name 'm' is defined 2 times" in findings(
        result, mutated(result, duplicate), tmp_path
    )

    def description(spec, ops):
        spec.description.output[0].type.multiArrayType.dataType = FLOAT32
        spec.description.input[0].name = "input"

    found = findings(result, mutated(result, description), tmp_path)
    assert (
        "[description] @main inputs: described as ['input'], the function has ['x']"
        in found
    )
    assert (
        "[description] @main outputs 's': described as FLOAT32, the function's type is "
        "FLOAT16"
    ) in found

    def softmax_axis(spec, ops):
        axis = next(op for op in ops if op.outputs[0].name == "s_axis_0")
        axis.attributes["val"].immediateValue.tensor.ints.values[0] = 4

    assert (
        "[semantics] @main softmax 's': axis 4 is out of range for rank 4"
        in findings(result, mutated(result, softmax_axis), tmp_path)
    )

    def const_type(spec, ops):
        ops[0].outputs[0].type.tensorType.dataType = MIL_pb2.FLOAT32

    assert (
        "[structure] @main const 'w': declared type differs from its value's type"
        in findings(result, mutated(result, const_type), tmp_path)
    )

    def opset(spec, ops):
        spec.specificationVersion = 8

    assert any(
        "does not go with specification version 8" in f
        for f in findings(result, mutated(result, opset), tmp_path)
    )
    assert validate(result.spec, tmp_path / "missing").findings[0].check == "structure"
