"""Where each op of a parsed file came from, for diagnostics.

xDSL 0.75's ops keep no source location, so the parsers record one for each
op they build (`record`) and diagnostics about an op start with
`file:line:col: ` (`where`). Ops made later by passes have none, and their
diagnostics name the op alone. The table holds ops weakly: it lives as long
as the IR does."""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriterListener


@dataclass(eq=False)
class SourceText:
    """A parsed text, with its line starts found once, when first needed."""

    name: str
    text: str
    _line_starts: list[int] | None = field(default=None, repr=False)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            i = find("\n")
            while i != -1:
                starts.append(i + 1)
                i = find("\n", i + 1)
            self._line_starts = starts
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1


_LOCATIONS: weakref.WeakKeyDictionary[Operation, tuple[SourceText, int]] = (
    weakref.WeakKeyDictionary()
)


def record(op: Operation, source: SourceText, offset: int) -> None:
    """Remembers that `op` was read at `offset` of `source`."""
    _LOCATIONS[op] = (source, offset)


def location(op: Operation) -> str | None:
    """`file:line:col` of the op, or None when it was not read from a file
    (nor rewritten from an op that was)."""
    entry = _LOCATIONS.get(op)
    if entry is None:
        return None
    source, offset = entry
    line, col = source.position(offset)
    return f"{source.name}:{line}:{col}"


def where(op: Operation) -> str:
    """`file:line:col: ` for an op read from a file, else the empty string."""
    found = location(op)
    return f"{found}: " if found else ""


def copy_location(new: Operation, old: Operation) -> None:
    """Gives `new` (a rewrite of `old`) the location of `old`."""
    entry = _LOCATIONS.get(old)
    if entry is not None and new not in _LOCATIONS:
        _LOCATIONS[new] = entry


def location_keeper() -> PatternRewriterListener:
    """A rewrite listener that gives the ops a pattern inserts the location
    of the op they replace (pass it to `PatternRewriteWalker`)."""
    inserted: list[Operation] = []

    def on_insertion(op: Operation) -> None:
        inserted.append(op)

    def on_replacement(op: Operation, _: Sequence[SSAValue | None]) -> None:
        for new in inserted:
            copy_location(new, op)
        inserted.clear()

    return PatternRewriterListener(
        operation_insertion_handler=[on_insertion],
        operation_replacement_handler=[on_replacement],
        operation_removal_handler=[lambda _: inserted.clear()],
    )
