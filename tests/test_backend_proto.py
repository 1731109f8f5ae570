"""The MIL protobuf printer, the weight blob, the `.mlpackage` writer and the
validator (xdsl_ane.backend).

Every protobuf emitted here goes through `emit`, which validates it:
coremltools' milproto loader rebuilds the program (MIL type inference on
every op), coremltools' own exporter writes it again and must give the same
program and description, and each const's data read back from weight.bin
with coremltools' `_BlobStorageReader` must equal the const's value as the
interpreter materializes it.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import FunctionType, TensorType
from xdsl.transforms.canonicalize import CanonicalizePass

from xdsl_ane.backend.milproto import (
    MilProtoTextTarget,
    ProtoResult,
    module_to_proto,
    module_to_protos,
)
from xdsl_ane.backend.validate import validate
from xdsl_ane.backend.weights import (
    BLOB_NUMPY_DTYPES,
    next_blob_offset,
    quiet_coremltools,
)
from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import dense_to_numpy, numpy_dtype_of
from xdsl_ane.dialects.typing import ints_prop
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.interpreter.core import WeightStore
from xdsl_ane.models.transformer import (
    QWEN3_0_6B,
    build_decoder_layer,
    make_weights,
)
from xdsl_ane.passes.ane_layout import MilAneLayoutPass
from xdsl_ane.passes.driver import make_context
from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass

with quiet_coremltools():
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.converter import mil_convert
    from coremltools.converters.mil.mil import types as ct_types
    from coremltools.converters.mil.mil.builder import Builder
    from coremltools.converters.mil.mil.ops.registry import SSAOpRegistry
    from coremltools.libmilstoragepython import _BlobStorageReader
    from coremltools.proto import MIL_pb2, Model_pb2

FLOAT16, FLOAT32, INT32 = 65552, 65568, 131104
BLOB_DTYPE_CODES = {"fp16": 1, "fp32": 2, "int8": 4, "int32": 14}


# --- helpers ---------------------------------------------------------------------


def program(text: str) -> builtin.ModuleOp:
    """Parses functions whose bodies end in `func.return` and makes each
    return every op result nothing else uses, so that no op is dead."""
    module = parse_module_text(text, "test")
    for f in module.walk():
        if not isinstance(f, func.FuncOp):
            continue
        block = f.body.block
        old = block.last_op
        assert isinstance(old, func.ReturnOp)
        if old.arguments:
            continue
        results = [
            r
            for op in block.ops
            if isinstance(op, mil.MilOp) and not isinstance(op, mil.ConstOp)
            for r in op.results
            if not r.uses
        ]
        block.insert_op_before(func.ReturnOp(*results), old)
        block.erase_op(old)
        f.function_type = FunctionType.from_lists(
            f.function_type.inputs.data, [r.type for r in results]
        )
    module.verify()
    return module


def random_weights(module: builtin.ModuleOp, seed: int = 0) -> dict[str, np.ndarray]:
    """Data for every weight const: fp32 for float consts (the printer
    converts it to the const's type), the const's dtype otherwise."""
    rng = np.random.default_rng(seed)
    weights = {}
    for op in module.walk():
        if isinstance(op, mil.ConstOp) and op.weight is not None:
            t = op.result.type
            assert isinstance(t, TensorType)
            shape = op.file_shape()
            dtype = numpy_dtype_of(t.element_type)
            if dtype.kind == "f":
                weights[op.weight.data] = rng.standard_normal(shape).astype(np.float32)
            else:
                weights[op.weight.data] = rng.integers(-100, 100, shape).astype(dtype)
    return weights


def emit(
    module: builtin.ModuleOp, weights: dict[str, np.ndarray] | None = None, **kwargs
) -> ProtoResult:
    """Prints, validates (load + re-export, no findings) and checks the
    blob against every const's materialized value."""
    result = module_to_proto(module, weights, **kwargs)
    report = result.validate()
    assert report.ok, str(report)
    check_consts(result, module, weights or {})
    return result


def operations(result: ProtoResult, function: str = "main") -> list:
    f = result.spec.mlProgram.functions[function]
    return list(f.block_specializations[f.opset].operations)


def op_named(result: ProtoResult, name: str, function: str = "main"):
    for op in operations(result, function):
        if op.attributes["name"].immediateValue.tensor.strings.values[0] == name:
            return op
    raise KeyError(name)


def immediate(value) -> np.ndarray | str:
    """An immediate MIL value as numpy (strings as str)."""
    tensor = value.immediateValue.tensor
    t = value.type.tensorType
    shape = [d.constant.size for d in t.dimensions]
    kind = tensor.WhichOneof("value")
    if kind == "strings":
        return tensor.strings.values[0]
    dtype = {
        MIL_pb2.FLOAT16: np.float16,
        MIL_pb2.FLOAT32: np.float32,
        MIL_pb2.INT32: np.int32,
        MIL_pb2.INT8: np.int8,
        MIL_pb2.BOOL: np.bool_,
    }[t.dataType]
    if kind == "bytes":
        return np.frombuffer(tensor.bytes.values, dtype).reshape(shape)
    return np.array(list(getattr(tensor, kind).values), dtype).reshape(shape)


def read_blob(blob: bytes, offset: int, dtype: str, count: int) -> bytes:
    """The data of the record at `offset`, checking its metadata by hand."""
    sentinel, code, size, data_offset = struct.unpack_from("<IIQQ", blob, offset)
    assert sentinel == 0xDEADBEEF
    assert code == BLOB_DTYPE_CODES[dtype]
    assert size == count * BLOB_NUMPY_DTYPES[dtype].itemsize
    assert data_offset == offset + 64
    return blob[data_offset : data_offset + size]


def check_consts(
    result: ProtoResult, module: builtin.ModuleOp, weights: dict[str, np.ndarray]
) -> None:
    """Every printed const's value, read back from the proto or the blob
    (with coremltools' reader and byte for byte), equals its value as the
    interpreter materializes it."""
    if not result.blob.entries:
        return
    blob = result.weight_bytes()
    count, version = struct.unpack_from("<II", blob, 0)
    assert (count, version) == (len(result.blob.entries), 2)
    store = WeightStore(weights)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "weight.bin"
        path.write_bytes(blob)
        reader = _BlobStorageReader(str(path))
        for op in module.walk():
            if not isinstance(op, mil.ConstOp) or op.result not in result.value_names:
                continue
            name = result.value_names[op.result]
            f = op.parent_op()
            assert isinstance(f, func.FuncOp)
            proto = op_named(result, name, result.function_names[f.sym_name.data])
            t = op.result.type
            assert isinstance(t, TensorType)
            if op.val is not None:
                expected = dense_to_numpy(op.val)
            else:
                assert op.weight is not None
                expected = store.get(
                    op.weight.data,
                    t,
                    op.name,
                    op.file_shape(),
                    ints_prop(op.properties, "perm"),
                )
            val = proto.attributes["val"]
            if val.WhichOneof("value") == "immediateValue":
                np.testing.assert_array_equal(immediate(val), expected)
                continue
            dtype = {np.float16: "fp16", np.float32: "fp32", np.int8: "int8"}.get(
                expected.dtype.type, "int32"
            )
            offset = val.blobFileValue.offset
            assert val.blobFileValue.fileName == "@model_path/weights/weight.bin"
            raw = read_blob(blob, offset, dtype, expected.size)
            assert raw == expected.astype(expected.dtype.newbyteorder("<")).tobytes()
            read = {
                "fp16": lambda o: reader.read_fp16_data(o).view(np.float16),
                "fp32": reader.read_float_data,
                "int8": reader.read_int8_data,
                "int32": reader.read_int32_data,
            }[dtype](offset)
            np.testing.assert_array_equal(
                np.asarray(read).reshape(expected.shape), expected
            )


# --- one program per mil op family -------------------------------------------------

FAMILIES = {
    "state": """
func.func @state(%cache: !mil.state<tensor<2x4x8xf16>>, %u: tensor<1x4x2xf16>, %begin: tensor<3xi32>, %x: tensor<2x16xf32>) {
  %old = mil.read_state %cache : (!mil.state<tensor<2x4x8xf16>>) -> tensor<2x4x8xf16>
  %size = mil.const dense<[1, 4, 2]> : tensor<3xi32>
  %end = mil.add %begin, %size : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %new = mil.slice_update %old, %u, %begin, %end : (tensor<2x4x8xf16>, tensor<1x4x2xf16>, tensor<3xi32>, tensor<3xi32>) -> tensor<2x4x8xf16>
  %unused = mil.coreml_update_state %cache, %new : (!mil.state<tensor<2x4x8xf16>>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %again = mil.read_state %cache : (!mil.state<tensor<2x4x8xf16>>) -> tensor<2x4x8xf16>
  %stored = mil.coreml_update_state %cache, %again : (!mil.state<tensor<2x4x8xf16>>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %token = mil.reduce_argmax %stored {axis = -1 : i64} : (tensor<2x4x8xf16>) -> tensor<2x4xi32>
  %rows = mil.reduce_argmax %x {axis = 0 : i64, keep_dims = true} : (tensor<2x16xf32>) -> tensor<1x16xi32>
  func.return
}
""",
    "elementwise_unary": """
func.func @unary(%x: tensor<2x8xf32>, %h: tensor<1x4x1x8xf16>, %n: tensor<3xi32>) {
  %relu = mil.relu %x : tensor<2x8xf32>
  %sigmoid = mil.sigmoid %h : tensor<1x4x1x8xf16>
  %tanh = mil.tanh %x : tensor<2x8xf32>
  %exp = mil.exp %h : tensor<1x4x1x8xf16>
  %sqrt = mil.sqrt %x : tensor<2x8xf32>
  %sin = mil.sin %x : tensor<2x8xf32>
  %cos = mil.cos %x : tensor<2x8xf32>
  %silu = mil.silu %h : tensor<1x4x1x8xf16>
  %round = mil.round %x : tensor<2x8xf32>
  %floor = mil.floor %x : tensor<2x8xf32>
  %ceil = mil.ceil %x : tensor<2x8xf32>
  %erf = mil.erf %x : tensor<2x8xf32>
  %abs = mil.abs %n : tensor<3xi32>
  %square = mil.square %n : tensor<3xi32>
  %log = mil.log %x : tensor<2x8xf32>
  %log_h = mil.log %h {epsilon = 1.0e-07 : f32} : tensor<1x4x1x8xf16>
  %rsqrt = mil.rsqrt %h : tensor<1x4x1x8xf16>
  %inverse = mil.inverse %x {epsilon = 1.0e-02 : f32} : tensor<2x8xf32>
  %gelu = mil.gelu %h : tensor<1x4x1x8xf16>
  %gelu_tanh = mil.gelu %x {mode = "TANH_APPROXIMATION"} : tensor<2x8xf32>
  %clip = mil.clip %h {alpha = -1.0 : f32, beta = 6.0 : f32} : tensor<1x4x1x8xf16>
  func.return
}
""",
    "elementwise_binary": """
func.func @binary(%x: tensor<2x8xf32>, %row: tensor<8xf32>, %col: tensor<2x1xf32>, %i: tensor<4xi32>, %h: tensor<2x8xf16>, %c: tensor<2x8xi1>) {
  %two = mil.const dense<2.0> : tensor<f32>
  %ones = mil.const dense<1> : tensor<4xi32>
  %add = mil.add %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %sub = mil.sub %col, %row : (tensor<2x1xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %mul = mil.mul %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %real_div = mil.real_div %x, %col : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %maximum = mil.maximum %i, %ones : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %minimum = mil.minimum %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %pow = mil.pow %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %equal = mil.equal %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %not_equal = mil.not_equal %i, %ones : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %less = mil.less %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %less_equal = mil.less_equal %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  %greater = mil.greater %row, %x : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  %greater_equal = mil.greater_equal %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %select = mil.select %c, %x, %row : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %to_fp16 = mil.cast %x {dtype = "fp16"} : (tensor<2x8xf32>) -> tensor<2x8xf16>
  %to_fp32 = mil.cast %h {dtype = "fp32"} : (tensor<2x8xf16>) -> tensor<2x8xf32>
  %to_int32 = mil.cast %x {dtype = "int32"} : (tensor<2x8xf32>) -> tensor<2x8xi32>
  %to_bool = mil.cast %i {dtype = "bool"} : (tensor<4xi32>) -> tensor<4xi1>
  func.return
}
""",
    "linear": """
func.func @linear(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>, %x: tensor<2x16x8xf16>, %xs: tensor<1x8x1x16xf16>, %img: tensor<2x4x9x9xf32>, %w_dyn: tensor<6x4x3x3xf32>) {
  %matmul = mil.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %matmul_t = mil.matmul %b, %a {transpose_x = true, transpose_y = true} : (tensor<4x5xf32>, tensor<2x3x4xf32>) -> tensor<2x5x3xf32>
  %w = mil.const weight "fc.weight" : tensor<12x8xf16>
  %bias = mil.const weight "fc.bias" : tensor<12xf16>
  %linear = mil.linear %x, %w, bias %bias : (tensor<2x16x8xf16>, tensor<12x8xf16>, tensor<12xf16>) -> tensor<2x16x12xf16>
  %linear_default_bias = mil.linear %x, %w : (tensor<2x16x8xf16>, tensor<12x8xf16>) -> tensor<2x16x12xf16>
  %proj = mil.const weight "proj" {weight_shape = array<i64: 32, 8>} : tensor<32x8x1x1xf16>
  %pointwise = mil.conv %xs, %proj : (tensor<1x8x1x16xf16>, tensor<32x8x1x1xf16>) -> tensor<1x32x1x16xf16>
  %same = mil.conv %img, %w_dyn {pad_type = "same", strides = array<i64: 2, 2>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x5xf32>
  %custom = mil.conv %img, %w_dyn {pad_type = "custom", pad = array<i64: 1, 0, 2, 2>, strides = array<i64: 1, 3>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x8x4xf32>
  %wd = mil.const weight "dilated" : tensor<6x4x3x3xf32>
  %dilated = mil.conv %img, %wd {dilations = array<i64: 2, 3>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x3xf32>
  %wg = mil.const weight "grouped" : tensor<6x2x3x3xf32>
  %gb = mil.const dense<0.5> : tensor<6xf32>
  %grouped = mil.conv %img, %wg, bias %gb {groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x7x7xf32>
  func.return
}
""",
    "shape": """
func.func @shape(%x: tensor<2x3x4xf32>, %y: tensor<1x64x1x80xf16>, %a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %s: tensor<1x4x1x6xf16>, %img: tensor<1x8x4x6xf32>) {
  %flat = mil.reshape %x {shape = array<i64: -1, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %keep = mil.reshape %x {shape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<3x8xf32>
  %transpose = mil.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %act = mil.slice_by_size %y {begin = array<i64: 0, 0, 0, 0>, size = array<i64: 1, 64, 1, 16>} : (tensor<1x64x1x80xf16>) -> tensor<1x64x1x16xf16>
  %rest = mil.slice_by_size %y {begin = array<i64: 0, 8, 0, 16>, size = array<i64: -1, 8, -1, -1>} : (tensor<1x64x1x80xf16>) -> tensor<1x8x1x64xf16>
  %concat = mil.concat %a, %b, %a {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  %interleave = mil.concat %a, %a {axis = 0 : i64, interleave = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %tile = mil.tile %a {reps = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<4x9xf32>
  %expand = mil.expand_dims %a {axes = array<i64: 0, -1>} : (tensor<2x3xf32>) -> tensor<1x2x3x1xf32>
  %squeeze_all = mil.squeeze %s : (tensor<1x4x1x6xf16>) -> tensor<4x6xf16>
  %squeeze_one = mil.squeeze %s {axes = array<i64: -2>} : (tensor<1x4x1x6xf16>) -> tensor<1x4x6xf16>
  %even:3 = mil.split %s {axis = 3 : i64, num_splits = 3 : i64} : (tensor<1x4x1x6xf16>) -> (tensor<1x4x1x2xf16>, tensor<1x4x1x2xf16>, tensor<1x4x1x2xf16>)
  %sizes:2 = mil.split %a {axis = -1 : i64, split_sizes = array<i64: 1, 2>} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
  %shuffled = mil.pixel_shuffle %img {upscale_factor = 2 : i64} : (tensor<1x8x4x6xf32>) -> tensor<1x2x8x12xf32>
  %unshuffled = mil.pixel_unshuffle %img {downscale_factor = 2 : i64} : (tensor<1x8x4x6xf32>) -> tensor<1x32x2x3xf32>
  %shuffled16 = mil.pixel_shuffle %y {upscale_factor = 4 : i64} : (tensor<1x64x1x80xf16>) -> tensor<1x4x4x320xf16>
  func.return
}
""",
    "indexing": """
func.func @indexing(%ids: tensor<2x8xi32>, %x: tensor<2x3x4xf32>, %idx: tensor<2x5xi32>, %labels: tensor<4xi32>, %scores: tensor<1x4x8x8xf16>) {
  %table = mil.const weight "embed" : tensor<100x16xf16>
  %embed = mil.gather %table, %ids : (tensor<100x16xf16>, tensor<2x8xi32>) -> tensor<2x8x16xf16>
  %batched = mil.gather %x, %idx {axis = 2 : i64, batch_dims = 1 : i64, validate_indices = true} : (tensor<2x3x4xf32>, tensor<2x5xi32>) -> tensor<2x3x5xf32>
  %one_hot = mil.one_hot %labels {one_hot_vector_size = 10 : i64} : (tensor<4xi32>) -> tensor<4x10xi32>
  %one_hot_fp16 = mil.one_hot %labels {one_hot_vector_size = 10 : i64, on_value = 1.0 : f16, off_value = 0.0 : f16} : (tensor<4xi32>) -> tensor<4x10xf16>
  %one_hot_on = mil.one_hot %labels {one_hot_vector_size = 5 : i64, axis = 0 : i64, on_value = 2.5 : f32} : (tensor<4xi32>) -> tensor<5x4xf32>
  %one_hot_bool = mil.one_hot %labels {one_hot_vector_size = 5 : i64, on_value = true, off_value = false} : (tensor<4xi32>) -> tensor<4x5xi1>
  %band = mil.band_part %scores {lower = -1 : i64, upper = 0 : i64} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %band_all = mil.band_part %scores : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  func.return
}
""",
    "reduction": """
func.func @reduction(%x: tensor<2x3x4xf32>, %i: tensor<5x6xi32>, %h: tensor<1x16x1x8xf16>) {
  %sum = mil.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %mean = mil.reduce_mean %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %max = mil.reduce_max %x : (tensor<2x3x4xf32>) -> tensor<f32>
  %min = mil.reduce_min %i {axes = array<i64: 0, 1>, keep_dims = true} : (tensor<5x6xi32>) -> tensor<1x1xi32>
  %prod = mil.reduce_prod %i {axes = array<i64: 0>} : (tensor<5x6xi32>) -> tensor<6xi32>
  %lse = mil.reduce_log_sum_exp %x {axes = array<i64: 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %softmax = mil.softmax %h {axis = 1 : i64} : tensor<1x16x1x8xf16>
  %softmax_last = mil.softmax %x : tensor<2x3x4xf32>
  %gamma = mil.const weight "ln.gamma" : tensor<16xf16>
  %beta = mil.const weight "ln.beta" : tensor<16xf16>
  %ln = mil.layer_norm %h, gamma %gamma, beta %beta {axes = array<i64: 1>, epsilon = 1.0e-05 : f32} : (tensor<1x16x1x8xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<1x16x1x8xf16>
  %g2 = mil.const dense<1.0> : tensor<3x4xf32>
  %gamma_only = mil.layer_norm %x, gamma %g2 {axes = array<i64: -1, 1>} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %b32 = mil.const dense<0.5> : tensor<16xf32>
  %beta_only = mil.layer_norm %h, beta %b32 {axes = array<i64: 1>} : (tensor<1x16x1x8xf16>, tensor<16xf32>) -> tensor<1x16x1x8xf16>
  %plain = mil.layer_norm %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %cumsum = mil.cumsum %x : tensor<2x3x4xf32>
  %cumsum_ids = mil.cumsum %i {axis = -1 : i64, exclusive = true} : tensor<5x6xi32>
  %cumsum_back = mil.cumsum %h {axis = 3 : i64, exclusive = true, reverse = true} : tensor<1x16x1x8xf16>
  %top:2 = mil.topk %x {k = 2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi32>)
  %sorted:2 = mil.topk %h {k = 8 : i64, axis = 3 : i64, ascending = true} : (tensor<1x16x1x8xf16>) -> (tensor<1x16x1x8xf16>, tensor<1x16x1x8xi32>)
  %top_id:2 = mil.topk %i {axis = 0 : i64} : (tensor<5x6xi32>) -> (tensor<1x6xi32>, tensor<1x6xi32>)
  %order = mil.argsort %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xi32>
  %order_up = mil.argsort %h {axis = 3 : i64, ascending = true} : (tensor<1x16x1x8xf16>) -> tensor<1x16x1x8xi32>
  %order_ids = mil.argsort %i {axis = 0 : i64} : (tensor<5x6xi32>) -> tensor<5x6xi32>
  func.return
}
""",
    "quantization": """
func.func @quantization(%x: tensor<1x4x1x8xf16>, %q: tensor<4x8xi8>, %y: tensor<1x8x1x4xf16>) {
  %scale = mil.const dense<0.05> : tensor<f16>
  %zp = mil.const dense<3> : tensor<i8>
  %quantized = mil.quantize %x, zero_point %zp, %scale {output_dtype = "int8"} : (tensor<1x4x1x8xf16>, tensor<i8>, tensor<f16>) -> tensor<1x4x1x8xi8>
  %channel_scale = mil.const dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf16>
  %per_channel = mil.quantize %x, %channel_scale {axis = 1 : i64, output_dtype = "int8"} : (tensor<1x4x1x8xf16>, tensor<4xf16>) -> tensor<1x4x1x8xi8>
  %scale32 = mil.const dense<0.5> : tensor<f32>
  %dequantized = mil.dequantize %q, zero_point %zp, %scale32 : (tensor<4x8xi8>, tensor<i8>, tensor<f32>) -> tensor<4x8xf32>
  %channel_zp = mil.const dense<[0, 1, 2, 3]> : tensor<4xi8>
  %per_row = mil.dequantize %q, zero_point %channel_zp, %channel_scale {axis = 0 : i64} : (tensor<4x8xi8>, tensor<4xi8>, tensor<4xf16>) -> tensor<4x8xf16>
  %data = mil.const weight "w.int8" : tensor<8x4x1x1xi8>
  %wzp = mil.const dense<0> : tensor<i8>
  %wscale = mil.const dense<0.01> : tensor<f16>
  %w = mil.constexpr_affine_dequantize %data, %wzp, %wscale {axis = 0 : i64} : (tensor<8x4x1x1xi8>, tensor<i8>, tensor<f16>) -> tensor<8x4x1x1xf16>
  %conv = mil.conv %x, %w : (tensor<1x4x1x8xf16>, tensor<8x4x1x1xf16>) -> tensor<1x8x1x8xf16>
  %inline8 = mil.const dense<[1, -2, 3]> : tensor<3xi8>
  %blob8 = mil.const dense<7> : tensor<2x8xi8>
  %cast8 = mil.cast %inline8 {dtype = "int32"} : (tensor<3xi8>) -> tensor<3xi32>
  %deq8 = mil.dequantize %blob8, %scale32 : (tensor<2x8xi8>, tensor<f32>) -> tensor<2x8xf32>
  func.return
}
""",
    "compressed": """
func.func @compressed(%x: tensor<1x16x1x4xf16>) {
  %data = mil.const dense<[[-8, 7, 1, 0, 2, 3, -1, -2, 4, 5, 6, -3, -4, -5, -6, -7], [0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1]]> : tensor<2x16xi4>
  %scale = mil.const dense<[[0.5, 0.25, 0.125, 1.0], [1.0, 2.0, 0.5, 0.75]]> : tensor<2x4xf16>
  %blocks = mil.constexpr_blockwise_shift_scale %data, %scale : (tensor<2x16xi4>, tensor<2x4xf16>) -> tensor<2x16xf16>
  %u8 = mil.const dense<[[200, 3], [0, 255]]> : tensor<2x2xui8>
  %zero = mil.const dense<[[128], [128]]> : tensor<2x1xui8>
  %one = mil.const dense<[[0.5], [1.0]]> : tensor<2x1xf32>
  %shifted = mil.constexpr_blockwise_shift_scale %u8, %one, offset %zero : (tensor<2x2xui8>, tensor<2x1xf32>, tensor<2x1xui8>) -> tensor<2x2xf32>
  %indices = mil.const dense<[[[[1]], [[2]], [[3]], [[0]]], [[[3]], [[3]], [[0]], [[1]]], [[[0]], [[0]], [[1]], [[2]]], [[[2]], [[1]], [[0]], [[3]]]]> : tensor<4x4x1x1xui2>
  %lut = mil.const dense<[[[[[[0.0], [1.0], [2.0], [3.0]]]]], [[[[[-1.0], [-2.0], [-3.0], [-4.0]]]]]]> : tensor<2x1x1x1x4x1xf16>
  %w = mil.constexpr_lut_to_dense %indices, %lut : (tensor<4x4x1x1xui2>, tensor<2x1x1x1x4x1xf16>) -> tensor<4x4x1x1xf16>
  %rows = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 0>, size = array<i64: 1, 4, 1, 4>} : (tensor<1x16x1x4xf16>) -> tensor<1x4x1x4xf16>
  %conv = mil.conv %rows, %w : (tensor<1x4x1x4xf16>, tensor<4x4x1x1xf16>) -> tensor<1x4x1x4xf16>
  %vindices = mil.const dense<[[1, 0, 3], [2, 2, 1]]> : tensor<2x3xui2>
  %vlut = mil.const dense<[[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]]]> : tensor<1x1x4x2xf16>
  %vector = mil.constexpr_lut_to_dense %vindices, %vlut {vector_axis = 0 : i64} : (tensor<2x3xui2>, tensor<1x1x4x2xf16>) -> tensor<4x3xf16>
  func.return
}
""",
    "resampling": """
func.func @resampling(%x: tensor<1x3x4x5xf32>, %h: tensor<1x3x4x5xf16>, %s: tensor<1x3x5xf16>) {
  %nearest = mil.upsample_nearest_neighbor %x {scale_factor_height = 2 : i64, scale_factor_width = 3 : i64} : (tensor<1x3x4x5xf32>) -> tensor<1x3x8x15xf32>
  %bilinear = mil.upsample_bilinear %h {scale_factor_height = 2 : i64, scale_factor_width = 2 : i64, align_corners = false} : (tensor<1x3x4x5xf16>) -> tensor<1x3x8x10xf16>
  %corners = mil.upsample_bilinear %s {scale_factor_width = 2 : i64} : (tensor<1x3x5xf16>) -> tensor<1x3x10xf16>
  %constant = mil.pad %x {pad = array<i64: 1, 0, 2, 3>, constant_val = -1.5 : f32} : (tensor<1x3x4x5xf32>) -> tensor<1x3x5x10xf32>
  %reflect = mil.pad %h {pad = array<i64: 1, 2, 3, 4>, mode = "reflect"} : (tensor<1x3x4x5xf16>) -> tensor<1x3x7x12xf16>
  %replicate = mil.pad %s {pad = array<i64: 0, 5>, mode = "replicate"} : (tensor<1x3x5xf16>) -> tensor<1x3x10xf16>
  %leaky = mil.leaky_relu %h {alpha = 0.2 : f32} : tensor<1x3x4x5xf16>
  %elu = mil.elu %x {alpha = 1.0 : f32} : tensor<1x3x4x5xf32>
  %hard = mil.sigmoid_hard %h {alpha = 0.16666667 : f32, beta = 0.5 : f32} : tensor<1x3x4x5xf16>
  func.return
}
""",
    "vision": """
func.func @vision(%x: tensor<1x4x7x6xf32>, %h: tensor<1x4x7x6xf16>, %s: tensor<2x6x5xf16>) {
  %max = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "valid"} : (tensor<1x4x7x6xf32>) -> tensor<1x4x3x2xf32>
  %max_ceil = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x4x7x6xf32>) -> tensor<1x4x4x4xf32>
  %avg = mil.avg_pool %h {kernel_sizes = array<i64: 2, 3>, strides = array<i64: 1, 3>, pad_type = "same_lower"} : (tensor<1x4x7x6xf16>) -> tensor<1x4x7x2xf16>
  %avg_excl = mil.avg_pool %s {kernel_sizes = array<i64: 4>, strides = array<i64: 3>, pad_type = "same", exclude_padding_from_average = true} : (tensor<2x6x5xf16>) -> tensor<2x6x2xf16>
  %mean = mil.const dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %var = mil.const dense<[1.0, 2.0, 0.5, 0.25]> : tensor<4xf32>
  %bn = mil.batch_norm %x, %mean, %var, gamma %var, beta %mean {epsilon = 1.0e-03 : f32} : (tensor<1x4x7x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x7x6xf32>
  %mean16 = mil.const dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf16>
  %var16 = mil.const dense<[1.0, 2.0, 0.5, 0.25]> : tensor<4xf16>
  %bn_plain = mil.batch_norm %h, %mean16, %var16 : (tensor<1x4x7x6xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<1x4x7x6xf16>
  %in = mil.instance_norm %x, gamma %var, beta %mean : (tensor<1x4x7x6xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x7x6xf32>
  %in_plain = mil.instance_norm %h : (tensor<1x4x7x6xf16>) -> tensor<1x4x7x6xf16>
  %w = mil.const weight "up.weight" : tensor<4x3x3x2xf32>
  %b = mil.const dense<0.5> : tensor<3xf32>
  %up = mil.conv_transpose %x, %w : (tensor<1x4x7x6xf32>, tensor<4x3x3x2xf32>) -> tensor<1x3x9x7xf32>
  %up_custom = mil.conv_transpose %x, %w, bias %b {pad = array<i64: 1, 0, 0, 2>, pad_type = "custom", strides = array<i64: 2, 3>} : (tensor<1x4x7x6xf32>, tensor<4x3x3x2xf32>, tensor<3xf32>) -> tensor<1x3x14x15xf32>
  %ws = mil.const weight "up.grouped" : tensor<6x2x3xf16>
  %up_same = mil.conv_transpose %s, %ws {pad_type = "same", strides = array<i64: 2>, dilations = array<i64: 2>, groups = 3 : i64} : (tensor<2x6x5xf16>, tensor<6x2x3xf16>) -> tensor<2x6x10xf16>
  func.return
}
""",
}


IOS18_FAMILIES = {"state", "compressed"}


@pytest.mark.parametrize("target", ["iOS18", "iOS17"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_op_family_round_trips_through_coremltools(family: str, target: str):
    if family in IOS18_FAMILIES and target != "iOS18":
        pytest.skip(f"{family} ops are iOS18 ops")
    module = program(FAMILIES[family])
    result = emit(module, random_weights(module), target=target)
    version, opset = {"iOS18": (9, "CoreML8"), "iOS17": (8, "CoreML7")}[target]
    assert result.spec.specificationVersion == version
    assert result.spec.mlProgram.version == 1
    function = result.spec.mlProgram.functions["main"]
    assert function.opset == opset
    assert list(function.block_specializations) == [opset]
    for op in operations(result):
        assert op.attributes["name"].immediateValue.tensor.strings.values[0]


def test_every_mil_op_is_covered_by_a_family_program():
    printed = set()
    for text in FAMILIES.values():
        for op in program(text).walk():
            if isinstance(op, mil.MilOp):
                printed.add(op.name)
    assert printed == {op.name for op in mil.MIL_OPS}


# --- what coremltools writes -----------------------------------------------------


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


def test_int8_consts_and_constexpr_inputs():
    module = program(FAMILIES["quantization"])
    weights = random_weights(module)
    result = emit(module, weights)
    inline8 = op_named(result, "inline8").attributes["val"]
    assert inline8.type.tensorType.dataType == MIL_pb2.INT8
    assert inline8.immediateValue.tensor.bytes.values == bytes([1, 254, 3])
    assert (
        op_named(result, "blob8").attributes["val"].WhichOneof("value")
        == "blobFileValue"
    )
    # constexpr_affine_dequantize carries its inputs as attributes, and the
    # consts that feed only it are not written (as coremltools does)
    constexpr = op_named(result, "w")
    assert not constexpr.inputs
    assert set(constexpr.attributes) == {
        "name",
        "quantized_data",
        "zero_point",
        "scale",
        "axis",
    }
    names = {op.outputs[0].name for op in operations(result)}
    assert not {"data", "wzp", "wscale"} & names
    data = constexpr.attributes["quantized_data"]
    assert data.type.tensorType.dataType == MIL_pb2.INT8
    raw = read_blob(result.weight_bytes(), data.blobFileValue.offset, "int8", 32)
    assert raw == weights["w.int8"].tobytes()
    assert immediate(constexpr.attributes["axis"]) == 0


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


# --- whole models ----------------------------------------------------------------

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


# --- signature and description ---------------------------------------------------


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


# --- weights errors and files ----------------------------------------------------

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


# --- the validator ---------------------------------------------------------------


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
