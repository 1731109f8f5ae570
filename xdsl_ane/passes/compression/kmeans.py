"""K-means palettization, vectorized over groups: every group of a tensor
(a row of the [G, n] view) gets its own lookup table of 2^nbits values.

In one dimension the k-means clusters of sorted values are contiguous runs,
so a clustering is its K − 1 split points in the sorted values. Each group
is sorted once (fp16 through its bit patterns: 16-bit keys sort by radix)
and prefix sums of x and x² give any run's count, sum and squared error
Σx² − (Σx)²/count in O(1). Then, for all groups at once:

1. the optimal k-means of the group's values cut into a few hundred items
   (`optimal.optimal_runs`, a dynamic program; exact when the group has no
   more values than items) — half the cuts at equal counts, half at equal
   steps of value, so that the sparse tails are resolved too;
2. `SortedGroups.search`: the best joint move of all splits by up to
   `REACH` steps of a size halving down to single values (a dynamic
   program along the chain of splits, exact over those moves);
3. Lloyd's algorithm (a step costs O(K log n): splits by bisection), then
   again with the centroids rounded to the LUT's dtype at each step, so
   that the error reported is that of the stored model.

Lloyd's algorithm alone, from any start, stops at one of the many local
optima that a sample's discreteness makes; the optimum over items lands
near the global one and the joint moves reach what Lloyd's single-centroid
steps cannot."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xdsl_ane.passes.compression.optimal import optimal_runs

MAX_ITERATIONS = 300
REACH = 3
"""Steps each split may move in one `refine`."""
MAX_OPTIMAL_CLUSTERS = 64
"""Up to this many clusters (lut6) step 1 runs; the search for lut8's 256
clusters starts from the quantiles."""
TOTAL_ITEMS = 1 << 15
"""Items of the optimal k-means: TOTAL_ITEMS over all rows for 16 clusters
(fewer with more clusters, the cost growing with their number), and at
least max(10 K, 384) per row. A row of more values is cut into that many runs,
whose optimum `SortedGroups.search` and Lloyd's algorithm then refine on the
values themselves; a row of fewer is solved exactly."""


@dataclass
class Palettized:
    """`indices` (uint8, `values`' shape, each < 2^nbits) into `lut` of shape
    [G, 2^nbits]: group g (a row of the [G, n] view) decompresses to
    lut[g, indices]."""

    indices: np.ndarray
    lut: np.ndarray
    squared_error: np.ndarray
    """Σ (x − x̂)² per group, float64."""


def sort_order(groups: np.ndarray) -> np.ndarray:
    """Per row, the order that sorts it (ties in any order)."""
    if groups.dtype == np.float16:
        bits = groups.view(np.uint16)
        # An order-preserving key: flip the sign bit of positives, every bit
        # of negatives (−0 and +0 stay neighbours).
        keys = np.where(bits & 0x8000, ~bits, bits | 0x8000).astype(np.uint16)
        return np.argsort(keys, axis=1, kind="stable")
    return np.argsort(groups, axis=1)


def split_points(sorted_values: np.ndarray, boundaries: np.ndarray) -> np.ndarray:
    """For each row r and boundary b = boundaries[r, j], the number of values
    of row r below b (rows sorted): a vectorized bisection."""
    rows, n = sorted_values.shape
    low = np.zeros(boundaries.shape, np.int64)
    high = np.full(boundaries.shape, n, np.int64)
    row = np.arange(rows)[:, None]
    while True:
        active = low < high
        if not active.any():
            return low
        middle = (low + high) // 2
        below = sorted_values[row, np.minimum(middle, n - 1)] < boundaries
        low = np.where(active & below, middle + 1, low)
        high = np.where(active & ~below, middle, high)


class SortedGroups:
    """Rows of values sorted, with prefix sums of x and x² (float64)."""

    def __init__(self, groups: np.ndarray):
        self.order = sort_order(groups)
        self.values = np.take_along_axis(groups, self.order, axis=1).astype(np.float64)
        rows, n = groups.shape
        self.sums = np.zeros((rows, n + 1))
        np.cumsum(self.values, axis=1, out=self.sums[:, 1:])
        self.squares = np.zeros((rows, n + 1))
        np.cumsum(np.square(self.values), axis=1, out=self.squares[:, 1:])

    def clusters(self, centroids: np.ndarray) -> np.ndarray:
        """The split points [G, K+1] (0, ..., n) of the clusters of the
        sorted centroids: values nearer to centroid j than to its
        neighbours form run j."""
        rows, n = self.values.shape
        middle = (centroids[:, 1:] + centroids[:, :-1]) / 2
        inner = split_points(self.values, middle)
        return np.concatenate(
            [np.zeros((rows, 1), np.int64), inner, np.full((rows, 1), n)], axis=1
        )

    def statistics(self, points: np.ndarray):
        """Count, Σx and Σx² of each run between split points."""
        sums = np.diff(np.take_along_axis(self.sums, points, axis=1), axis=1)
        squares = np.diff(np.take_along_axis(self.squares, points, axis=1), axis=1)
        return np.diff(points, axis=1), sums, squares

    def error(self, centroids: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Σ (x − c)² per row for the runs at `points` and their centroids."""
        counts, sums, squares = self.statistics(points)
        per_cluster = squares - 2 * centroids * sums + counts * centroids**2
        return np.maximum(per_cluster, 0).sum(axis=1)

    def lloyd(
        self, centroids: np.ndarray, dtype: np.dtype | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Lloyd's algorithm from `centroids` [G, K] (sorted) until the
        clusters stop changing; returns the centroids and split points.
        With `dtype`, centroids are rounded to it at each step (the nearest
        stored value to a cluster's mean is its best one), so the error
        keeps falling with the LUT as it is stored."""
        points = self.clusters(centroids)
        for _ in range(MAX_ITERATIONS):
            counts, sums, _ = self.statistics(points)
            # An empty cluster keeps its centroid.
            centroids = np.where(counts > 0, sums / np.maximum(counts, 1), centroids)
            if dtype is not None:
                centroids = centroids.astype(dtype).astype(np.float64)
            centroids = np.sort(centroids, axis=1)
            moved = self.clusters(centroids)
            if np.array_equal(moved, points):
                break
            points = moved
        return centroids, points

    def run_costs(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Σ (x − mean)² of the sorted runs [start, end) of each row (index
        arrays [G, ...]); 0 for an empty run."""
        rows = self.values.shape[0]
        flat_start = start.reshape(rows, -1)
        flat_end = end.reshape(rows, -1)
        count = flat_end - flat_start
        total = np.take_along_axis(self.sums, flat_end, 1) - np.take_along_axis(
            self.sums, flat_start, 1
        )
        square = np.take_along_axis(self.squares, flat_end, 1) - np.take_along_axis(
            self.squares, flat_start, 1
        )
        cost = np.maximum(square - total**2 / np.maximum(count, 1), 0)
        return cost.reshape(start.shape)

    def refine(self, points: np.ndarray, step: int, reach: int) -> np.ndarray:
        """The best split points [G, K+1] among those that move each inner
        split of `points` by a multiple of `step` up to `reach` steps: a
        dynamic program along the chain of splits, exact over these
        (2·reach + 1)^(K−1) choices in O(K · reach²)."""
        rows, n = self.values.shape
        k = points.shape[1] - 1
        offsets = step * np.arange(-reach, reach + 1)
        candidates = np.clip(points[:, 1:-1, None] + offsets, 0, n)  # [G, K-1, C]
        width = candidates.shape[2]
        zero = np.zeros((rows, 1), np.int64)
        total = self.run_costs(np.broadcast_to(zero, (rows, width)), candidates[:, 0])
        back = np.zeros((rows, k - 1, width), np.int64)
        for j in range(1, k - 1):
            start = np.broadcast_to(candidates[:, j - 1, :, None], (rows, width, width))
            end = np.broadcast_to(candidates[:, j, None, :], (rows, width, width))
            step_cost = np.where(start <= end, self.run_costs(start, end), np.inf)
            through = total[:, :, None] + step_cost  # [G, from, to]
            back[:, j] = np.argmin(through, axis=1)
            total = np.take_along_axis(through, back[:, j][:, None, :], 1)[:, 0]
        last = np.full((rows, width), n)
        total = total + self.run_costs(candidates[:, -1], last)
        choice = np.argmin(total, axis=1)
        refined = points.copy()
        row = np.arange(rows)
        for j in range(k - 2, -1, -1):
            refined[:, j + 1] = candidates[row, j, choice]
            choice = back[row, j, choice]
        return refined

    def search(self, points: np.ndarray, step: int) -> np.ndarray:
        """`refine` from steps of `step` positions down to single ones, at
        each scale until the splits settle."""
        while True:
            for _ in range(MAX_ITERATIONS):
                moved = self.refine(points, step, REACH)
                if np.array_equal(moved, points):
                    break
                points = moved
            if step == 1:
                return points
            step = max(1, step // 2)


def optimal_on_items(data: SortedGroups, k: int, items: int) -> np.ndarray:
    """Split points [G, K+1] of the optimal k-means of each row's sorted
    values cut into `items` runs: exact when every value is an item, else
    optimal among the clusterings whose splits fall between items. Half
    the cuts are at equal counts, half at equal steps of value, so that
    the sparse tails, where the outer centroids sit, are cut finely too."""
    rows, n = data.values.shape
    if n <= items:
        edges = np.broadcast_to(np.arange(n + 1), (rows, n + 1))
    else:
        by_count = np.linspace(0, n, items // 2 + 1).astype(np.int64)
        low, high = data.values[:, :1], data.values[:, -1:]
        levels = low + (high - low) * np.arange(1, items - items // 2) / (
            items - items // 2
        )
        by_value = split_points(data.values, levels)
        edges = np.sort(
            np.concatenate(
                [np.broadcast_to(by_count, (rows, len(by_count))), by_value], axis=1
            ),
            axis=1,
        )
    counts = np.diff(edges, axis=1).astype(np.float64)
    sums = np.diff(np.take_along_axis(data.sums, edges, 1), axis=1)
    squares = np.diff(np.take_along_axis(data.squares, edges, 1), axis=1)
    runs = optimal_runs(counts, sums, squares, k)
    return np.take_along_axis(edges, runs, axis=1)


def run_means(data: SortedGroups, points: np.ndarray) -> np.ndarray:
    """The centroids of the runs at `points` (an empty run takes its row's
    smallest value: a repeated entry)."""
    counts, sums, _ = data.statistics(points)
    means = sums / np.maximum(counts, 1)
    return np.sort(np.where(counts > 0, means, data.values[:, :1]), axis=1)


def palettize(groups: np.ndarray, nbits: int, lut_dtype=np.float16) -> Palettized:
    """K-means LUTs of 2^nbits entries for each row of `groups` [G, n]."""
    k = 2**nbits
    rows, n = groups.shape
    data = SortedGroups(groups)
    if k <= MAX_OPTIMAL_CLUSTERS:
        items = min(n, max(10 * k, 384, TOTAL_ITEMS * 16 // (k * rows)))
        points = optimal_on_items(data, k, items)
        step = n // items // 2
    else:  # the optimum's cost grows with k: the search starts at quantiles
        quantiles = np.minimum(((np.arange(k) + 0.5) * n / k).astype(np.int64), n - 1)
        points = data.clusters(data.values[:, quantiles])
        step = n // k // 4
    points = data.search(points, max(1, step))
    centroids, _ = data.lloyd(run_means(data, points))
    # The stored LUT: centroids rounded to its dtype, polished as such.
    rounded, points = data.lloyd(
        np.sort(centroids.astype(lut_dtype).astype(np.float64), axis=1), lut_dtype
    )
    lut = rounded.astype(lut_dtype)
    error = data.error(rounded, points)
    sorted_labels = cluster_labels(points, n)
    indices = np.empty(groups.shape, np.uint8)
    np.put_along_axis(indices, data.order, sorted_labels, axis=1)
    return Palettized(indices, lut, error)


def cluster_labels(points: np.ndarray, n: int) -> np.ndarray:
    """Run labels [G, n] of sorted positions for split points [G, K+1]."""
    rows, k = points.shape[0], points.shape[1] - 1
    labels = np.broadcast_to(np.arange(k, dtype=np.uint8), (rows, k))
    return np.repeat(labels.reshape(-1), np.diff(points, axis=1).reshape(-1)).reshape(
        rows, n
    )
