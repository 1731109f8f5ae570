"""Hugging Face checkpoint directories: `config.json` and the weights, as
`model.safetensors` or sharded (`model-0000i-of-0000n.safetensors` listed
by `model.safetensors.index.json`); bf16, fp16 or fp32 tensors.

Tensors are read with the `safetensors` package, which checks each file's
header and byte ranges; bf16, which numpy has no dtype for, is widened to
fp32 exactly (bf16 is fp32's upper half). Every problem — a missing or
corrupt file, a shard the index names that is not there, a tensor missing
or of the wrong shape — is one `XdslAneError` naming the file, tensor or
field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

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

    def items(self, names: Iterator[str]) -> Iterator[tuple[str, np.ndarray]]:
        for name in names:
            yield name, self.tensor(name)


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
