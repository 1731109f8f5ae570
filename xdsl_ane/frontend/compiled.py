"""Which paths are compiled models (what `frontend.milproto.read_compiled`
reads), told from their names alone, so that a command given an `.mlir`
source does not load coremltools' protobuf modules to find that out."""

from __future__ import annotations

from pathlib import Path

PACKAGE_MODEL = Path("Data/com.apple.CoreML/model.mlmodel")
"""The protobuf inside an `.mlpackage`."""


def is_compiled(path: Path) -> bool:
    """A path `read_compiled` reads (not an `.mlir` source)."""
    return path.suffix == ".mil" or (
        path.is_dir()
        and any(
            (path / p).exists() for p in (PACKAGE_MODEL, "model.mlmodel", "model.mil")
        )
    )
