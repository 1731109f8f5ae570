"""Shared plumbing of the `xdsl-ane` commands: parsing IR files, building pass
pipelines, loading weights and inputs, writing outputs atomically, and
turning every failure into one clean diagnostic line."""

from __future__ import annotations

import dataclasses
import re
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass, PassPipeline
from xdsl.universe import Universe
from xdsl.utils.arg_spec import parse_pipeline as parse_pass_specs
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

from xdsl_ane.diagnostics import did_you_mean
from xdsl_ane.errors import (  # noqa: F401 (the tools' names for them)
    XdslAneError,
    XdslAneInternalError,
    first_line,
    internal_error,
    one_line,
)
from xdsl_ane.locations import SourceText, location, record
from xdsl_ane.outputs import (  # noqa: F401 (the tools' names for them)
    atomic_output,
    check_output,
    check_outputs,
    replace,
    save_npz,
)
from xdsl_ane.progress import NO_PROGRESS, Progress


@contextmanager
def reported(where: str, source: str | None = None) -> Iterator[None]:
    """Turns xDSL's diagnostics into an `XdslAneError` named by `where`, and
    any other exception into an internal error; an `XdslAneError` that does
    not name `source` (the input file) is prefixed with it."""
    try:
        yield
    except XdslAneError as e:
        if source is None or source in str(e):
            raise
        raise type(e)(f"{source}: {e}") from e.__cause__
    except DiagnosticException as e:
        raise XdslAneError(f"{where}: {first_line(e)}") from None
    except MemoryError:
        raise XdslAneError(f"{where}: out of memory") from None
    except Exception as e:
        raise internal_error(where, e) from e


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


STRING_OR_COMMENT = re.compile(
    r"//[^\n]*"
    r'|"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
    r'|"'
)
"""A comment, a well-formed MLIR string literal, or (alone) the quote of
one that is not: each alternative is linear to match."""


def check_string_literals(text: str, name: str) -> None:
    """Fails on an unterminated string literal (or one with an invalid
    escape). xDSL 0.75's lexer matches string literals with a nested
    quantifier that takes exponential time on such a literal followed by a
    long line, so the parser would hang instead of reporting it."""
    for m in STRING_OR_COMMENT.finditer(text):
        if m.group() == '"':
            line = text.count("\n", 0, m.start()) + 1
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            raise XdslAneError(
                f"{name}:{line}:{col}: unterminated string literal (or an "
                "invalid escape in it; strings end on the same line)"
            )


class LocatingParser(Parser):
    """xDSL's parser, recording where each op starts (`xdsl_ane.locations`)
    so that diagnostics about it can name `file:line:col`."""

    def __init__(self, ctx: Context, text: str, name: str):
        super().__init__(ctx, text, name)
        self.source = SourceText(name, text)

    def parse_operation(self) -> Operation:
        offset = self._current_token.span.start
        op = super().parse_operation()
        record(op, self.source, offset)
        return op


def parse_module_text(
    text: str, name: str, ctx: Context | None = None
) -> builtin.ModuleOp:
    ctx = ctx or make_context()
    check_string_literals(text, name)
    try:
        module = LocatingParser(ctx, text, name).parse_module()
    except ParseError as e:
        raise XdslAneError(one_line_parse_error(e, name)) from None
    except DiagnosticException as e:
        raise XdslAneError(f"{name}: {first_line(e)}") from None
    verify(module, name)
    return module


LOCATION = re.compile(r"^(\S+:\d+:\d+): ")
"""A diagnostic that starts with `file:line:col: `."""


def verify(module: builtin.ModuleOp, name: str) -> None:
    """Verifies `module`; the error names the failing op's `file:line:col`
    where it was read from a file, else `name`."""
    try:
        module.verify()
    except DiagnosticException as e:
        failing = unverified_op(module)
        at = location(failing) if failing is not None else None
        raise XdslAneError(f"{at or name}: {first_line(e)}") from None


def unverified_op(module: builtin.ModuleOp) -> Operation | None:
    """The innermost op of `module` that does not verify on its own."""
    found = None
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException:
            found = op
            if not op.regions:
                return op
    return found


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


def all_passes() -> dict[str, Callable]:
    return dict(Universe.get_multiverse().all_passes)


def parse_pipeline(spec: str) -> PassPipeline:
    """The passes of an `xdsl-opt`-style pipeline spec; a malformed spec, an
    unknown pass or a bad option is one line naming the spec."""
    try:
        check_pass_names(spec)
        return PassPipeline.parse_spec(all_passes(), spec)
    except XdslAneError:
        raise
    except ArgSpecParseError as e:  # a BaseException in xDSL
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        position = next((ln for ln in lines if ln.startswith("pass-pipeline:")), "")
        column = position.rsplit(":", 1)[-1] if position else "?"
        message = lines[-1].strip() if lines else "malformed"
        raise XdslAneError(
            f"pass pipeline '{spec}': column {column}: {message}"
        ) from None
    except Exception as e:
        raise XdslAneError(f"pass pipeline '{spec}': {first_line(e)}") from None


def check_pass_names(spec: str) -> None:
    """Fails on an unknown pass or option of `spec`, naming the closest
    known ones."""
    available = all_passes()
    for p in parse_pass_specs(spec):
        if p.name not in available:
            raise XdslAneError(
                f"pass pipeline '{spec}': unknown pass '{p.name}'"
                f"{did_you_mean(p.name, available)}"
            )
        options = [
            f.name.replace("_", "-") for f in dataclasses.fields(available[p.name]())
        ]
        for key in p.parameters:
            if key.replace("_", "-") not in options:
                known = ", ".join(options) or "none"
                raise XdslAneError(
                    f"pass pipeline '{spec}': {p.name} has no option '{key}'"
                    f"{did_you_mean(key.replace('_', '-'), options)} (its options: "
                    f"{known})"
                )


def apply_pipeline(
    module: builtin.ModuleOp,
    spec: str | None,
    ctx: Context | None = None,
    source: str | None = None,
) -> None:
    """Applies an `xdsl-opt`-style pass pipeline to `module` in place. Errors
    name `source` (the input file) and the failing pass."""
    if not spec:
        return
    ctx = ctx or make_context()
    apply_passes(
        module, [(p.name, p) for p in parse_pipeline(spec).passes], ctx, source
    )
    verify(module, f"{source + ': ' if source else ''}after '{spec}'")


def apply_passes(
    module: builtin.ModuleOp,
    passes: Sequence[tuple[str, ModulePass]],
    ctx: Context,
    source: str | None = None,
    progress: Progress = NO_PROGRESS,
) -> None:
    """Applies `passes` in order; each comes with the name its errors carry
    (`ane-pipeline` for the passes of the pipeline pass)."""
    prefix = f"{source}: " if source else ""
    for name, p in passes:
        try:
            with progress.step(f"pass {p.name}"):
                p.apply(ctx, module)
        except DiagnosticException as e:
            # A pass names the op's `file:line:col` first where it knows it.
            message = first_line(e)
            located = LOCATION.match(message)
            at = f"{located.group(1)}: " if located else prefix
            message = message[located.end() :] if located else message
            if not message.startswith(name):
                message = f"{name}: {message}"
            raise XdslAneError(at + message) from None
        except MemoryError:
            raise
        except Exception as e:
            raise internal_error(f"{prefix}pass {p.name}", e) from e


def load_arrays(path: str | Path, what: str) -> dict[str, np.ndarray]:
    """Reads an `.npz` (or `.safetensors`) file into a dict of arrays."""
    path = Path(path)
    if not path.exists():
        raise XdslAneError(f"{path}: {what} file does not exist")
    if path.suffix == ".safetensors":
        from xdsl_ane.frontend.safetensors import read_safetensors

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
