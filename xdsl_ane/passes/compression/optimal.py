"""Optimal one-dimensional k-means, for many rows at once.

On sorted items (weighted points) the clusters of an optimal k-means are
contiguous runs, so the optimum is a dynamic program over split points:
D_k[i] = min_{j<i} D_{k−1}[j] + C(j, i), with C(j, i) the squared error of
items j..i−1 about their mean (from prefix sums of count, Σx, Σx²). The
best j is non-decreasing in i (the cost satisfies the quadrangle
inequality), so each layer is solved by divide and conquer in
O(B log B) instead of O(B²): the middle i of a range is solved by a scan,
and the halves search only to the left and right of its best j. Here the
recursion runs level by level for all rows together: the i-ranges of a
level are the same in every row, their j-ranges differ, and all candidates
of a level are one flat array reduced per (row, range) segment.
"""

from __future__ import annotations

import numpy as np

OPT_ELEMENTS = 1 << 24
"""The most split points (K × rows × items) kept for backtracking at once."""


def optimal_runs(
    counts: np.ndarray, sums: np.ndarray, squares: np.ndarray, k: int
) -> np.ndarray:
    """The split points [G, k+1] (0, ..., B) of the optimal k runs of the
    items of each row (count, Σx, Σx² per item, [G, B] each, sorted by
    value). Rows are solved in chunks that bound the memory of the table
    of best split points."""
    rows, items = counts.shape
    chunk = max(1, OPT_ELEMENTS // (k * (items + 1)))
    parts = [
        optimal_runs_chunk(
            counts[r : r + chunk], sums[r : r + chunk], squares[r : r + chunk], k
        )
        for r in range(0, rows, chunk)
    ]
    return np.concatenate(parts, axis=0)


def optimal_runs_chunk(
    counts: np.ndarray, sums: np.ndarray, squares: np.ndarray, k: int
) -> np.ndarray:
    rows, items = counts.shape
    zero = np.zeros((rows, 1))
    n = np.concatenate([zero, np.cumsum(counts, axis=1)], axis=1)
    s = np.concatenate([zero, np.cumsum(sums, axis=1)], axis=1)
    q = np.concatenate([zero, np.cumsum(squares, axis=1)], axis=1)

    n, s, q = n.reshape(-1), s.reshape(-1), q.reshape(-1)
    width = items + 1

    def cost(g: np.ndarray, j: np.ndarray, i: np.ndarray) -> np.ndarray:
        """C(j, i) of row g, on the flat prefix sums."""
        at_j, at_i = g * width + j, g * width + i
        total = s[at_i] - s[at_j]
        return q[at_i] - q[at_j] - total**2 / np.maximum(n[at_i] - n[at_j], 1e-300)

    k = min(k, items)
    every = np.arange(rows)[:, None]
    positions = np.arange(items + 1)[None, :]
    every, positions = np.broadcast_arrays(every, positions)
    previous = np.where(
        positions > 0, cost(every, np.zeros_like(positions), positions), np.inf
    )
    best = np.zeros((k + 1, rows, items + 1), np.int32)
    for layer in range(2, k + 1):
        previous, best[layer] = dp_layer(previous, layer, cost)
    points = np.zeros((rows, k + 1), np.int64)
    points[:, k] = items
    row = np.arange(rows)
    for layer in range(k, 1, -1):
        points[:, layer - 1] = best[layer][row, points[:, layer]]
    return points


def dp_layer(previous: np.ndarray, layer: int, cost) -> tuple[np.ndarray, np.ndarray]:
    """D_layer and its best split points from D_{layer−1}, [G, B+1] each."""
    rows, width = previous.shape
    items = width - 1
    current = np.full((rows, width), np.inf)
    best = np.zeros((rows, width), np.int32)
    low, high = np.array([layer]), np.array([items])
    j_low = np.full((rows, 1), layer - 1)
    j_high = np.full((rows, 1), items - 1)
    while low.size:
        nodes = low.size
        middle = (low + high) // 2
        top = np.minimum(j_high, middle[None, :] - 1)
        length = (top - j_low + 1).reshape(-1)
        starts = np.cumsum(length) - length
        total = int(length.sum())
        segment = np.repeat(np.arange(rows * nodes), length)
        offset = np.arange(total) - np.repeat(starts, length)
        j = np.repeat(j_low.reshape(-1), length) + offset
        g = segment // nodes
        i = middle[segment % nodes]
        value = previous.reshape(-1)[g * width + j] + cost(g, j, i)
        minimum = np.minimum.reduceat(value, starts)
        first = np.minimum.reduceat(
            np.where(value == np.repeat(minimum, length), np.arange(total), total),
            starts,
        )
        chosen = j[np.minimum(first, total - 1)].reshape(rows, nodes)
        row = np.arange(rows)[:, None]
        current[row, middle[None, :]] = minimum.reshape(rows, nodes)
        best[row, middle[None, :]] = chosen
        # Children: [low, middle−1] searches [j_low, chosen], [middle+1,
        # high] searches [chosen, j_high].
        left, right = low <= middle - 1, middle + 1 <= high
        low = np.concatenate([low[left], middle[right] + 1])
        high = np.concatenate([middle[left] - 1, high[right]])
        j_low = np.concatenate([j_low[:, left], chosen[:, right]], axis=1)
        j_high = np.concatenate([chosen[:, left], j_high[:, right]], axis=1)
    return current, best
