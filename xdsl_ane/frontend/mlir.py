"""Reading MLIR text: rlx and mil programs (and any registered dialect) from
`.mlir` files, each op's position recorded for diagnostics, string literals
checked before xDSL's lexer sees them, parse errors in one line, the module
verified."""

from __future__ import annotations

import re
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError

import xdsl_ane.dialects.float_text  # noqa: F401 (hex float elements as bits)
from xdsl_ane.errors import XdslAneError, first_line
from xdsl_ane.locations import SourceText, record
from xdsl_ane.passes.driver import make_context, verify


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
