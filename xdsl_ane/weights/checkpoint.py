"""Hugging Face checkpoint directories: `config.json` and the weights, as
`model.safetensors` or sharded (`model-0000i-of-0000n.safetensors` listed
by `model.safetensors.index.json`); bf16, fp16 or fp32 tensors.

Tensors are read with the `safetensors` package, which checks each file's
header and byte ranges; bf16, which numpy has no dtype for, is widened to
fp32 exactly (bf16 is fp32's upper half). `Checkpoint.lazy` gives a
tensor unread (`CheckpointTensor`, a `LazyWeight`): it is read
block by block where it is used (bf16 through a read-only mapping of at
most DIRECT_BLOCK elements), so that compiling a model never holds all of its
weights; into fp16 for the blob, a bf16 tensor goes by a table lookup
without a float32 copy. Every problem — a missing or
corrupt file, a shard the index names that is not there, a tensor missing
or of the wrong shape — is one `XdslAneError` naming the file, tensor or
field.
"""

from __future__ import annotations

import json
import math
import mmap
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from xdsl_ane.errors import XdslAneError
from xdsl_ane.weights.lazy import CONVERT_BLOCK, LazyWeight
from xdsl_ane.weights.safetensors import TensorEntry, tensor_entries

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
DTYPES = {"BF16": "bf16", "F16": "fp16", "F32": "fp32"}
"""The checkpoint dtypes read (safetensors' name -> ours)."""


def read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except FileNotFoundError:
        raise XdslAneError(f"{path}: not found") from None
    except (OSError, ValueError) as e:
        raise XdslAneError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise XdslAneError(f"{path}: expected a JSON object")
    return value


@dataclass
class Checkpoint:
    """A checkpoint directory: its config and where each tensor lives."""

    directory: Path
    config: dict[str, Any]
    tensors: dict[str, TensorEntry] = field(default_factory=dict)

    @property
    def dtypes(self) -> set[str]:
        return {DTYPES[t.dtype] for t in self.tensors.values()}

    def has(self, name: str) -> bool:
        return name in self.tensors

    def shape(self, name: str) -> tuple[int, ...]:
        return self.info(name).shape

    def info(self, name: str) -> TensorEntry:
        info = self.tensors.get(name)
        if info is None:
            raise XdslAneError(
                f"{self.directory}: tensor '{name}' is missing from the checkpoint"
            )
        return info

    def tensor(self, name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
        """Tensor `name` as float32 (fp16 stays fp16), checked against
        `shape` when given."""
        info = self.info(name)
        if shape is not None and tuple(shape) != info.shape:
            raise XdslAneError(
                f"{info.file}: tensor '{name}' has shape {list(info.shape)}, the "
                f"config needs {list(shape)}"
            )
        return info.read()

    def lazy(self, name: str, shape: tuple[int, ...] | None = None) -> CheckpointTensor:
        """Tensor `name` unread (`CheckpointTensor`), checked against
        `shape` as `tensor` checks it."""
        info = self.info(name)
        if shape is not None and tuple(shape) != info.shape:
            raise XdslAneError(
                f"{info.file}: tensor '{name}' has shape {list(info.shape)}, the "
                f"config needs {list(shape)}"
            )
        return CheckpointTensor(info)

    def equal(self, a: str, b: str) -> bool:
        """Whether tensors `a` and `b` hold the same values (compared block
        by block)."""
        x, y = self.lazy(a), self.lazy(b)
        if x.shape != y.shape:
            return False
        step = max(1, CONVERT_BLOCK // max(1, x.size // max(1, x.shape[0] or 1)))
        rows = x.shape[0] if x.shape else 1
        return all(
            np.array_equal(
                x.read_rows(s, min(s + step, rows)), y.read_rows(s, min(s + step, rows))
            )
            for s in range(0, rows, step)
        )

    def items(self, names: Iterator[str]) -> Iterator[tuple[str, np.ndarray]]:
        for name in names:
            yield name, self.tensor(name)


DIRECT_BLOCK = 1 << 26
"""The most bf16 elements `CheckpointTensor.bits_blocks` maps at once
(128 MB): a layer's tensor at once. A mapped page counts in the process'
RSS while it is mapped, so the block bounds what reading adds to it."""

RAW_DTYPES = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32}


class CheckpointTensor(LazyWeight):
    """A checkpoint tensor (or rows `rows` of it, times `factor`) read from
    its file only where it is used: float32 (bf16 widened
    exactly, as `TensorEntry.read`), fp16 staying fp16."""

    def __init__(
        self,
        entry: TensorEntry,
        rows: tuple[int, int] | None = None,
        factor: float | None = None,
    ):
        self.entry = entry
        self.rows_of = rows
        self.factor = factor
        shape = entry.shape
        if rows is not None:
            shape = (rows[1] - rows[0], *shape[1:])
        self.shape = tuple(shape)
        self.dtype = np.dtype(np.float16 if entry.dtype == "F16" else np.float32)

    def __repr__(self) -> str:
        rows = "" if self.rows_of is None else f"[{self.rows_of[0]}:{self.rows_of[1]}]"
        return f"CheckpointTensor({self.entry.name}{rows}, {list(self.shape)})"

    def matrix(self) -> CheckpointTensor:
        """It read as a matrix (its leading axes' rows by its last axis: the
        same bytes), unread; a tensor of rank 2 or less as it is."""
        if len(self.shape) <= 2:
            return self
        assert self.rows_of is None
        rows = math.prod(self.shape[:-1])
        entry = replace(self.entry, shape=(rows, self.shape[-1]))
        return CheckpointTensor(entry, None, self.factor)

    def rows(self, start: int, end: int) -> CheckpointTensor:
        """Rows [start, end) of it, unread."""
        first = 0 if self.rows_of is None else self.rows_of[0]
        return CheckpointTensor(self.entry, (first + start, first + end), self.factor)

    def scaled(self, factor: float) -> CheckpointTensor:
        """It times `factor` (in float32), unread."""
        return CheckpointTensor(self.entry, self.rows_of, factor)

    @property
    def row_size(self) -> int:
        """Elements per row (of the first axis) in the file."""
        return math.prod((self.entry.shape or (1,))[1:])

    def read_into(self, start: int, end: int, data: np.ndarray) -> None:
        """Rows [start, end) as stored (bf16 as its uint16 bits) into the
        flat `data`, with one `readinto` (no page faults of a mapping, the
        GIL released while it reads)."""
        entry = self.entry
        first = 0 if self.rows_of is None else self.rows_of[0]
        where = entry.offset + (first + start) * self.row_size * data.itemsize
        try:
            with open(entry.file, "rb", buffering=0) as f:
                f.seek(where)
                got = f.readinto(memoryview(data).cast("B"))
        except OSError as e:
            raise XdslAneError(
                f"{entry.file}: cannot read tensor '{entry.name}' ({e})"
            ) from None
        if got != data.nbytes:
            raise XdslAneError(
                f"{entry.file}: cannot read tensor '{entry.name}' (the file "
                "ends inside it)"
            )

    def bits_blocks(self, start: int, end: int):
        """(rows from, rows to, their bf16 bits) of rows [start, end), at
        most DIRECT_BLOCK elements at a time: each a view of the file
        mapped read-only (the page cache's own pages, not copied; the
        mapping goes once the caller drops the view)."""
        entry = self.entry
        row = self.row_size
        step = max(1, DIRECT_BLOCK // max(row, 1))
        first = 0 if self.rows_of is None else self.rows_of[0]
        try:
            with open(entry.file, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                for a in range(start, end, step):
                    b = min(a + step, end)
                    where = entry.offset + (first + a) * row * 2
                    count = (b - a) * row
                    if where + 2 * count > size:  # a mapping would fault past it
                        raise XdslAneError(
                            f"{entry.file}: cannot read tensor '{entry.name}' (the "
                            "file ends inside it)"
                        )
                    if count == 0:
                        yield a - start, b - start, np.empty(0, np.uint16)
                        continue
                    base = where - where % mmap.ALLOCATIONGRANULARITY
                    mapped = mmap.mmap(
                        f.fileno(),
                        where - base + 2 * count,
                        access=mmap.ACCESS_READ,
                        offset=base,
                    )
                    bits = np.frombuffer(mapped, np.uint16, count, where - base)
                    del mapped  # unmapped with its last view
                    yield a - start, b - start, bits
        except OSError as e:
            raise XdslAneError(
                f"{entry.file}: cannot read tensor '{entry.name}' ({e})"
            ) from None

    def read_rows(self, start: int, end: int) -> np.ndarray:
        row = self.row_size
        value = np.empty((end - start) * row, self.dtype)
        if self.entry.dtype != "BF16":
            self.read_into(start, end, value)
        else:
            self.widen_into(start, end, value)
        if self.factor is not None:
            value = value * np.float32(self.factor)
        return value.reshape((end - start, *self.shape[1:]) if self.shape else ())

    def convert_into(self, out: np.ndarray, perm: tuple[int, ...] | None) -> None:
        """As `LazyWeight.convert_into`; a bf16 tensor into fp16 or float32
        goes straight from its bits (`bf16_to_fp16`, the widening shift),
        without a float32 copy or a block allocated per read."""
        direct = (
            self.entry.dtype == "BF16"
            and out.dtype in (np.float16, np.float32)
            and perm is None
            and self.factor is None
            and len(self.shape) >= 1
        )
        if not direct:
            super().convert_into(out, perm)
            return
        if out.dtype == np.float32:
            self.widen_into(0, self.shape[0], out)
            return
        row = self.row_size
        for a, b, bits in self.bits_blocks(0, self.shape[0]):
            bf16_to_fp16(bits, out[a * row : b * row])

    def widen_into(self, start: int, end: int, out: np.ndarray) -> None:
        """Rows [start, end) of a bf16 tensor widened exactly into the flat
        float32 `out` (the bits shifted into the upper half)."""
        row = self.row_size
        for a, b, bits in self.bits_blocks(start, end):
            block = out[a * row : b * row].view(np.uint32)
            np.left_shift(bits, 16, out=block, dtype=np.uint32)


def bf16_to_fp32(bits: np.ndarray) -> np.ndarray:
    """bf16 (its uint16 bits) widened to float32 exactly: the upper half."""
    return np.left_shift(bits, 16, dtype=np.uint32).view(np.float32)


@cache
def bf16_fp16_table() -> np.ndarray:
    """The float16 of every bf16, by its bits: numpy's rounding of the
    widened value (fp16 subnormals, overflow to inf, nan kept)."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    with np.errstate(over="ignore"):
        return bf16_to_fp32(bits).astype(np.float16)


FP16_BLOCK = 1 << 20
"""The most bf16 elements `bf16_to_fp16` looks up in one call: numpy's
take makes the indices' intp copy of each block, which stays small."""


def bf16_to_fp16(bits: np.ndarray, out: np.ndarray) -> np.ndarray:
    """bf16 (its uint16 bits) rounded to float16 into `out`, as
    `bf16_to_fp32(bits).astype(np.float16)` gives it: lookups in the table
    of all 65536 (it stays in cache), FP16_BLOCK at a time, without the
    float32 copy, in under half the time, each call releasing the GIL (the
    blob writer converts on threads beside its writes). Every uint16 is an
    index of the table, so `clip` (which skips numpy's bounds errors)
    changes nothing."""
    table = bf16_fp16_table()
    for start in range(0, bits.size, FP16_BLOCK):
        part = bits[start : start + FP16_BLOCK]
        np.take(table, part, out=out[start : start + part.size], mode="clip")
    return out


def read_checkpoint(directory: str | Path) -> Checkpoint:
    """Reads `config.json` and the headers of the weights (the data is read
    per tensor, when needed)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise XdslAneError(f"{directory}: not a checkpoint directory")
    config = read_json(directory / "config.json")
    checkpoint = Checkpoint(directory, config)
    index = directory / INDEX_FILE
    if index.is_file():
        weight_map = read_json(index).get("weight_map")
        if not isinstance(weight_map, Mapping) or not weight_map:
            raise XdslAneError(f"{index}: no 'weight_map'")
        files = sorted(set(weight_map.values()))
    elif (directory / SINGLE_FILE).is_file():
        weight_map, files = None, [SINGLE_FILE]
    else:
        raise XdslAneError(
            f"{directory}: no {SINGLE_FILE} or {INDEX_FILE} (a Hugging Face "
            "checkpoint directory has one)"
        )
    for file in files:
        path = directory / file
        for name, entry in tensor_entries(path).items():
            if entry.dtype not in DTYPES:
                raise XdslAneError(
                    f"{path}: tensor '{name}' has dtype {entry.dtype} (supported: "
                    "BF16, F16, F32)"
                )
            checkpoint.tensors[name] = entry
    if weight_map is not None:
        for name, file in weight_map.items():
            info = checkpoint.tensors.get(name)
            if info is None or info.file.name != file:
                raise XdslAneError(
                    f"{directory / file}: tensor '{name}' listed in {INDEX_FILE} is "
                    "not in it"
                )
    return checkpoint
