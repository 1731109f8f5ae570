"""The one exception type of xdsl-ane and the helpers that keep every
diagnostic one line (a leaf module: every layer raises these)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from xdsl.utils.exceptions import DiagnosticException


class XdslAneError(Exception):
    """The one exception type of xdsl-ane's tools and API: a user-facing error
    whose message names the file, op or value and what is wrong. The message
    is one line: control characters (a newline in a weight's name) are
    escaped."""

    def __init__(self, message: str = "", *args: object):
        super().__init__(one_line(str(message)), *args)


_COMMAND_LINE: ContextVar[bool] = ContextVar("xdsl_ane_command_line", default=False)
"""Whether the caller is the `xdsl-ane` command (set by `command_line`)."""

_NO_VALUE = object()


@contextmanager
def command_line() -> Iterator[None]:
    """Within the block (the `xdsl-ane` command's handler) the caller is the
    command line: `option` names options as its flags. A context variable,
    so a thread of its own (which starts without it) speaks Python."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def from_command_line() -> bool:
    """Whether the caller is the `xdsl-ane` command (see `command_line`)."""
    return _COMMAND_LINE.get()


def option(name: str, value: object = _NO_VALUE, *, flag: str | None = None) -> str:
    """An option as the caller wrote it, for a message: `name` is the
    Python API's parameter (or function) and `flag` the command line's
    option (default `--` and `name` with dashes). From Python
    `max_package_size=0`, `compress='bad'` (the value's repr, a path's as
    a string), or `name` alone without a value; from the command line
    `--max-package-size 0`, `--compress bad`, a flag alone without a value
    or with True (`--force`)."""
    if from_command_line():
        flag = flag or "--" + name.replace("_", "-")
        if value is _NO_VALUE or value is True:
            return flag
        return f"{flag} {value}"
    if value is _NO_VALUE:
        return name
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    return f"{name}={value!r}"


def one_line(text: str) -> str:
    """`text` with its non-printable characters escaped (`\\n`, `\\x00`)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class XdslAneInternalError(XdslAneError):
    """A failure inside xdsl-ane rather than in its input (a bug: please
    report it). Still an `XdslAneError` with a one-line message, so tools
    and embedders see one exception type; the original exception is its
    `__cause__`."""


def internal_error(where: str, e: BaseException) -> XdslAneInternalError:
    """`where: internal error in xdsl-ane (please report): Type: message`."""
    return XdslAneInternalError(
        f"{where}: internal error in xdsl-ane (please report it): "
        f"{first_line(e, typed=True)}"
    )


def first_line(e: BaseException, typed: bool = False) -> str:
    """The line of `e`'s message that says what went wrong, stripped: the
    first non-blank one, except that xDSL's verifier messages carry the
    failing op's text after a header line "Operation does not verify: ...",
    of which the text after "does not verify:" is taken. A message with no
    text is the exception's type name; `typed` puts `Type: ` before the
    line (the form of messages about another library's failures)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    verifier = [ln for ln in lines if "does not verify:" in ln]
    if verifier:
        text = verifier[0].split("does not verify:", 1)[1].strip()
    elif lines:
        text = lines[0]
    else:
        return type(e).__name__
    if not typed:
        return text
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


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
