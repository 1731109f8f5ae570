"""The one exception type of xdsl-ane and the helpers that keep every
diagnostic one line (a leaf module: every layer raises these)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from xdsl.utils.exceptions import DiagnosticException


class XdslAneError(Exception):
    """The one exception type of xdsl-ane's tools and API: a user-facing error
    whose message names the file, op or value and what is wrong. The message
    is one line: control characters (a newline in a weight's name) are
    escaped."""

    def __init__(self, message: str = "", *args: object):
        super().__init__(one_line(str(message)), *args)


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
