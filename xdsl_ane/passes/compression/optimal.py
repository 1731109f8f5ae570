"""Optimal one-dimensional k-means, for many rows at once.

On sorted items (weighted points) the clusters of an optimal k-means are
contiguous runs, so the optimum is a dynamic program over split points:
D_m[i] = min_{j<i} D_{m−1}[j] + C(j, i), with C(j, i) the squared error of
items j..i−1 about their mean (from prefix sums of count, Σx, Σx²). The
best j is non-decreasing in i (the cost satisfies the quadrangle
inequality), so each layer is solved by divide and conquer in
O(B log B) instead of O(B²): the middle i of a range is solved by a scan,
and the halves search only to the left and right of its best j. Here the
recursion runs level by level for all rows together: the i-ranges of a
level are the same in every row, their j-ranges differ, and all candidates
of a level are one flat array reduced per (row, range) segment.

`banded_runs` restricts split m to a window of items per row; with
windows that cover every item it is the full optimum (`optimal_runs`).
With a `dtype`, each run costs Σ(x − c)² about its mean c rounded to it —
the error of a LUT stored in that dtype. The rounding bends the cost a
little away from the quadrangle inequality, so the search then finds a
clustering at least as good as the windows' rounded optimum only where
the best source stays monotone (every cost is still computed exactly).
"""

from __future__ import annotations

import numpy as np


def prefix_sums(
    counts: np.ndarray, sums: np.ndarray, squares: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prefix sums [G, B+1] (from 0) of the items' count, Σx and Σx²."""
    zero = np.zeros((counts.shape[0], 1))
    return tuple(
        np.concatenate([zero, np.cumsum(a, axis=1)], axis=1)
        for a in (counts, sums, squares)
    )


def optimal_runs(
    counts: np.ndarray, sums: np.ndarray, squares: np.ndarray, k: int
) -> np.ndarray:
    """The split points [G, k+1] (0, ..., B) of the optimal k runs of the
    items of each row (count, Σx, Σx² per item, [G, B] each, sorted by
    value)."""
    rows, items = counts.shape
    k = min(k, items)
    low, high = full_windows(np.full(rows, items), k)
    return banded_runs(*prefix_sums(counts, sums, squares), low, high)


def full_windows(sizes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The windows [G, k+1] of `banded_runs` that admit every clustering of
    each row's first `sizes` [G] items (> k) into k non-empty runs: split m
    in [m, size − (k − m)], split 0 at 0, split k at the size."""
    split = np.arange(k + 1)
    low = np.broadcast_to(split, (sizes.size, k + 1)).copy()
    high = sizes[:, None] - (k - split)
    low[:, k] = sizes
    high[:, 0] = 0
    return low, high


def run_gain(
    total: np.ndarray, count: np.ndarray, dtype: np.dtype | None
) -> np.ndarray:
    """Σx² minus the squared error of runs of Σx `total` and `count` (> 0)
    values about their mean (rounded to `dtype` if given)."""
    if dtype is None:
        gain = total * total
        gain /= count
        return gain
    centroid = (total / count).astype(dtype).astype(np.float64)
    gain = count * centroid
    np.subtract(2 * total, gain, out=gain)
    gain *= centroid
    return gain


def banded_runs(
    n: np.ndarray,
    s: np.ndarray,
    q: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    dtype: np.dtype | None = None,
) -> np.ndarray:
    """The split points [G, K+1] of the least squared error over the
    clusterings whose split m lies in [low[:, m], high[:, m]] (split 0 at 0,
    split K at the row's end), from the prefix sums `n`, `s`, `q` [G, B+1].
    Every run is non-empty in items."""
    rows = n.shape[0]
    k = low.shape[1] - 1

    def window(m: int) -> np.ndarray:
        """Split m's candidate items [G, T] (a short window repeats its last)."""
        length = high[:, m] - low[:, m] + 1
        steps = np.arange(int(length.max()))[None, :]
        return low[:, m : m + 1] + np.minimum(steps, length[:, None] - 1)

    def at(a: np.ndarray, index: np.ndarray) -> np.ndarray:
        return np.take_along_axis(a, index, axis=1)

    prefix = RowPrefix(n, s, q)
    sources = window(1)
    count, total, square = prefix.at(sources)
    previous = square - run_gain(total, np.maximum(count, 1e-300), dtype)
    back: list[tuple[np.ndarray, np.ndarray]] = []
    for m in range(2, k + 1):
        targets = window(m)
        best, previous = dp_layer(previous, sources, targets, prefix, dtype)
        back.append((best, sources))
        sources = targets
    points = np.zeros((rows, k + 1), np.int64)
    points[:, k] = high[:, k]
    slot = np.zeros((rows, 1), np.int64)
    for m in range(k, 1, -1):
        best, items = back[m - 2]
        slot = at(best, slot)
        points[:, m - 1] = at(items, slot)[:, 0]
    return points


class RowPrefix:
    """Prefix sums of count, Σx and Σx² [G, B+1], read at item indices."""

    def __init__(self, n: np.ndarray, s: np.ndarray, q: np.ndarray):
        self.items = n.shape[1]
        self.flat = tuple(np.ascontiguousarray(a).reshape(-1) for a in (n, s, q))
        self.offset = (np.arange(n.shape[0]) * self.items)[:, None]

    def at(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Count, Σx and Σx² up to `index` [G, T] of each row."""
        flat = index + self.offset
        return tuple(a[flat] for a in self.flat)


def dp_layer(
    previous: np.ndarray,
    sources: np.ndarray,
    targets: np.ndarray,
    prefix: RowPrefix,
    dtype: np.dtype | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """For each target item i [G, T]: the best source slot f (item
    sources[f] < i) and D[i] = previous[f] + C(sources[f], i)."""
    rows, width = previous.shape
    t = targets.shape[1]
    # Per source slot, flat: D − Σx² up to it, count and Σx up to it.
    source_n, source_s, source_q = prefix.at(sources)
    base = (previous - source_q).reshape(-1)
    source_n, source_s = source_n.reshape(-1), source_s.reshape(-1)
    target_n, target_s, target_q = prefix.at(targets)
    # The last slot before each target: sources are sorted in each row, and
    # rows are kept apart by an offset larger than any item.
    spread = (np.arange(rows) * (prefix.items + 1))[:, None]
    last = (
        np.searchsorted((sources + spread).reshape(-1), targets + spread)
        - np.arange(rows)[:, None] * width
        - 1
    )
    current = np.empty((rows, t))
    best = np.zeros((rows, t), np.int64)
    offset = (np.arange(rows) * width)[:, None]
    low, high = np.array([0]), np.array([t - 1])
    f_low = np.zeros((rows, 1), np.int64)
    f_high = np.full((rows, 1), width - 1, np.int64)
    while low.size:
        nodes = low.size
        middle = (low + high) // 2
        top = np.maximum(np.minimum(f_high, last[:, middle]), f_low)
        length = (top - f_low + 1).reshape(-1)
        starts = np.cumsum(length) - length
        size = int(starts[-1] + length[-1])
        flat = np.arange(size) + np.repeat(
            (f_low + offset).reshape(-1) - starts, length
        )
        # Every candidate run is non-empty (its source is before its target).
        count = np.repeat(target_n[:, middle].reshape(-1), length)
        count -= source_n[flat]
        total = np.repeat(target_s[:, middle].reshape(-1), length)
        total -= source_s[flat]
        value = base[flat]
        value -= run_gain(total, count, dtype)
        minimum = np.minimum.reduceat(value, starts)
        # The first candidate of each segment at its minimum.
        hits = np.flatnonzero(value == np.repeat(minimum, length))
        first = flat[hits[np.searchsorted(hits, starts)]]
        chosen = first.reshape(rows, nodes) - offset
        current[:, middle] = minimum.reshape(rows, nodes) + target_q[:, middle]
        best[:, middle] = chosen
        # Children: [low, middle−1] searches [f_low, chosen], [middle+1,
        # high] searches [chosen, f_high].
        left, right = low <= middle - 1, middle + 1 <= high
        low = np.concatenate([low[left], middle[right] + 1])
        high = np.concatenate([middle[left] - 1, high[right]])
        f_low = np.concatenate([f_low[:, left], chosen[:, right]], axis=1)
        f_high = np.concatenate([chosen[:, left], f_high[:, right]], axis=1)
    return best, current
