"""MILBlob storage version 2 (a package's `weights/weight.bin`), written
with Python's own file writes (past the first 64 MiB, direct:
`DirectTailFile`).

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
import errno
import logging
import mmap
import os
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
    coremltools' writer does; `close` completes the header, `discard`
    closes the file after a failure (the caller removes it)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.count = 0
        self.end = self.next = BLOB_HEADER_SIZE  # written to; the next record
        with self.writing():
            self.file = DirectTailFile(self.path)
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
            self.file.close(header(self.count))

    def discard(self) -> None:
        self.file.discard()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """An OSError of the file as a one-line error naming it."""
        try:
            yield
        except OSError as e:
            raise XdslAneError(
                f"{self.path}: cannot write the weight blob ({e})"
            ) from None


DIRECT_AFTER = 1 << 26
"""The bytes of a blob written through the page cache; past them (Linux),
the rest goes straight to the disk (`DirectTailFile`)."""
DIRECT_ALIGNMENT = 4096
"""What O_DIRECT writes align to: every logical block size up to 4 KiB."""
DIRECT_STAGE = 1 << 25
"""The aligned buffer (bytes) the direct writes go through."""


class DirectTailFile:
    """A new file written front to back (`write`), whose header is
    rewritten by `close(header)`: the first DIRECT_AFTER bytes through the
    page cache, the rest, where the system has O_DIRECT and the file
    system takes it, straight to the disk through one aligned buffer. A
    buffered write takes a page of fresh memory per 4 KiB and copies into
    it; on a virtual machine whose fresh pages fault in slowly that is
    more CPU than the disk takes time, CPU the compile beside the writes
    needs. A weight blob is read back, if ever, long after, and keeping
    it cached only pushes out the checkpoint being read. The bytes are
    the same either way."""

    def __init__(self, path: Path):
        self.path = path
        self.file = open(path, "w+b")  # noqa: SIM115 (closed by close)
        self.position = 0  # the bytes written
        self.direct: int | None = None  # the O_DIRECT descriptor
        self.stage: np.ndarray | None = None
        self.stage_at = 0  # the file offset of stage[0]
        self.staged = 0
        self.can_go_direct = hasattr(os, "O_DIRECT")
        self.direct_bytes = 0  # written direct, the padding of the last block too

    def write(self, data: bytes | memoryview) -> None:
        view = np.frombuffer(data, np.uint8)
        if self.direct is None:
            self.file.write(data)
            self.position += view.size
            if self.position >= DIRECT_AFTER and self.can_go_direct:
                self._go_direct()
            return
        assert self.stage is not None
        while view.size:
            n = min(view.size, self.stage.size - self.staged)
            np.copyto(self.stage[self.staged : self.staged + n], view[:n])
            self.staged += n
            self.position += n
            view = view[n:]
            if self.staged == self.stage.size:
                self._flush()
                if self.direct is None:  # refused: the rest buffered
                    self.file.write(view)
                    self.position += view.size
                    return

    def _go_direct(self) -> None:
        """The writes from here on direct: the stage starts at the block
        holding the end, with the buffered bytes of that block."""
        self.file.flush()
        try:
            self.direct = os.open(self.path, os.O_WRONLY | os.O_DIRECT)
        except OSError:  # a file system without O_DIRECT (tmpfs)
            self.can_go_direct = False
            return
        self.stage = np.frombuffer(mmap.mmap(-1, DIRECT_STAGE), np.uint8)
        self.stage_at = self.position - self.position % DIRECT_ALIGNMENT
        head = os.pread(
            self.file.fileno(), self.position - self.stage_at, self.stage_at
        )
        self.staged = len(head)
        self.stage[: self.staged] = np.frombuffer(head, np.uint8)

    def _flush(self) -> None:
        """The stage written at stage_at, its last block padded (the file
        is cut to `position` on close)."""
        assert self.stage is not None and self.direct is not None
        size = -(-self.staged // DIRECT_ALIGNMENT) * DIRECT_ALIGNMENT
        self.stage[self.staged : size] = 0
        view = memoryview(self.stage)[:size]
        written = 0
        try:
            while written < size:
                written += os.pwrite(
                    self.direct, view[written:], self.stage_at + written
                )
        except OSError as e:
            if e.errno != errno.EINVAL or written:
                raise
            self._go_buffered()  # the file system refused direct writes
            return
        self.direct_bytes += size
        self.stage_at += size
        self.staged = 0

    def _go_buffered(self) -> None:
        """The stage and every write after it through the page cache."""
        assert self.stage is not None and self.direct is not None
        os.close(self.direct)
        self.direct = None
        self.can_go_direct = False
        self.file.seek(self.stage_at)
        self.file.write(memoryview(self.stage)[: self.staged])
        self.stage = None

    def close(self, head: bytes) -> None:
        if self.direct is not None:
            if self.staged:
                self._flush()
            if self.direct is not None:
                os.ftruncate(self.direct, self.position)
                os.close(self.direct)
                self.direct = None
            self.stage = None
        self.file.seek(0)
        self.file.write(head)
        self.file.close()

    def discard(self) -> None:
        if self.direct is not None:
            os.close(self.direct)
            self.direct = None
        self.file.close()


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
