"""Reading and writing `.safetensors` weight files with numpy only.

The format: an 8-byte little-endian header length, a JSON header mapping each
tensor name to its dtype, shape and byte range, then the raw data."""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from pathlib import Path

import numpy as np

DTYPES = {
    "F32": np.float32,
    "F16": np.float16,
    "I32": np.int32,
    "I8": np.int8,
    "U8": np.uint8,
    "I64": np.int64,
    "F64": np.float64,
    "BOOL": np.bool_,
}
NAMES = {np.dtype(v): k for k, v in DTYPES.items()}


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    from xdsl_ane.tools.common import XdslAneError

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise XdslAneError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + n])
        body = memoryview(data)[8 + n :]
        out: dict[str, np.ndarray] = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype = info["dtype"]
            begin, end = info["data_offsets"]
            if dtype == "BF16":
                raw = np.frombuffer(body[begin:end], dtype=np.uint16)
                array = (raw.astype(np.uint32) << 16).view(np.float32)
            elif dtype in DTYPES:
                array = np.frombuffer(body[begin:end], dtype=DTYPES[dtype])
            else:
                raise XdslAneError(
                    f"{path}: tensor '{name}' has unsupported dtype {dtype}"
                )
            out[name] = array.reshape(info["shape"]).copy()
        return out
    except XdslAneError:
        raise
    except (
        struct.error,
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        UnicodeDecodeError,
    ) as e:
        raise XdslAneError(f"{path}: not a valid safetensors file ({e})") from None


def write_safetensors(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    header: dict[str, object] = {}
    chunks: list[bytes] = []
    offset = 0
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        raw = array.tobytes()
        header[name] = {
            "dtype": NAMES[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for c in chunks:
            f.write(c)
