"""The one table of element types: each MIL dtype the project reads or
writes, with its MLIR element type, the numpy dtype that holds its values
and its bits in MIL's storage. Every other mapping between MIL names,
element types and numpy dtypes (the dialects', the interpreter's, the
printers', the importers') is derived from `DTYPES`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import IntegerType, Signedness, f16, f32, i1, i8, i32
from xdsl.ir import Attribute


@dataclass(frozen=True)
class DType:
    mil: str
    """MIL's name ("fp16", "uint4")."""
    numpy: np.dtype
    """The little-endian numpy dtype of a value (a sub-byte one is held one
    element per byte, int4 in int8 and uint1..uint6 in uint8)."""
    element: Attribute | None
    """The MLIR element type, None for a MIL dtype the IR has no values of
    (only coremltools' writers and readers take it)."""
    bits: int
    """Bits of one element as MIL stores it."""
    computes: bool = False
    """Ops compute on it (the others are compressed weight data)."""
    proto: str = ""
    """Its name in MIL's protobuf `DataType` enum."""
    mil_only: bool = False
    """Only mil ops take it (cast, gather's indices: what coremltools casts
    indices to), never rlx's."""

    @property
    def mlir(self) -> str:
        """The element type's MLIR spelling ("f16", "ui4")."""
        return str(self.element) if self.element is not None else ""

    @property
    def sub_byte(self) -> bool:
        return self.bits < 8


def unsigned(width: int) -> IntegerType:
    return IntegerType(width, Signedness.UNSIGNED)


DTYPES: tuple[DType, ...] = (
    DType("fp32", np.dtype("<f4"), f32, 32, True, "FLOAT32"),
    DType("fp16", np.dtype("<f2"), f16, 16, True, "FLOAT16"),
    DType("int32", np.dtype("<i4"), i32, 32, True, "INT32"),
    DType("int8", np.dtype("i1"), i8, 8, True, "INT8"),
    DType("bool", np.dtype(np.bool_), i1, 8, True, "BOOL"),
    DType("int4", np.dtype("i1"), IntegerType(4), 4, False, "INT4"),
    *(
        DType(f"uint{w}", np.dtype("u1"), unsigned(w), w, False, f"UINT{w}")
        for w in (1, 2, 3, 4, 6, 8)
    ),
    DType("int16", np.dtype("<i2"), IntegerType(16), 16, True, "INT16", True),
    DType("uint16", np.dtype("<u2"), unsigned(16), 16, True, "UINT16", True),
    DType("uint32", np.dtype("<u4"), None, 32, False, "UINT32"),
)

BY_MIL: dict[str, DType] = {d.mil: d for d in DTYPES}
BY_ELEMENT: dict[Attribute, DType] = {d.element: d for d in DTYPES if d.element}

WHOLE_BYTE: tuple[DType, ...] = tuple(
    d for d in DTYPES if d.bits == 8 * d.numpy.itemsize and d.mil != "bool"
)
"""The dtypes whose values are their numpy holder's bytes (those
coremltools' blob writers and raw immediate values take as they are)."""


def dtype_of_element(element_type: Attribute) -> DType:
    """The table's row of an element type; ValueError if it has none."""
    found = BY_ELEMENT.get(element_type)
    if found is None:
        raise ValueError(f"no dtype for element type {element_type}")
    return found


def numpy_dtype_of(element_type: Attribute) -> np.dtype:
    """The numpy dtype holding values of an element type."""
    return dtype_of_element(element_type).numpy
