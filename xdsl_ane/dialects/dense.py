"""numpy <-> builtin dense elements attributes, without per-element Python
loops (xDSL stores dense data as little-endian bytes; i1 as 0x00/0xff)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute

from xdsl_ane.dialects.dtypes import numpy_dtype_of
from xdsl_ane.dialects.typing import tensor

__all__ = ["dense_from_numpy", "dense_to_numpy", "numpy_dtype_of"]


def dense_from_numpy(
    value: np.ndarray | float | int | bool, element_type: Attribute
) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding `value` converted to `element_type`."""
    dtype = numpy_dtype_of(element_type)
    array = np.asarray(value).astype(dtype)
    if dtype == np.bool_:
        raw = (array.astype(np.int8) * -1).tobytes()
    else:
        raw = np.ascontiguousarray(array).tobytes()
    return DenseIntOrFPElementsAttr(tensor(array.shape, element_type), BytesAttr(raw))


def dense_to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The value of a dense attribute as a numpy array of its element type."""
    t = attr.type
    assert isinstance(t, TensorType)
    dtype = numpy_dtype_of(t.element_type)
    shape = t.get_shape()
    if dtype == np.bool_:
        flat = np.frombuffer(attr.data.data, dtype=np.int8) != 0
    else:
        flat = np.frombuffer(attr.data.data, dtype=dtype)
    count = int(np.prod(shape)) if shape else 1
    if flat.size == 1 and count != 1:
        return np.full(shape, flat[0], dtype=flat.dtype)
    return flat.reshape(shape).copy()
