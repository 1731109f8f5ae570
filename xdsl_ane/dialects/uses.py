"""Walking a value's uses through the ops that pass it on."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from xdsl.ir import SSAValue, Use


def uses_through(value: SSAValue, passes_on: Callable[[Use], bool]) -> Iterator[Use]:
    """Every use of `value`, and of the results of each op that a use
    `passes_on` (a reshape of a mask, a cast of an index), each value once."""
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        for use in v.uses:
            yield use
            if passes_on(use):
                stack.extend(use.operation.results)
