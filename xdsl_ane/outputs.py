"""The one output policy of every command: an output is written beside its
path and moved into place only when complete, an existing output is
replaced only with `force`, and never one of the command's inputs."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from xdsl_ane.errors import XdslAneError


def check_output(path: str | Path, force: bool = True) -> Path:
    """Fails unless `path` can be written: its directory exists and is
    writable, and it does not exist yet (or `force`)."""
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not force:
        raise XdslAneError(f"{path}: already exists (use --force to replace it)")
    parent = path.parent
    if not parent.is_dir():
        raise XdslAneError(f"{path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise XdslAneError(f"{path}: directory {parent} is not writable")
    return path


def check_outputs(
    outputs: Sequence[str | Path],
    force: bool,
    inputs: Sequence[str | Path | None] = (),
) -> None:
    """The one output policy of every command: each output can be written
    (`check_output`), exists already only with `force`, and is none of the
    command's `inputs` nor a directory holding one (not even with
    `force`)."""
    sources = [(Path(i), Path(i).resolve()) for i in inputs if i is not None]
    for output in outputs:
        resolved = Path(output).resolve()
        for given, source in sources:
            if resolved == source or resolved in source.parents:
                what = "is" if resolved == source else "holds"
                raise XdslAneError(
                    f"{output}: {what} the input {given} of this command; write "
                    "the output elsewhere"
                )
    for output in outputs:
        check_output(output, force)


@contextmanager
def atomic_output(path: str | Path, force: bool = True) -> Iterator[Path]:
    """Yields a temporary path beside `path`; on success it replaces `path`,
    on failure it is removed and `path` is left untouched."""
    path = check_output(path, force)
    parent = path.parent
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()
    old = tmp.with_name(tmp.name.removesuffix(".tmp") + ".old")
    try:
        try:
            yield tmp
        except OSError as e:
            raise XdslAneError(f"{path}: cannot write: {e.strerror or e}") from None
        if not tmp.exists() and not tmp.is_symlink():
            raise XdslAneError(f"{path}: nothing was written")
        replace(tmp, path, old)
    finally:
        for leftover in (tmp, old):
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
            elif leftover.exists() or leftover.is_symlink():
                leftover.unlink()


def replace(new: Path, path: Path, aside: Path) -> None:
    """Moves `new` to `path`. A file replaces a file in one step; anything
    else (a directory output, or a file where a directory was) moves the
    old output to `aside` first and puts it back if the move fails, so an
    interruption leaves either the old or the new output."""
    try:
        if not (path.exists() or path.is_symlink()):
            os.replace(new, path)
            return
        if path.is_file() and new.is_file() and not path.is_symlink():
            os.replace(new, path)
            return
        os.replace(path, aside)
        try:
            os.replace(new, path)
        except BaseException:
            os.replace(aside, path)
            raise
    except OSError as e:
        raise XdslAneError(f"{path}: cannot replace: {e.strerror or e}") from None


def save_npz(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
