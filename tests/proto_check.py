"""Checking the MIL protobuf printer's output (xdsl_ane.backend), shared by
the test_proto_*.py files.

Every protobuf the tests emit goes through `emit`, which validates it:
coremltools' milproto loader rebuilds the program (MIL type inference on
every op), coremltools' own exporter writes it again and must give the same
program and description, and each const's data read back from weight.bin
with coremltools' `_BlobStorageReader` must equal the const's value as the
interpreter materializes it.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import FunctionType, TensorType

from xdsl_ane.backend.milproto import ProtoResult, module_to_proto
from xdsl_ane.backend.weights import BLOB_NUMPY_DTYPES, quiet_coremltools
from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import dense_to_numpy, numpy_dtype_of
from xdsl_ane.dialects.dtypes import DTYPES
from xdsl_ane.dialects.typing import ints_prop
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.weights.store import WeightStore

with quiet_coremltools():
    from coremltools.libmilstoragepython import _BlobStorageReader
    from coremltools.proto import MIL_pb2

FLOAT16, FLOAT32, INT32 = 65552, 65568, 131104
BLOB_DTYPE_CODES = {"fp16": 1, "fp32": 2, "int8": 4, "int32": 14}


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
    dtype = {getattr(MIL_pb2, d.proto): d.numpy for d in DTYPES if d.computes}[
        t.dataType
    ]
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
