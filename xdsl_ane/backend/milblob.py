"""MILBlob storage version 2 (a package's `weights/weight.bin`), written
with Python's own file writes.

coremltools ships a writer for the format (`libmilstoragepython`'s
`_BlobStorageWriter`), but it holds the GIL for the whole of each write,
and a write of a large tensor waits for the disk once the page cache's
dirty limit is reached: a blob written on a thread of its own then stops
the printer and the passes beside it for as long as the disk takes.
`BlobWriter` writes the same bytes (tests compare them with coremltools'
file for every dtype) through `io` writes, which release the GIL, so the
rest of a compile runs while the weights go to disk. Sub-byte data is
packed by coremltools' own `pack_elements_into_bits`, and files are read
back with coremltools' reader (`weights.BlobFile`).

The layout: a 64-byte header (u32 record count, u32 version 2, zeros);
per tensor, on a 64-byte boundary, a 64-byte metadata record (u32 sentinel
0xDEADBEEF, u32 dtype code, u64 data size in bytes, u64 data offset, u64
unused bits of the last byte, zeros), then the data; zeros between.
"""

from __future__ import annotations

import contextlib
import logging
import struct
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from xdsl_ane.dialects.dtypes import DTYPES
from xdsl_ane.errors import XdslAneError

BLOB_HEADER_SIZE = 64
BLOB_METADATA_SIZE = 64
BLOB_ALIGNMENT = 64
VERSION = 2
SENTINEL = 0xDEADBEEF

BLOB_NUMPY_DTYPES: dict[str, np.dtype] = {
    d.mil: d.numpy for d in DTYPES if d.mil != "bool"
}
"""The MIL dtypes a blob tensor can have (those coremltools' blob writers
take), with the little-endian numpy dtypes that hold their values."""

SUB_BYTE_BITS: dict[str, int] = {d.mil: d.bits for d in DTYPES if d.sub_byte}
"""The sub-byte dtypes of compressed weight data and their widths. The blob
packs them (coremltools' write_int4_data, write_uint4_data, ...: element i
in bits [i·w, (i+1)·w), little-endian); numpy holds them unpacked, one value
per int8 (int4) or uint8 element. coremltools puts them in the blob as it
does their holding dtype (at least 10 elements), iOS18 only having them."""

DTYPE_CODES: dict[str, int] = {
    "fp16": 1,
    "fp32": 2,
    "uint8": 3,
    "int8": 4,
    "bf16": 5,
    "int16": 6,
    "uint16": 7,
    "int4": 8,
    "uint1": 9,
    "uint2": 10,
    "uint4": 11,
    "uint3": 12,
    "uint6": 13,
    "int32": 14,
    "uint32": 15,
}
"""MILBlob's `BlobDataType` codes."""

PACK_BLOCK = 1 << 22
"""Sub-byte elements packed at a time (a multiple of 8: each block fills
whole bytes), bounding the unpacked bits numpy makes on the way."""


@contextlib.contextmanager
def quiet_coremltools() -> Iterator[None]:
    """Silences coremltools' import-time complaints (its macOS-only runtime
    is missing on Linux) and Python warnings while importing or calling it."""
    logger = logging.getLogger("coremltools")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def blob_nbytes(dtype: str, count: int) -> int:
    """The bytes `count` elements of `dtype` take in the blob (sub-byte
    types packed, the last byte padded)."""
    if dtype in SUB_BYTE_BITS:
        return -(-count * SUB_BYTE_BITS[dtype] // 8)
    return count * BLOB_NUMPY_DTYPES[dtype].itemsize


def next_blob_offset(offset: int, nbytes: int) -> int:
    """The offset of the record after one at `offset` holding `nbytes`."""
    end = offset + BLOB_METADATA_SIZE + nbytes
    return -(-end // BLOB_ALIGNMENT) * BLOB_ALIGNMENT


def header(count: int) -> bytes:
    return struct.pack("<II", count, VERSION).ljust(BLOB_HEADER_SIZE, b"\0")


def metadata(code: int, size: int, data_offset: int, padding_bits: int) -> bytes:
    record = struct.pack("<IIQQQ", SENTINEL, code, size, data_offset, padding_bits)
    return record.ljust(BLOB_METADATA_SIZE, b"\0")


class BlobWriter:
    """Writes the blob file `path` record by record: `write(dtype, data)`
    appends a tensor (its flat values in the dtype's numpy holder, a
    sub-byte one a value per byte) and gives the offset of its record, as
    coremltools' writer does; `close` completes the header."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.count = 0
        self.end = self.next = BLOB_HEADER_SIZE  # written to; the next record
        with self.writing():
            self.file = open(self.path, "wb")  # noqa: SIM115 (closed by close)
            self.file.write(header(0))

    def write(self, dtype: str, data: np.ndarray) -> int:
        code = DTYPE_CODES.get(dtype)
        if code is None or dtype not in BLOB_NUMPY_DTYPES:
            raise XdslAneError(
                f"{self.path}: dtype {dtype} cannot be stored in the blob"
            )
        flat = np.ascontiguousarray(data).reshape(-1)
        width = SUB_BYTE_BITS.get(dtype)
        size = blob_nbytes(dtype, flat.size)
        padding = 0 if width is None else size * 8 - flat.size * width
        offset = self.next
        with self.writing():
            self.file.write(bytes(offset - self.end))
            self.file.write(metadata(code, size, offset + BLOB_METADATA_SIZE, padding))
            for block in blocks(flat, width, dtype):
                self.file.write(block)
        self.end = offset + BLOB_METADATA_SIZE + size
        self.next = next_blob_offset(offset, size)
        self.count += 1
        return offset

    def close(self) -> None:
        with self.writing():
            self.file.seek(0)
            self.file.write(header(self.count))
            self.file.close()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """An OSError of the file as a one-line error naming it."""
        try:
            yield
        except OSError as e:
            raise XdslAneError(
                f"{self.path}: cannot write the weight blob ({e})"
            ) from None


def blocks(flat: np.ndarray, width: int | None, dtype: str) -> Iterator[memoryview]:
    """The bytes of `flat` as the blob holds them: as they are, or packed
    `width` bits an element from the least significant bit up, a block at
    a time."""
    if width is None:
        yield memoryview(flat.view(np.uint8))
        return
    with quiet_coremltools():
        from coremltools.optimize._utils import pack_elements_into_bits

    for start in range(0, flat.size, PACK_BLOCK):
        try:
            packed = pack_elements_into_bits(flat[start : start + PACK_BLOCK], width)
        except ValueError as e:
            raise XdslAneError(f"{dtype} data: {e}") from None
        yield memoryview(packed)
