"""Weights read only where they are used: `LazyWeight`, a tensor known by
its shape and dtype whose data is read from its file block by block
(a checkpoint tensor: weights/checkpoint.py), and converted straight into
a writer's buffer (backend/weights.py)."""

from __future__ import annotations

import math

import numpy as np

CONVERT_BLOCK = 1 << 22
"""The most elements `LazyWeight.convert_into` reads at a time."""


class LazyWeight:
    """A weight whose data is read only where it is used (a checkpoint
    tensor, read a block at a time: weights/checkpoint.py): its `shape` and
    `dtype` without its data. `read_rows` gives rows of it, read afresh
    each time; `np.asarray` reads all of it; `convert_into` converts it
    block by block into a caller's buffer, so that writing the blob holds
    neither the weights nor a whole float32 copy of one."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def read_rows(self, start: int, end: int) -> np.ndarray:
        """Rows [start, end) along the first axis, as a new array."""
        raise NotImplementedError

    def read(self) -> np.ndarray:
        if not self.shape:
            return self.read_rows(0, 1).reshape(())
        return self.read_rows(0, self.shape[0])

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        value = self.read()
        return value if dtype is None else value.astype(dtype, copy=False)

    def convert_into(self, out: np.ndarray, perm: tuple[int, ...] | None) -> None:
        """The data, transposed by `perm`, row-major into the flat `out`
        (of the target dtype): CONVERT_BLOCK elements at a time where no
        transpose is needed."""
        if perm is not None or len(self.shape) < 1:
            source = self.read()
            if perm is not None:
                source = np.transpose(source, perm)
            np.copyto(out.reshape(source.shape), source, casting="same_kind")
            return
        row = self.size // self.shape[0] if self.shape[0] else 0
        step = max(1, CONVERT_BLOCK // max(row, 1))
        for start in range(0, self.shape[0], step):
            end = min(start + step, self.shape[0])
            block = self.read_rows(start, end)
            np.copyto(
                out[start * row : end * row].reshape(block.shape),
                block,
                casting="same_kind",
            )
