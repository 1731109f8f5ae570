"""Helpers shared by every diagnostic: close-match suggestions."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def close_matches(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names closest to a misspelled `name`."""
    return difflib.get_close_matches(name, sorted(set(known)), n=n, cutoff=0.6)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean 'a' or 'b'?)`, or the empty string when nothing is
    close."""
    matches = close_matches(name, known)
    if not matches:
        return ""
    return f" (did you mean {' or '.join(repr(m) for m in matches)}?)"


def prefix_difference(name: str, known: Iterable[str]) -> tuple[str, str] | None:
    """When `known` names `name` only with a different leading prefix
    (`model.layers.0.x` for `layers.0.x`, or the reverse): the known name
    and the prefix that is added (`+model.`) or dropped (`-model.`)."""
    for other in known:
        if other.endswith("." + name):
            return other, "+" + other[: -len(name)]
        if name.endswith("." + other):
            return other, "-" + name[: -len(other)]
    return None


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 output`, `2 outputs` (`plural` where adding an s is wrong)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
