"""The protobuf's model description and names: input and output types from
the function's signature, bool and int8 I/O cast as coremltools does,
names from hints, weights and op types, and what cannot be printed.
"""

from __future__ import annotations

import pytest
from proto_check import (
    FLOAT16,
    FLOAT32,
    INT32,
    emit,
    op_named,
    operations,
    program,
    random_weights,
)

from xdsl_ane.backend.milproto import module_to_proto
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.mlir import parse_module_text


def test_description_types_match_the_signature():
    module = program(
        """
func.func @f(%h: tensor<1x4x1x8xf16>, %s: tensor<2x3xf32>, %i: tensor<5xi32>) {
  %a = mil.relu %h : tensor<1x4x1x8xf16>
  %b = mil.reduce_sum %s : (tensor<2x3xf32>) -> tensor<f32>
  %c = mil.abs %i : tensor<5xi32>
  func.return
}
"""
    )
    result = emit(module)
    description = result.spec.description
    inputs = [
        (f.name, f.type.multiArrayType.dataType, list(f.type.multiArrayType.shape))
        for f in description.input
    ]
    assert inputs == [
        ("h", FLOAT16, [1, 4, 1, 8]),
        ("s", FLOAT32, [2, 3]),
        ("i", INT32, [5]),
    ]
    outputs = [
        (f.name, f.type.multiArrayType.dataType, list(f.type.multiArrayType.shape))
        for f in description.output
    ]
    assert outputs == [
        ("a", FLOAT16, [1, 4, 1, 8]),
        ("b", FLOAT32, []),
        ("c", INT32, [5]),
    ]
    function = result.spec.mlProgram.functions["main"]
    assert [v.name for v in function.inputs] == ["h", "s", "i"]
    assert list(function.block_specializations["CoreML8"].outputs) == ["a", "b", "c"]


def test_bool_and_int8_model_io_are_cast_as_coremltools_does():
    module = program(
        """
func.func @f(%c: tensor<4xi1>, %q: tensor<4xi8>, %a: tensor<4xf16>) {
  %s = mil.select %c, %a, %a : (tensor<4xi1>, tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  %eq = mil.equal %s, %a : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xi1>
  %i = mil.cast %q {dtype = "int32"} : (tensor<4xi8>) -> tensor<4xi32>
  %q2 = mil.cast %i {dtype = "int8"} : (tensor<4xi32>) -> tensor<4xi8>
  func.return
}
"""
    )
    result = emit(module)
    description = result.spec.description
    assert [f.type.multiArrayType.dataType for f in description.input] == [
        FLOAT32,
        INT32,
        FLOAT16,
    ]
    assert [(f.name, f.type.multiArrayType.dataType) for f in description.output] == [
        ("eq", FLOAT32),
        ("q2", INT32),
    ]
    ops = [(op.type, op.outputs[0].name) for op in operations(result)]
    # input casts before the first op (the last input's first), output casts at the end
    assert ops[:4] == [
        ("const", "cast_1_dtype_0"),
        ("cast", "cast_1"),
        ("const", "cast_0_dtype_0"),
        ("cast", "cast_0"),
    ]
    assert ("equal", "eq__pre__output__fp32__cast") in ops
    assert ops[-1] == ("cast", "q2")
    assert op_named(result, "s").inputs["cond"].arguments[0].name == "cast_0"


def test_names_from_hints_weights_and_op_types():
    module = program(
        """
func.func @f(%0: tensor<2x8xf32>, %bool: tensor<2x8xf32>) {
  %1 = mil.relu %0 : tensor<2x8xf32>
  %2 = mil.relu %1 : tensor<2x8xf32>
  %w = mil.const weight "layers.0.q-proj" : tensor<2x8xf32>
  %3 = mil.const weight "layers.0.q-proj" : tensor<2x8xf32>
  %4 = mil.add %2, %3 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %relu_0 = mil.relu %bool : tensor<2x8xf32>
  %5 = mil.mul %4, %w : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %6 = mil.mul %5, %relu_0 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return
}
"""
    )
    result = emit(module, random_weights(module))
    function = result.spec.mlProgram.functions["main"]
    assert [v.name for v in function.inputs] == ["arg0", "bool_workaround"]
    assert [op.outputs[0].name for op in operations(result)] == [
        "relu_0",
        "relu_1",
        "w",
        "layers_0_q_proj",
        "add_0",
        "relu",  # xDSL drops the _0 of %relu_0
        "mul_0",
        "output",  # the returned value, without a hint, as torch names it
    ]


def test_unused_input_gets_coremltools_identity():
    module = program(
        """
func.func @f(%x: tensor<4xf32>, %unused: tensor<2xf16>) {
  %y = mil.relu %x : tensor<4xf32>
  func.return
}
"""
    )
    result = emit(module)
    last = operations(result)[-1]
    assert (last.type, last.outputs[0].name) == ("identity", "unused_tmp")
    assert last.inputs["x"].arguments[0].name == "unused"


def test_non_mil_ops_and_unavailable_ops_are_errors():
    module = parse_module_text(
        """
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = rlx.relu %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
""",
        "test",
    )
    with pytest.raises(XdslAneError, match="@f: rlx.relu is not a mil op"):
        module_to_proto(module)
