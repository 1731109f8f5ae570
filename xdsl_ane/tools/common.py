"""Shared plumbing of the `xdsl-ane` commands: parsing IR files, building pass
pipelines, loading weights and inputs, writing outputs atomically, and
turning every failure into one clean diagnostic line."""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.parser import Parser
from xdsl.passes import PassPipeline
from xdsl.universe import Universe
from xdsl.utils.exceptions import DiagnosticException, ParseError


class XdslAneError(Exception):
    """The one exception type of xdsl-ane's tools and API: a user-facing error
    whose message names the file, op or value and what is wrong."""


def make_context() -> Context:
    """A context that knows every dialect of the environment (xDSL's own and
    those registered through `xdsl.universe`, including rlx and mil)."""
    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    return ctx


def parse_module(path: str | Path, ctx: Context | None = None) -> builtin.ModuleOp:
    """Parses and verifies an `.mlir` file; errors name the file and position."""
    ctx = ctx or make_context()
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise XdslAneError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise XdslAneError(f"{path}: not a text file") from None
    return parse_module_text(text, str(path), ctx)


def parse_module_text(
    text: str, name: str, ctx: Context | None = None
) -> builtin.ModuleOp:
    ctx = ctx or make_context()
    try:
        module = Parser(ctx, text, name).parse_module()
    except ParseError as e:
        raise XdslAneError(one_line_parse_error(e, name)) from None
    except DiagnosticException as e:
        raise XdslAneError(f"{name}: {first_line(e)}") from None
    verify(module, name)
    return module


def verify(module: builtin.ModuleOp, name: str) -> None:
    try:
        module.verify()
    except DiagnosticException as e:
        raise XdslAneError(f"{name}: {first_line(e)}") from None


def one_line_parse_error(e: ParseError, name: str | None = None) -> str:
    """`file:line:col: message` from xDSL's multi-line parse error."""
    try:
        location = e.span.get_location()
        file = name or location.file
        where = f"{file}:{location.line}:{location.col}"
    except Exception:
        where = name or "<input>"
    message = e.msg.strip().splitlines()[0] if e.msg else "parse error"
    return f"{where}: {message}"


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # xDSL's verifier messages carry the failing op's text after a header line
    # "Operation does not verify: ..."; prefer that line when present.
    for ln in lines:
        if "does not verify:" in ln:
            return ln.split("does not verify:", 1)[1].strip()
    return lines[0] if lines else type(e).__name__


def all_passes() -> dict[str, Callable]:
    return dict(Universe.get_multiverse().all_passes)


def apply_pipeline(
    module: builtin.ModuleOp, spec: str | None, ctx: Context | None = None
) -> None:
    """Applies an `xdsl-opt`-style pass pipeline to `module` in place."""
    if not spec:
        return
    ctx = ctx or make_context()
    try:
        pipeline = PassPipeline.parse_spec(all_passes(), spec)
    except Exception as e:
        raise XdslAneError(f"pass pipeline '{spec}': {first_line(e)}") from None
    try:
        pipeline.apply(ctx, module)
    except DiagnosticException as e:
        raise XdslAneError(first_line(e)) from None
    verify(module, f"after '{spec}'")


def load_arrays(path: str | Path, what: str) -> dict[str, np.ndarray]:
    """Reads an `.npz` (or `.safetensors`) file into a dict of arrays."""
    path = Path(path)
    if not path.exists():
        raise XdslAneError(f"{path}: {what} file does not exist")
    if path.suffix == ".safetensors":
        from xdsl_ane.tools.safetensors import read_safetensors

        return read_safetensors(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            if not hasattr(data, "files"):
                raise XdslAneError(
                    f"{path}: {what} file is a bare .npy array, expected .npz"
                )
            return {k: data[k] for k in data.files}
    except XdslAneError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise XdslAneError(
            f"{path}: cannot read {what} file: {first_line(e)}"
        ) from None


@contextmanager
def atomic_output(path: str | Path, force: bool = True) -> Iterator[Path]:
    """Yields a temporary path beside `path`; on success it replaces `path`,
    on failure it is removed and `path` is left untouched."""
    path = Path(path)
    if path.exists() and not force:
        raise XdslAneError(f"{path}: already exists (use --force to replace it)")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise XdslAneError(f"{path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise XdslAneError(f"{path}: directory {parent} is not writable")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()
    try:
        yield tmp
        if path.is_dir() and not path.is_symlink():
            import shutil

            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            if tmp.is_dir():
                import shutil

                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink()


def save_npz(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
