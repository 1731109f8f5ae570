"""Weights and inputs files as dicts of arrays: `.npz` (numpy's zip of named
arrays) and `.safetensors`."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from xdsl_ane.errors import XdslAneError, first_line


def load_arrays(path: str | Path, what: str) -> dict[str, np.ndarray]:
    """Reads an `.npz` (or `.safetensors`) file into a dict of arrays."""
    path = Path(path)
    if not path.exists():
        raise XdslAneError(f"{path}: {what} file does not exist")
    if path.suffix == ".safetensors":
        from xdsl_ane.weights.safetensors import read_safetensors

        return read_safetensors(path)
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
        if not magic.startswith((b"PK", b"\x93NUMPY")):
            raise XdslAneError(f"{path}: {what} file is not an .npz (zip) file")
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise XdslAneError(
                f"{path}: {what} file is a bare .npy array, expected .npz"
            )
        with data:
            return {k: data[k] for k in data.files}
    except XdslAneError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise XdslAneError(
            f"{path}: cannot read {what} file: {first_line(e)}"
        ) from None
