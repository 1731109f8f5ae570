"""MIL protobuf values, types and names, as coremltools' exporter writes
them (`coremltools/converters/mil/backend/mil/helper.py`): tensor types,
immediate values, blob references, const ops and model description
features (value names: `xdsl_ane.backend.names`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType

from xdsl_ane.backend.mil_inputs import ParamValue
from xdsl_ane.backend.weights import (
    BLOB_PATH,
    SUB_BYTE_BITS,
    BlobEntry,
    quiet_coremltools,
)
from xdsl_ane.dialects.dense import numpy_dtype_of
from xdsl_ane.dialects.dtypes import BY_MIL, DTYPES, WHOLE_BYTE
from xdsl_ane.dialects.mil.base import MIL_STORAGE_DTYPES
from xdsl_ane.errors import XdslAneError

with quiet_coremltools():
    from coremltools.proto import FeatureTypes_pb2, MIL_pb2, Model_pb2

NUMPY_TO_MIL: dict[np.dtype, str] = {
    d.numpy: d.mil for d in (*WHOLE_BYTE, BY_MIL["bool"])
}
"""The MIL dtype of an array of each numpy dtype (a sub-byte dtype's holder
is named by the value's type instead)."""
MIL_DATA_TYPES: dict[str, int] = {
    **{d.mil: getattr(MIL_pb2, d.proto) for d in DTYPES},
    "string": MIL_pb2.STRING,
}
ARRAY_DATA_TYPES: dict[str, int] = {
    "fp16": FeatureTypes_pb2.ArrayFeatureType.FLOAT16,
    "fp32": FeatureTypes_pb2.ArrayFeatureType.FLOAT32,
    "int32": FeatureTypes_pb2.ArrayFeatureType.INT32,
}
"""The multiarray types of Core ML model inputs and outputs."""

BYTES_DTYPES = frozenset({"fp16", "int8", "uint8", "uint32"})
"""Immediate values coremltools writes as raw little-endian bytes."""


def mil_dtype(value: np.ndarray | np.dtype) -> str:
    dtype = value if isinstance(value, np.dtype) else value.dtype
    return NUMPY_TO_MIL[np.dtype(dtype).newbyteorder("=")]


def tensor_dtype(t: object) -> str:
    """The MIL dtype of a tensor type's elements."""
    if not isinstance(t, TensorType):
        raise XdslAneError(f"{t} is not a tensor type; MIL values are tensors")
    for name, storage in MIL_STORAGE_DTYPES.items():  # compressed weight data
        if t.element_type == storage:
            return name
    try:
        return mil_dtype(numpy_dtype_of(t.element_type))
    except ValueError:
        raise XdslAneError(f"{t} has no MIL dtype") from None


# --- values ----------------------------------------------------------------------


def value_type(shape: Sequence[int], dtype: str) -> MIL_pb2.ValueType:
    """A tensor type (rank 0 for a scalar), as coremltools' helper writes it."""
    t = MIL_pb2.ValueType()
    t.tensorType.dataType = MIL_DATA_TYPES[dtype]
    t.tensorType.rank = len(shape)
    for d in shape:
        t.tensorType.dimensions.add().constant.size = int(d)
    return t


def tensor_value_type(t: object) -> MIL_pb2.ValueType:
    assert isinstance(t, TensorType)
    return value_type(t.get_shape(), tensor_dtype(t))


def immediate_value(value: ParamValue, dtype: str | None = None) -> MIL_pb2.Value:
    """An inline value (coremltools' `create_tensor_value` and
    `create_scalar_value`). `dtype` gives the MIL dtype where the array's
    is only the holder (a sub-byte type, written packed into bytes)."""
    if isinstance(value, str):
        v = MIL_pb2.Value(type=value_type((), "string"))
        v.immediateValue.tensor.strings.values.append(value.encode("utf-8"))
        return v
    if dtype in SUB_BYTE_BITS:
        with quiet_coremltools():
            from coremltools.optimize._utils import pack_elements_into_bits
        v = MIL_pb2.Value(type=value_type(value.shape, dtype))
        packed = pack_elements_into_bits(value.reshape(-1), SUB_BYTE_BITS[dtype])
        v.immediateValue.tensor.bytes.values = packed.tobytes()
        return v
    dtype = mil_dtype(value)
    v = MIL_pb2.Value(type=value_type(value.shape, dtype))
    tensor = v.immediateValue.tensor
    flat = value.reshape(-1)
    if dtype in BYTES_DTYPES:
        if flat.size:
            little = flat.astype(flat.dtype.newbyteorder("<"), copy=False)
            tensor.bytes.values = little.tobytes()
        else:
            tensor.bytes.SetInParent()
        return v
    field_name = {
        "fp32": "floats",
        "int32": "ints",
        "int16": "ints",
        "uint16": "ints",
        "bool": "bools",
    }.get(dtype)
    if field_name is None:
        raise XdslAneError(f"no immediate MIL value of dtype {dtype}")
    repeated = getattr(tensor, field_name)
    if flat.size:
        repeated.values.extend(flat.tolist())
    else:
        repeated.SetInParent()
    return v


def blob_file_value(
    entry: BlobEntry, shape: Sequence[int] | None = None
) -> MIL_pb2.Value:
    """A reference to a blob record, typed as `shape` (the const's own:
    consts of one tensor in different shapes share a record) or as the
    record's."""
    return MIL_pb2.Value(
        type=value_type(entry.shape if shape is None else shape, entry.dtype),
        blobFileValue=MIL_pb2.Value.BlobFileValue(
            fileName=BLOB_PATH, offset=entry.offset
        ),
    )


def name_attribute(name: str) -> MIL_pb2.Value:
    return immediate_value(name)


def argument(names: Sequence[str]) -> MIL_pb2.Argument:
    return MIL_pb2.Argument(arguments=[MIL_pb2.Argument.Binding(name=n) for n in names])


def const_operation(
    name: str, value: MIL_pb2.Value, t: MIL_pb2.ValueType
) -> MIL_pb2.Operation:
    op = MIL_pb2.Operation(type="const")
    op.attributes["name"].CopyFrom(name_attribute(name))
    op.attributes["val"].CopyFrom(value)
    op.outputs.add(name=name, type=t)
    return op


def model_io_dtype(dtype: str) -> str:
    """The dtype a model input or output of MIL dtype `dtype` is declared
    with: itself for fp16, fp32 and int32 (the multiarray types), else int32
    for integers and fp32 for the rest, as coremltools'
    `adjust_io_to_supported_types` does (iOS16 to iOS18)."""
    if dtype in ARRAY_DATA_TYPES:
        return dtype
    return "int32" if "int" in dtype else "fp32"


def feature(
    name: str, shape: Sequence[int] | None, dtype: str
) -> Model_pb2.FeatureDescription:
    """A multiarray feature of the model description."""
    array = FeatureTypes_pb2.ArrayFeatureType(dataType=ARRAY_DATA_TYPES[dtype])
    if shape is not None:
        array.shape.extend(int(d) for d in shape)
    return Model_pb2.FeatureDescription(
        name=name, type=FeatureTypes_pb2.FeatureType(multiArrayType=array)
    )
