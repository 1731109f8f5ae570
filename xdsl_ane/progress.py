"""Progress of the steps of a long command.

`Progress.step(name)` brackets one step. On a terminal the current step is
shown on one line that is redrawn (`[3/9] pass mil-fp16 ...`) and cleared at
the end; in a log (stderr not a terminal) a step that took at least
`threshold` seconds leaves one plain line, `xdsl-ane: pass mil-fp16: 2.1 s`,
so short runs stay silent. `NO_PROGRESS` does nothing (the API's default)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


class Progress:
    def __init__(
        self,
        stream: TextIO | None = None,
        threshold: float = 1.0,
        enabled: bool = True,
    ):
        self.stream = stream or sys.stderr
        self.threshold = threshold
        self.enabled = enabled
        self.terminal = enabled and self.stream.isatty()
        self.done = 0
        self.total: int | None = None

    def expect(self, steps: int) -> None:
        """Announces how many more steps follow (for the counter)."""
        self.total = self.done + steps

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        if self.total is not None and self.done >= self.total:
            self.total = None  # past the announced steps: no counter
        count = f"[{self.done + 1}/{self.total}] " if self.total else ""
        if self.terminal:
            self.stream.write(f"\r\x1b[K{count}{name} ...")
            self.stream.flush()
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            self.done += 1
            if self.terminal:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            elif elapsed >= self.threshold:
                print(f"xdsl-ane: {count}{name}: {elapsed:.1f} s", file=self.stream)


NO_PROGRESS = Progress(enabled=False)
