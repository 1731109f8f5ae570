"""The weight blob `weights/weight.bin`: planning, writing and reading it, and
the data of `mil.const` ops.

Layout (MILBlob storage version 2, what coremltools writes): a 64-byte file
header, then per tensor a 64-byte metadata record (sentinel 0xDEADBEEF, dtype
code, size, data offset) followed by the data, each record starting on a
64-byte boundary. A const refers to its tensor by the offset of the metadata
record (`BlobFileValue.offset`, MIL text's `BLOBFILE(offset=...)`): 64 for
the first one.

`WeightBlob` plans the file: it hands out offsets as consts are printed, from
the sizes alone, so a printer without weights (the `xdsl-opt` targets) gives
the offsets the real file will have. `WeightBlob.write` then writes the file
(`milblob.BlobWriter`: the bytes of coremltools' MILBlob writer, written
without holding the GIL) and checks that each tensor lands where it was
planned; `BlobFile` reads tensors back with coremltools' reader. Tensors with equal content share one record: the same
weight seen through the same view by several consts or functions (as
coremltools' multifunction models share weights), or equal inline values.

A printer that puts a weight const in the blob takes its data as a
`DeferredWeight` (`const_value(..., deferred=True)`): checked when printed,
but converted (to fp16, through its view) only as the blob is written, one
tensor at a time into a reused buffer that the writer reads — each weight
is converted once, straight from the weights' own array, and no converted
copy of the weights is held. A weight may also be a `LazyWeight` (a
checkpoint tensor not yet read): it is read from its file block by block
as it is converted, so the weights need never be in memory at all.

Weight consts take their data from a weights dict exactly as the interpreter
does (`WeightStore.get`: the file tensor of `weight_shape`, transposed by
`perm`, reshaped, float data converted to the const's float type); a missing
weight, a wrong shape or a non-float array for a float const is an
`XdslAneError` naming the weight and the const.
"""

from __future__ import annotations

import contextlib
import math
import queue
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import TensorType

from xdsl_ane.backend.milblob import (
    BLOB_HEADER_SIZE,
    BLOB_NUMPY_DTYPES,
    SUB_BYTE_BITS,
    BlobWriter,
    blob_nbytes,
    next_blob_offset,
    quiet_coremltools,
)
from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import dense_to_numpy
from xdsl_ane.dialects.typing import ints_prop
from xdsl_ane.errors import XdslAneError
from xdsl_ane.interpreter.core import InterpretationError, numpy_dtype
from xdsl_ane.weights.lazy import LazyWeight
from xdsl_ane.weights.store import WeightStore

BLOB_PATH = "@model_path/weights/weight.bin"
"""A BlobFileValue's file name: the blob relative to the model directory."""
WEIGHTS_DIR = "weights"
WEIGHT_FILE = "weight.bin"

INLINE_LIMIT = 10
"""Consts with fewer elements are written inline (coremltools'
`should_use_weight_file`)."""

_IOS18_SPECIFICATION_VERSION = 9


def blob_dtypes(specification_version: int) -> frozenset[str]:
    """The dtypes coremltools puts in the blob: fp16, fp32, uint8 and int8
    (and the sub-byte types held in them), from iOS18 (specification version 9) on also the 16- and 32-bit ints."""
    dtypes = {"fp16", "fp32", "uint8", "int8", *SUB_BYTE_BITS}
    if specification_version >= _IOS18_SPECIFICATION_VERSION:
        dtypes |= {"int16", "uint16", "int32", "uint32"}
    return frozenset(dtypes)


def goes_to_blob(dtype: str, size: int, specification_version: int) -> bool:
    """Whether coremltools writes a const of this MIL dtype and element count
    to the blob (at least `INLINE_LIMIT` elements of a blob dtype)."""
    return size >= INLINE_LIMIT and dtype in blob_dtypes(specification_version)


@dataclass(frozen=True, eq=False)
class DeferredWeight:
    """The data of a weight const, checked but not yet converted: the
    weights file's `array`, transposed by `perm`, reshaped row-major to
    `shape` and converted to `dtype` (what `WeightStore.get` computes) —
    done in one pass by `convert_into`, into the caller's buffer."""

    array: np.ndarray | LazyWeight
    shape: tuple[int, ...]
    perm: tuple[int, ...] | None
    dtype: np.dtype
    prefetch: Fp16Prefetch | None = None
    """Where an fp16 copy of `array` may be ready (converted while the
    passes ran)."""

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def flat_data(self, buffer: np.ndarray) -> np.ndarray:
        """The data, flat: the prefetched copy itself where it is ready and
        needs no transpose, else converted into `buffer` (`convert_into`)."""
        copy = (
            self.prefetch.copy_of(self.array)  # type: ignore[arg-type]
            if self.prefetch and isinstance(self.array, np.ndarray)
            else None
        )
        if copy is not None and self.perm is None:
            return copy.reshape(-1)
        return self.convert_into(buffer, copy)

    def convert_into(
        self, buffer: np.ndarray, source: np.ndarray | None = None
    ) -> np.ndarray:
        """The data, flat, in the first `size` elements of the flat `buffer`
        (of `dtype`): the view is read and cast in a single copy (from
        `source`, an fp16 copy of `array`, where given)."""
        out = buffer[: self.size]
        if source is None and isinstance(self.array, LazyWeight):
            self.array.convert_into(out, self.perm)  # read as it is converted
            return out
        source = self.array if source is None else source
        if self.perm is not None:
            source = np.transpose(source, self.perm)
        np.copyto(out.reshape(source.shape), source, casting="same_kind")
        return out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        value = self.convert_into(np.empty(self.size, self.dtype)).reshape(self.shape)
        return value if dtype is None else value.astype(dtype, copy=False)


PREFETCH_BYTES = 1 << 30
"""The most fp16 copies `Fp16Prefetch` makes."""
PREFETCH_SWITCH_INTERVAL = 0.0005
"""The interpreter's thread switch interval (s) while it converts."""


_switching = threading.Lock()
_converting = [0, 0.0]  # conversion threads running, the interval before them


@contextlib.contextmanager
def short_switch_interval() -> Iterator[None]:
    """`PREFETCH_SWITCH_INTERVAL` while any prefetch converts: each
    conversion starts and ends holding the GIL, which the passes' thread
    hands over only every switch interval (5 ms by default), so the
    converting thread would spend most of its time waiting."""
    with _switching:
        if _converting[0] == 0:
            _converting[1] = sys.getswitchinterval()
            sys.setswitchinterval(min(_converting[1], PREFETCH_SWITCH_INTERVAL))
        _converting[0] += 1
    try:
        yield
    finally:
        with _switching:
            _converting[0] -= 1
            if _converting[0] == 0:
                sys.setswitchinterval(_converting[1])


class Fp16Prefetch:
    """fp16 copies of float32 weights, made on a thread of its own while the
    passes run (the passes use one core; converting needs no GIL), up to
    `budget` bytes: the blob writer writes such a weight straight from its
    copy, with nothing left to convert. `stop` ends the conversions (when
    printing starts, those not made are converted as they are written);
    `release` frees the copies once the package is written."""

    def __init__(self, weights: Mapping[str, np.ndarray], budget: int = PREFETCH_BYTES):
        self.copies: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        """By the source array's id, with the array itself: held, so its id
        is not reused while here, and checked, so no other array is served."""
        self.arrays = [
            a
            for a in weights.values()
            if isinstance(a, np.ndarray) and a.dtype == np.float32
        ]
        self.budget = budget
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        used = 0
        with short_switch_interval():
            for array in self.arrays:
                if self.stopped.is_set() or used + 2 * array.size > self.budget:
                    return
                with np.errstate(over="ignore"):  # a weight out of range is
                    # refused after the passes (api.check_fp16_weights)
                    copy = array.astype(np.float16)
                self.copies[id(array)] = (array, copy)
                used += 2 * array.size

    def copy_of(self, array: np.ndarray) -> np.ndarray | None:
        source, copy = self.copies.get(id(array), (None, None))
        return copy if source is array else None

    def stop(self) -> None:
        self.stopped.set()

    def release(self) -> None:
        self.stop()
        self.thread.join()
        self.copies.clear()


BlobData = np.ndarray | DeferredWeight


@dataclass(frozen=True)
class BlobEntry:
    """One tensor of the blob: its record offset, MIL dtype, shape, where it
    comes from (the weight name, or the const's MIL name) and its data (an
    array, a `DeferredWeight`, or None when printing without weights)."""

    offset: int
    dtype: str
    shape: tuple[int, ...]
    source: str
    data: BlobData | None = None

    @property
    def nbytes(self) -> int:
        return blob_nbytes(self.dtype, math.prod(self.shape))


@dataclass
class WeightBlob:
    """The plan of one weight.bin: entries in offset order. With `sink`,
    each new entry is also handed to it as it is planned (`BlobStream`
    writes them while the rest of the model is printed)."""

    entries: list[BlobEntry] = field(default_factory=list)
    by_key: dict[object, BlobEntry] = field(default_factory=dict)
    next_offset: int = BLOB_HEADER_SIZE
    sink: Callable[[BlobEntry], None] | None = field(default=None, repr=False)

    def add(
        self,
        key: object,
        dtype: str,
        shape: Sequence[int],
        source: str,
        data: BlobData | None,
    ) -> BlobEntry:
        """The entry of `key`, planned at the end of the blob if new. `key`
        identifies equal content (a weight name and view, or inline bytes)."""
        if key in self.by_key:
            return self.by_key[key]
        if dtype not in BLOB_NUMPY_DTYPES:
            raise XdslAneError(f"{source}: dtype {dtype} cannot be stored in the blob")
        entry = BlobEntry(self.next_offset, dtype, tuple(shape), source, data)
        self.next_offset = next_blob_offset(entry.offset, entry.nbytes)
        self.entries.append(entry)
        self.by_key[key] = entry
        if self.sink is not None:
            self.sink(entry)
        return entry

    @property
    def has_data(self) -> bool:
        return all(e.data is not None for e in self.entries)

    def drop_data(self) -> None:
        """Forgets every entry's data, keeping the plan (offsets, dtypes,
        shapes): for a blob already written, whose arrays are not needed."""
        bare = {id(e): replace(e, data=None) for e in self.entries}
        self.entries = [bare[id(e)] for e in self.entries]
        self.by_key = {key: bare[id(e)] for key, e in self.by_key.items()}

    def write(self, path: str | Path) -> Path:
        """Writes the blob as `path` (see `write_entries`)."""
        path = Path(path)
        missing = [e.source for e in self.entries if e.data is None]
        if missing:
            raise XdslAneError(
                f"{path}: no data for weight '{missing[0]}' (printed without weights)"
            )
        write_entries(path, self.entries)
        return path

    def write_weights_dir(self, directory: str | Path) -> Path:
        """`directory/weight.bin`, also written for an empty blob (a package's
        weights directory always holds the file)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        return self.write(directory / WEIGHT_FILE)


CONVERTERS = 2
"""Threads converting the next tensors while one is written (one per core
of the machine the project is measured on)."""


def write_entries(path: Path, entries: Iterable[BlobEntry]) -> None:
    """Writes the blob file `path` of `entries` (in offset order, each with
    data) with `milblob.BlobWriter` (coremltools' bytes, written without
    the GIL), checking that each tensor lands at its planned offset.
    Deferred weights are converted straight into one of CONVERTERS + 1
    buffers that the writer reads as they are: while one tensor is
    written, the next CONVERTERS are converted on threads of their own
    (numpy's casts run without the GIL), so writing costs the longest of
    them rather than their sum."""
    buffers = ConversionBuffers()
    writer = BlobWriter(path)
    try:
        write_converted(path, entries, writer, buffers)
    except BaseException:
        writer.discard()
        raise
    writer.close()


def write_converted(
    path: Path,
    entries: Iterable[BlobEntry],
    writer: BlobWriter,
    buffers: ConversionBuffers,
) -> None:
    """`write_entries`' loop: each entry converted ahead and written."""
    with short_switch_interval(), ThreadPoolExecutor(CONVERTERS) as converter:

        def convert(entry: BlobEntry, slot: int) -> Future[np.ndarray]:
            return converter.submit(blob_data, entry, buffers, slot)

        def write(entry: BlobEntry, data: Future[np.ndarray]) -> None:
            offset = writer.write(entry.dtype, data.result())
            if offset != entry.offset:
                raise XdslAneError(
                    f"{path}: '{entry.source}' was written at offset {offset}, "
                    f"planned at {entry.offset}"
                )

        pending: deque[tuple[BlobEntry, Future[np.ndarray]]] = deque()
        for i, entry in enumerate(entries):
            if entry.data is None:
                raise XdslAneError(
                    f"{path}: no data for weight '{entry.source}' (printed without "
                    "weights)"
                )
            # Into the buffer of tensor i − CONVERTERS − 1, already written.
            pending.append((entry, convert(entry, i % (CONVERTERS + 1))))
            if len(pending) > CONVERTERS:
                write(*pending.popleft())
        while pending:
            write(*pending.popleft())


class BlobStream:
    """Writes the blob file `path` on a thread of its own while the model is
    printed: `with BlobStream(path) as blob:` gives the `WeightBlob` to
    print into; each entry is written as soon as the next one is planned
    (the last when the block ends), so printing, conversion and writing
    overlap. A failure of the writer is kept in `error` (the block does not
    raise it: the caller checks the printed model first)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.error: BaseException | None = None
        self._queue: queue.SimpleQueue[BlobEntry | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> WeightBlob:
        self._thread.start()
        return WeightBlob(sink=self._queue.put)

    def __exit__(self, *exc: object) -> None:
        self.close()
        self.join()

    def close(self) -> None:
        """No more entries: the writer ends after the last one given."""
        self._queue.put(None)

    def join(self) -> None:
        """Waits for the writer (its failure, if any, in `error`)."""
        self._thread.join()

    def _run(self) -> None:
        try:
            write_entries(self.path, iter(self._queue.get, None))
        except BaseException as e:  # reported by the caller, on its thread
            self.error = e


class ConversionBuffers:
    """CONVERTERS + 1 flat buffers per dtype for the deferred weights, each
    grown to the largest tensor converted into it."""

    def __init__(self) -> None:
        self.buffers: dict[tuple[np.dtype, int], np.ndarray] = {}

    def get(self, dtype: np.dtype, slot: int, size: int) -> np.ndarray:
        buffer = self.buffers.get((dtype, slot))
        if buffer is None or buffer.size < size:
            buffer = self.buffers[dtype, slot] = np.empty(size, dtype)
        return buffer


def blob_data(entry: BlobEntry, buffers: ConversionBuffers, slot: int) -> np.ndarray:
    """An entry's data as the flat array to write: a deferred weight
    converted into buffer `slot` of its dtype, an array as it is (in the
    entry's dtype)."""
    dtype = BLOB_NUMPY_DTYPES[entry.dtype]
    if isinstance(entry.data, DeferredWeight):
        return entry.data.flat_data(buffers.get(dtype, slot, entry.data.size))
    assert entry.data is not None
    return np.ascontiguousarray(entry.data, dtype).reshape(-1)


class BlobFile:
    """Reads tensors from a weight.bin with coremltools' MILBlob reader."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise XdslAneError(f"{self.path}: weight blob does not exist")
        with quiet_coremltools():  # imported here: coremltools loads torch
            from coremltools.libmilstoragepython import _BlobStorageReader

        self.reader = _BlobStorageReader(str(self.path))

    def read(self, offset: int, dtype: str, shape: Sequence[int]) -> np.ndarray:
        """The tensor whose metadata record is at `offset`."""
        return np.asarray(self.flat(offset, dtype)).reshape(tuple(shape))

    def flat(self, offset: int, dtype: str) -> np.ndarray:
        """The values of the record at `offset`, read as `dtype` (the reader
        fails unless the record holds that dtype)."""
        if dtype == "fp16":
            return self.reader.read_fp16_data(offset).view(np.float16)
        return getattr(self.reader, BLOB_READERS[dtype])(offset)

    def read_checked(
        self, offset: int, dtype: str, shape: Sequence[int], what: str
    ) -> np.ndarray:
        """`read`, failing with one line that names the file, the offset and
        `what` (the const's type) where the record is missing, is not of
        `dtype` or holds another number of values."""
        name = self.path.name
        size = self.path.stat().st_size
        if size < BLOB_HEADER_SIZE:
            raise XdslAneError(
                f"'{self.path}' is not a MILBlob version 2 weight file ({size} bytes)"
            )
        try:
            values = self.flat(offset, dtype)
        except ValueError:  # past the end of the file
            raise XdslAneError(
                f"offset {offset} is outside the blob records of '{name}' ({size} bytes)"
            ) from None
        except RuntimeError as e:
            message = str(e)
            if "version" in message:
                raise XdslAneError(
                    f"'{self.path}' is not a MILBlob version 2 weight file"
                ) from None
            if "sentinel" in message:
                raise XdslAneError(
                    f"no blob metadata at offset {offset} of '{name}' (the offset "
                    "must point at a 64-byte metadata record)"
                ) from None
            if "data type" in message:
                raise XdslAneError(
                    f"the blob at offset {offset} holds {self.held_dtype(offset)}, "
                    f"the const is {what}"
                ) from None
            raise XdslAneError(
                f"the blob at offset {offset} of '{name}': {message}"
            ) from None
        count = math.prod(shape)
        if values.size != count:
            raise XdslAneError(
                f"the blob at offset {offset} holds {values.size} {dtype} values, "
                f"{what} needs {count}"
            )
        return np.asarray(values).reshape(tuple(shape))

    def held_dtype(self, offset: int) -> str:
        """The dtype of the record at `offset`: the one the reader accepts."""
        for dtype in BLOB_READERS:
            try:
                self.flat(offset, dtype)
                return dtype
            except (RuntimeError, ValueError):
                pass
        return "a dtype we do not read"


BLOB_READERS = {
    "fp16": "read_fp16_data",
    "fp32": "read_float_data",
    "int8": "read_int8_data",
    "uint8": "read_uint8_data",
    "int16": "read_int16_data",
    "uint16": "read_uint16_data",
    "int32": "read_int32_data",
    "uint32": "read_uint32_data",
    "int4": "read_int4_data",
    "uint1": "read_uint1_data",
    "uint2": "read_uint2_data",
    "uint3": "read_uint3_data",
    "uint4": "read_uint4_data",
    "uint6": "read_uint6_data",
}
"""coremltools' MILBlob reader method of each blob dtype."""


# --- the data of mil.const ops ---------------------------------------------------


def weight_store(weights: Mapping[str, np.ndarray] | None) -> WeightStore | None:
    """A store over `weights` (arrays or array-likes), None without weights."""
    if weights is None:
        return None
    return WeightStore(
        {
            k: v if isinstance(v, LazyWeight) else np.asarray(v)
            for k, v in weights.items()
        }
    )


def const_value(
    op: mil.ConstOp,
    store: WeightStore | None,
    where: str,
    deferred: bool = False,
    prefetch: Fp16Prefetch | None = None,
) -> BlobData | None:
    """The value of a const as a numpy array of its type: the inline `val`,
    or its weight viewed and converted as the interpreter does — with
    `deferred`, a weight's as a `DeferredWeight`, checked now and converted
    when the blob is written. None for a weight const printed without
    weights. `where` names the const in errors, which also name the
    weight."""
    if op.val is not None:
        return dense_to_numpy(op.val)
    assert op.weight is not None
    if store is None:
        return None
    t = op.result.type
    assert isinstance(t, TensorType)
    if deferred:
        value = store.weights.get(op.weight.data)
        dtype = numpy_dtype(t.element_type)
        if (
            isinstance(value, np.ndarray | LazyWeight)
            and tuple(value.shape) == tuple(op.file_shape())
            and (value.dtype == dtype or value.dtype.kind == dtype.kind == "f")
        ):
            perm = ints_prop(op.properties, "perm")
            return DeferredWeight(
                value,
                tuple(t.get_shape()),
                None if perm is None else tuple(perm),
                dtype,
                prefetch if dtype == np.float16 else None,
            )
        # Anything else is converted now, or reported as WeightStore.get does.
    try:
        return store.get(
            op.weight.data,
            t,
            where,
            file_shape=op.file_shape(),
            perm=ints_prop(op.properties, "perm"),
        )
    except InterpretationError as e:
        raise XdslAneError(str(e)) from None


def weight_key(op: mil.ConstOp) -> tuple[object, ...]:
    """What identifies a weight const's content: the weight, its view and
    its element type. The const's own shape is left out: a row-major
    reshape leaves the data as it is, so consts of one tensor in different
    shapes (a tied embedding's gather table [V, D] and the LM head's 1×1
    conv weight [V, D, 1, 1]) share one blob record."""
    assert op.weight is not None
    t = op.result.type
    assert isinstance(t, TensorType)
    return (
        "weight",
        op.weight.data,
        op.file_shape(),
        ints_prop(op.properties, "perm"),
        t.element_type,
    )


def value_key(value: np.ndarray) -> tuple[object, ...]:
    """What identifies an inline value's content."""
    return ("value", value.dtype.str, value.shape, value.tobytes())
