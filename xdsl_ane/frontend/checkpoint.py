"""Hugging Face checkpoint directories: `config.json` and the weights, as
`model.safetensors` or sharded (`model-0000i-of-0000n.safetensors` listed
by `model.safetensors.index.json`); bf16, fp16 or fp32 tensors.

Tensors are read with the `safetensors` package, which checks each file's
header and byte ranges; bf16, which numpy has no dtype for, is widened to
fp32 exactly (bf16 is fp32's upper half). `Checkpoint.lazy` gives a
tensor unread (`CheckpointTensor`, a backend `LazyWeight`): it is read,
memory-mapped, block by block where it is used, so that compiling a
model never holds all of its weights. Every problem — a missing or
corrupt file, a shard the index names that is not there, a tensor missing
or of the wrong shape — is one `XdslAneError` naming the file, tensor or
field.
"""

from __future__ import annotations

import json
import math
import mmap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xdsl_ane.backend.weights import CONVERT_BLOCK, LazyWeight
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.safetensors import TensorEntry, tensor_entries

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


RAW_DTYPES = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32}


class CheckpointTensor(LazyWeight):
    """A checkpoint tensor (or rows `rows` of it, times `factor`) read from
    its file, memory-mapped, only where it is used: float32 (bf16 widened
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

    def rows(self, start: int, end: int) -> CheckpointTensor:
        """Rows [start, end) of it, unread."""
        first = 0 if self.rows_of is None else self.rows_of[0]
        return CheckpointTensor(self.entry, (first + start, first + end), self.factor)

    def scaled(self, factor: float) -> CheckpointTensor:
        """It times `factor` (in float32), unread."""
        return CheckpointTensor(self.entry, self.rows_of, factor)

    def read_rows(self, start: int, end: int) -> np.ndarray:
        entry = self.entry
        first = 0 if self.rows_of is None else self.rows_of[0]
        full = entry.shape or (1,)
        row = math.prod(full[1:])
        raw = np.dtype(RAW_DTYPES[entry.dtype])
        count = (end - start) * row
        if count == 0:
            return np.zeros((0, *self.shape[1:]), self.dtype)
        where = entry.offset + (first + start) * row * raw.itemsize
        aligned = where - where % mmap.ALLOCATIONGRANULARITY
        try:
            with (
                open(entry.file, "rb") as f,
                mmap.mmap(
                    f.fileno(),
                    where - aligned + count * raw.itemsize,
                    access=mmap.ACCESS_READ,
                    offset=aligned,
                ) as mapped,
            ):
                data = np.frombuffer(mapped, raw, count, where - aligned)
                if entry.dtype == "BF16":
                    value = (data.astype(np.uint32) << 16).view(np.float32)
                else:
                    value = data.copy()
                del data  # unmapped on leaving: its pages leave the RSS
        except (OSError, ValueError) as e:
            raise XdslAneError(
                f"{entry.file}: cannot read tensor '{entry.name}' ({e})"
            ) from None
        if self.factor is not None:
            value = value * np.float32(self.factor)
        return value.reshape((end - start, *self.shape[1:]) if self.shape else ())


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
