"""The tokens of MIL text (`program(1.3)`): strings, numbers (decimal and
C99 hex floats), identifiers and punctuation, with whitespace and `//`
comments skipped; each token keeps its offset for `file:line:col` errors.
The parser (`xdsl_ane.frontend.mil_text`) reads the token list."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple, NoReturn

TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>[-+]?(?:0[xX][0-9a-fA-F]*(?:\.[0-9a-fA-F]*)?[pP][-+]?\d+
                      |(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>->|[()\[\]{}<>,=;?+-])
    """,
    re.VERBOSE,
)


class Token(NamedTuple):
    kind: str  # "string", "number", "ident", "punct" or "eof"
    text: str
    offset: int

    def describe(self) -> str:
        return "end of input" if self.kind == "eof" else f"'{self.text}'"


def tokenize(text: str, fail: Callable[[int, str], NoReturn]) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    for m in TOKEN.finditer(text):
        if m.start() != pos:  # a character no token starts with
            break
        kind = m.lastgroup
        assert kind is not None
        if kind != "space":
            tokens.append(Token(kind, m.group(), pos))
        pos = m.end()
    if pos < len(text):
        if text[pos] == '"':
            fail(pos, "unterminated string")
        fail(pos, f"unexpected character '{text[pos]}'")
    tokens.append(Token("eof", "", len(text)))
    return tokens
