"""`.safetensors` files, read and written through the `safetensors` package.

The package checks each file's header and byte ranges and reads the
tensors; bf16, which numpy has no dtype for, is widened to fp32 exactly (a
bf16 value is the upper half of an fp32 one), read from the byte range the
checked header gives. Problems are one `XdslAneError` naming the file (and
the tensor)."""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xdsl_ane.errors import XdslAneError

NUMPY_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
}
"""The safetensors dtypes read as numpy arrays of the same dtype (BF16 is
read as float32)."""


@dataclass(frozen=True)
class TensorEntry:
    """Where one tensor lives: its file, safetensors dtype, shape and the
    absolute byte offset of its data."""

    file: Path
    name: str
    dtype: str
    shape: tuple[int, ...]
    offset: int

    def read(self) -> np.ndarray:
        """The tensor as numpy (BF16 widened to float32)."""
        if self.dtype == "BF16":
            count = int(np.prod(self.shape)) if self.shape else 1
            raw = np.fromfile(self.file, np.uint16, count, offset=self.offset)
            return (raw.astype(np.uint32) << 16).view(np.float32).reshape(self.shape)
        if self.dtype not in NUMPY_DTYPES:
            raise XdslAneError(
                f"{self.file}: tensor '{self.name}' has unsupported dtype {self.dtype}"
            )
        from safetensors import SafetensorError, safe_open

        try:
            with safe_open(str(self.file), framework="np") as f:
                return f.get_tensor(self.name)
        except (SafetensorError, OSError) as e:
            raise XdslAneError(
                f"{self.file}: cannot read tensor '{self.name}' ({e})"
            ) from None


def tensor_entries(path: str | Path) -> dict[str, TensorEntry]:
    """The tensors of a safetensors file (their data is read on demand)."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise XdslAneError(f"{path}: weights file not found")
    try:
        with safe_open(str(path), framework="np") as f:
            names = set(f.keys())
        with open(path, "rb") as raw:
            (n,) = struct.unpack("<Q", raw.read(8))
            header = json.loads(raw.read(n))
    except (SafetensorError, OSError, ValueError, struct.error) as e:
        raise XdslAneError(f"{path}: not a valid safetensors file ({e})") from None
    header.pop("__metadata__", None)
    if set(header) != names:
        raise XdslAneError(f"{path}: not a valid safetensors file (header mismatch)")
    return {
        name: TensorEntry(
            path,
            name,
            info["dtype"],
            tuple(info["shape"]),
            8 + n + info["data_offsets"][0],
        )
        for name, info in header.items()
    }


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file."""
    return {name: entry.read() for name, entry in tensor_entries(path).items()}


def write_safetensors(
    path: str | Path,
    arrays: Mapping[str, np.ndarray],
    metadata: dict[str, str] | None = None,
) -> None:
    """A safetensors file of `arrays`, each of its own shape (a 0-d one
    stays 0-d: np.ascontiguousarray would make it [1])."""
    from safetensors.numpy import save_file

    tensors = {k: np.asarray(v, order="C") for k, v in arrays.items()}
    save_file(tensors, str(path), metadata=metadata)
