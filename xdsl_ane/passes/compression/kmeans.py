"""K-means palettization, vectorized over groups: every group of a tensor
(a row of the [G, n] view) gets its own lookup table of 2^nbits values.

In one dimension the k-means clusters of sorted values are contiguous runs,
so a clustering is its K − 1 split points in the sorted values, and equal
values never need to be split. Each group is sorted once (fp16 through its
bit patterns: 16-bit keys sort by radix) and reduced to its distinct values
with their counts, the items; prefix sums of count, Σx and Σx² give any
run's squared error Σx² − (Σx)²/count in O(1).

The optimum over all clusterings is a dynamic program (`optimal`) whose
cost grows with the items. The k-means landscape of a large sample is flat:
its near-optimal clusterings differ by collective moves of many splits by
up to half a cluster, so a local search (Lloyd's algorithm, or moves of a
few items) stops far from the best one. Instead, for all groups at once:

1. a start (`Search.start`): the optimal splits of the groups' average
   sorted values (one row, so cheap) at the same sorted positions in every
   group, or each group's own splits at equal steps of ∫ p^(1/3);
2. `Search.levels`: the optimum over clusterings whose splits fall on a
   grid of runs of items (a given number per cluster; `Search.grid`), each
   split restricted to a window of a fraction of a cluster around the
   previous level's: exact within the windows (`optimal.banded_runs`); the
   groups whose splits moved by more than half a window are solved again
   around the result until they settle. The first, coarse level has
   windows of several clusters, so that a group unlike the start is not
   held near it;
3. the same on the items themselves in narrower windows (`Search.final`),
   each run's centroid rounded to the LUT's dtype, so that the error
   minimized is the stored LUT's;
4. `SortedGroups.polish`: the best joint move of all splits by up to
   `REACH` items with rounded centroids, until none improves; then Lloyd's
   algorithm with the centroids rounded at each step.

Each level's optimum is within a fraction of a cluster of the next one's,
and the windows are set to cover that. Groups of at most `EXACT_ITEMS`
distinct values are solved exactly (the full program on their items)
before step 4."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from xdsl_ane.passes.compression.optimal import (
    banded_runs,
    full_windows,
    optimal_runs,
)

MAX_ITERATIONS = 300
REACH = 3
"""Items each split may move in one `refine`."""
EXACT_ITEMS = 1024
"""Groups of at most this many distinct values get the exact optimum."""
START_ITEMS, START_LIMIT = 64, 4096
"""Items per cluster, and at most in all, of the start's optimum (on the
average group)."""


@dataclass(frozen=True)
class Search:
    """How groups of many items are searched, per number of clusters."""

    levels: tuple[tuple[int, float], ...]
    """The grids of step 2: (runs per cluster, half-width of each split's
    window as a fraction of the larger cluster beside it)."""
    final: float
    """The half-width of step 3's windows, as in `levels`."""
    grid: Literal["values", "clusters"]
    """How step 2 cuts a level's runs of items.

    "values": half at equal counts and half at equal steps of value, so that
    sparse tails get runs of their own; "clusters": each cluster of the
    level before into runs of equal items, so that runs follow the
    clustering as it forms (cheaper with many clusters)."""
    start: Literal["average", "companding"]
    """Where step 1 puts the splits.

    "average": the optimum of the average sorted group, cheap because it is
    one row; "companding": each group's own splits at equal steps of
    ∫ p^(1/3), p the density of its values (the allocation of an optimal
    quantizer of many levels), for many clusters, where groups unlike the
    average would need a long search from it."""


SEARCHES = {
    16: Search(((8, 3.0), (24, 1.0), (96, 0.8)), 0.1, "values", "average"),
    64: Search(((8, 3.0), (48, 2.0)), 0.5, "clusters", "average"),
    256: Search(((8, 3.0), (32, 1.5)), 0.5, "clusters", "companding"),
}
"""Per number of clusters (the first entry not below it), as measured on
Qwen3-0.6B-shaped N(0, 0.02²) weights (`make bench`) and on groups of
heavy-tailed, scaled, outlier and bimodal values (tests/test_kmeans_search.py):
the cheapest settings whose error stays at or below the exact k-means'."""
SETTLE_PASSES = 8
CHUNK_VALUES = 1 << 23
"""Rows are palettized together up to this many values (memory grows with
it, and the time per value stops falling well before)."""


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
        flips = bits >> 15
        flips *= 0x7FFF
        flips |= 0x8000
        flips ^= bits
        return np.argsort(flips, axis=1, kind="stable")
    return np.argsort(groups, axis=1)


def split_points(sorted_values: np.ndarray, boundaries: np.ndarray) -> np.ndarray:
    """For each row r and boundary b = boundaries[r, j], the number of values
    of row r below b (rows sorted): one search of all rows, each shifted
    past the one before."""
    rows, n = sorted_values.shape
    low, high = float(sorted_values.min()), float(sorted_values.max())
    spread = 2 * (high - low) + 1
    shift = (np.arange(rows) * spread)[:, None]
    flat = (sorted_values + shift).reshape(-1)
    keys = np.clip(boundaries.reshape(rows, -1), low, high + (high - low + 1) / 2)
    found = np.searchsorted(flat, (keys + shift).reshape(-1)).reshape(rows, -1)
    return (found - np.arange(rows)[:, None] * n).reshape(boundaries.shape)


class Ranks:
    """For rows of increasing integers in [0, limit] [G, B] (a row may end
    in repeats of its last entry), the number of entries of a row below any
    v in [0, limit]: a table [G, limit + 2] read by `below`."""

    def __init__(self, sorted_rows: np.ndarray, limit: int):
        rows, width = sorted_rows.shape
        marks = np.zeros((rows, limit + 2), np.int32)
        flat = sorted_rows + 1 + (np.arange(rows) * (limit + 2))[:, None]
        marks.reshape(-1)[flat.reshape(-1)] = 1
        self.table = np.cumsum(marks, axis=1, dtype=np.int32)
        self.limit = limit

    def subset(self, rows: np.ndarray) -> Ranks:
        """The tables of these rows."""
        part = object.__new__(Ranks)
        part.table, part.limit = self.table[rows], self.limit
        return part

    def below(self, keys: np.ndarray) -> np.ndarray:
        """Per row, the entries below each of `keys` [G, ...] (clipped to
        [0, limit])."""
        rows = self.table.shape[0]
        flat = np.clip(keys.reshape(rows, -1), 0, self.limit)
        return np.take_along_axis(self.table, flat, axis=1).reshape(keys.shape)


def packed_columns(
    flat: np.ndarray, count: np.ndarray, width: int, fill: np.ndarray
) -> np.ndarray:
    """The in-row columns of the entries at `flat` (increasing flat indices
    of a [G, width] array, `count` [G] of them per row), packed to the left
    of a [G, max(count) + 1] array and padded with `fill` [G]."""
    rows = count.size
    packed_width = int(count.max()) + 1
    out = np.broadcast_to(fill[:, None], (rows, packed_width)).copy()
    before = np.cumsum(count) - count
    slot = np.arange(flat.size)
    slot += np.repeat(np.arange(rows) * packed_width - before, count)
    out.reshape(-1)[slot] = flat - np.repeat(np.arange(rows) * width, count)
    return out


def compact_rows(edges: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, `edges` (sorted) without repeats and without entries at or
    past the row's `end`, then `end`, padded with `end`: [G, B' + 1], and
    the count B' of each row's remaining edges."""
    keep = np.empty(edges.shape, bool)
    keep[:, 0] = True
    np.not_equal(edges[:, 1:], edges[:, :-1], out=keep[:, 1:])
    keep &= edges < end[:, None]
    count = keep.sum(axis=1)
    columns = packed_columns(np.flatnonzero(keep), count, edges.shape[1], count * 0)
    kept = np.arange(columns.shape[1]) < count[:, None]
    return np.where(
        kept, np.take_along_axis(edges, columns, axis=1), end[:, None]
    ), count


class SortedGroups:
    """Each row's distinct values sorted, as items with counts: `values`
    [G, D] (a row with fewer items repeats its largest, with count 0),
    `size` [G] its items, and prefix sums [G, D + 1] of count (`totals`), Σx
    and Σx² (float64). `order` sorts the original rows; positions of sorted
    values and items convert through `totals`."""

    def __init__(self, groups: np.ndarray):
        rows, n = groups.shape
        self.n = n
        self.order = sort_order(groups)
        ordered = np.take_along_axis(groups, self.order, axis=1)
        self.average = ordered.mean(axis=0, dtype=np.float64)
        """The mean of the sorted rows (a typical group's values)."""
        first = np.empty((rows, n), bool)
        first[:, 0] = True
        np.not_equal(ordered[:, 1:], ordered[:, :-1], out=first[:, 1:])
        self.size = first.sum(axis=1)
        starts = packed_columns(np.flatnonzero(first), self.size, n, np.full(rows, n))
        self.totals = starts
        self.ranks: Ranks | None = None
        last = np.minimum(starts[:, :-1], n - 1)
        self.values = np.take_along_axis(ordered, last, axis=1).astype(np.float64)
        weighted = np.diff(starts, axis=1).astype(np.float64)
        weighted *= self.values
        self.sums = np.zeros(starts.shape)
        np.cumsum(weighted, axis=1, out=self.sums[:, 1:])
        weighted *= self.values
        self.squares = np.zeros(starts.shape)
        np.cumsum(weighted, axis=1, out=self.squares[:, 1:])

    def subset(self, rows: np.ndarray) -> SortedGroups:
        """These rows' items (without `order`)."""
        part = object.__new__(SortedGroups)
        part.n = self.n
        part.average = self.average
        part.ranks = None
        for name in ("values", "size", "totals", "sums", "squares"):
            setattr(part, name, getattr(self, name)[rows])
        return part

    def items_at(self, positions: np.ndarray) -> np.ndarray:
        """The first item boundary at or after each sorted position [G, ...]."""
        if self.ranks is None:
            self.ranks = Ranks(self.totals, self.n)
        return np.minimum(self.ranks.below(positions), self.size[:, None])

    def clusters(self, centroids: np.ndarray) -> np.ndarray:
        """The split points [G, K+1] (0, ..., size) of the clusters of the
        sorted centroids: items nearer to centroid j than to its neighbours
        form run j."""
        middle = (centroids[:, 1:] + centroids[:, :-1]) / 2
        inner = np.minimum(split_points(self.values, middle), self.size[:, None])
        rows = self.values.shape[0]
        return np.concatenate(
            [np.zeros((rows, 1), np.int64), inner, self.size[:, None]], axis=1
        )

    def statistics(self, points: np.ndarray):
        """Count, Σx and Σx² of each run between split points."""
        counts = np.diff(np.take_along_axis(self.totals, points, axis=1), axis=1)
        sums = np.diff(np.take_along_axis(self.sums, points, axis=1), axis=1)
        squares = np.diff(np.take_along_axis(self.squares, points, axis=1), axis=1)
        return counts, sums, squares

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

    def run_costs(
        self, start: np.ndarray, end: np.ndarray, dtype: np.dtype | None = None
    ) -> np.ndarray:
        """Σ (x − c)² of the runs of items [start, end) of each row (index
        arrays [G, ...]), c the run's mean (rounded to `dtype` if given); 0
        for an empty run."""
        rows = self.values.shape[0]
        flat_start = start.reshape(rows, -1)
        flat_end = end.reshape(rows, -1)

        def span(prefix: np.ndarray) -> np.ndarray:
            return np.take_along_axis(prefix, flat_end, 1) - np.take_along_axis(
                prefix, flat_start, 1
            )

        count, total, square = span(self.totals), span(self.sums), span(self.squares)
        if dtype is None:
            cost = square - total**2 / np.maximum(count, 1)
        else:
            centroid = (total / np.maximum(count, 1)).astype(dtype).astype(np.float64)
            cost = square - centroid * (2 * total - count * centroid)
        return np.maximum(cost, 0).reshape(start.shape)

    def refine(
        self, points: np.ndarray, reach: int, dtype: np.dtype | None = None
    ) -> np.ndarray:
        """The best split points [G, K+1] among those that move each inner
        split of `points` by up to `reach` items (centroids rounded to
        `dtype` if given): a dynamic program along the chain of splits,
        exact over these (2·reach + 1)^(K−1) choices in O(K · reach²)."""
        rows = self.values.shape[0]
        k = points.shape[1] - 1
        size = self.size[:, None, None]
        offsets = np.arange(-reach, reach + 1)
        candidates = np.minimum(
            np.maximum(points[:, 1:-1, None] + offsets, 0), size
        )  # [G, K-1, C]
        width = candidates.shape[2]
        zero = np.zeros((rows, width), np.int64)
        total = self.run_costs(zero, candidates[:, 0], dtype)
        back = np.zeros((rows, k - 1, width), np.int64)
        for j in range(1, k - 1):
            start = np.broadcast_to(candidates[:, j - 1, :, None], (rows, width, width))
            end = np.broadcast_to(candidates[:, j, None, :], (rows, width, width))
            step_cost = np.where(
                start <= end, self.run_costs(start, end, dtype), np.inf
            )
            through = total[:, :, None] + step_cost  # [G, from, to]
            back[:, j] = np.argmin(through, axis=1)
            total = np.take_along_axis(through, back[:, j][:, None, :], 1)[:, 0]
        last = np.broadcast_to(self.size[:, None], (rows, width))
        total = total + self.run_costs(candidates[:, -1], last, dtype)
        choice = np.argmin(total, axis=1)
        refined = points.copy()
        row = np.arange(rows)
        for j in range(k - 2, -1, -1):
            refined[:, j + 1] = candidates[row, j, choice]
            choice = back[row, j, choice]
        return refined

    def polish(self, points: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """`refine` with rounded centroids until no move improves."""
        for _ in range(MAX_ITERATIONS):
            moved = self.refine(points, REACH, dtype)
            if np.array_equal(moved, points):
                break
            points = moved
        return points

    def prefix(
        self, edges: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The prefix sums at item boundaries `edges` [G, B + 1] (float64;
        at every item boundary if None)."""
        if edges is None:
            return self.totals.astype(np.float64), self.sums, self.squares
        return (
            np.take_along_axis(self.totals, edges, axis=1).astype(np.float64),
            np.take_along_axis(self.sums, edges, axis=1),
            np.take_along_axis(self.squares, edges, axis=1),
        )

    def grid(self, items: int) -> tuple[np.ndarray, np.ndarray]:
        """Item boundaries [G, B + 1] cutting each row into about `items`
        runs, half at equal counts and half at equal steps of value, and
        each row's number of runs."""
        rows = self.values.shape[0]
        by_count = self.items_at(
            np.broadcast_to(
                np.linspace(0, self.n, items // 2 + 1).astype(np.int64),
                (rows, items // 2 + 1),
            )
        )
        by_value = self.value_steps(items - items // 2)
        edges = np.sort(np.concatenate([by_count, by_value[:, 1:-1]], axis=1), axis=1)
        return compact_rows(edges, self.size)

    def value_range(self) -> tuple[np.ndarray, np.ndarray]:
        """Each row's smallest and largest value [G, 1]."""
        return self.values[:, :1], np.take_along_axis(
            self.values, self.size[:, None] - 1, 1
        )

    def value_steps(self, steps: int) -> np.ndarray:
        """Item boundaries [G, steps + 1] cutting each row's range of values
        into `steps` equal steps (0 first, the row's size last)."""
        low, high = self.value_range()
        levels = low + (high - low) * np.arange(1, steps) / steps
        inner = np.minimum(split_points(self.values, levels), self.size[:, None])
        rows = self.values.shape[0]
        return np.concatenate(
            [np.zeros((rows, 1), np.int64), inner, self.size[:, None]], axis=1
        )


def cluster_grid(
    points: np.ndarray, per_cluster: int, size: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Item boundaries [G, B + 1] cutting each cluster of `points` into
    `per_cluster` runs of equal items (fewer if it has fewer items), and
    each row's number of runs."""
    rows, k = points.shape[0], points.shape[1] - 1
    sizes = np.diff(points, axis=1)
    steps = np.arange(per_cluster) / per_cluster
    cuts = points[:, :-1, None] + (sizes[:, :, None] * steps).astype(np.int64)
    edges = np.concatenate([cuts.reshape(rows, k * per_cluster), size[:, None]], axis=1)
    return compact_rows(edges, size)


@dataclass
class Grid:
    """Item boundaries [G, B + 1] that splits may take (`count` [G] runs per
    row; a row with fewer repeats its last), and their `Ranks`; `ranks` None
    is the grid of every item boundary (`edges` then unused)."""

    edges: np.ndarray
    count: np.ndarray
    ranks: Ranks | None

    @classmethod
    def of(cls, edges: np.ndarray, count: np.ndarray, items: int) -> Grid:
        return cls(edges, count, Ranks(edges, items))

    def subset(self, rows: np.ndarray) -> Grid:
        ranks = None if self.ranks is None else self.ranks.subset(rows)
        return Grid(self.edges[rows], self.count[rows], ranks)


def half_windows(points: np.ndarray, fraction: float) -> np.ndarray:
    """Per split of `points` [G, K+1], `fraction` of the larger cluster
    beside it, in items (0 for the fixed ends)."""
    sizes = np.diff(points, axis=1)
    half = np.zeros(points.shape, np.int64)
    half[:, 1:-1] = np.ceil(fraction * np.maximum(sizes[:, :-1], sizes[:, 1:]))
    return half


def feasible_splits(
    points: np.ndarray, count: np.ndarray, raise_later: bool = True
) -> np.ndarray:
    """Split points [G, K+1] where K non-empty runs of `count` [G] items can
    have them: split m clipped to [m, count − (K − m)], the ends at 0 and
    count, and strictly increasing — by raising a split to one past the one
    before it, or (not `raise_later`) by lowering it to one before the next."""
    k = points.shape[1] - 1
    split = np.arange(k + 1)
    out = np.minimum(np.maximum(points, split), count[:, None] - (k - split))
    out[:, 0] = 0
    out[:, k] = count
    if raise_later:
        return np.maximum.accumulate(out - split, axis=1) + split
    return np.minimum.accumulate((out - split)[:, ::-1], axis=1)[:, ::-1] + split


def windowed_optimum(
    data: SortedGroups, grid: Grid, points: np.ndarray, half: np.ndarray, dtype
) -> np.ndarray:
    """The optimal item split points [G, K+1] with split m on the grid and
    within `half` [G, K+1] items of split m of `points`; with `dtype`, each
    run costs Σ(x − c)² about its mean c rounded to it."""
    lowest = np.maximum(points - half, 0)
    highest = np.minimum(points + half + 1, data.size[:, None])
    if grid.ranks is not None:
        lowest, highest = grid.ranks.below(lowest), grid.ranks.below(highest)
    # Windows strictly increasing from split to split, so that every item
    # of window m has an item of window m − 1 before it.
    low = feasible_splits(lowest, grid.count)
    high = np.maximum(feasible_splits(highest, grid.count, raise_later=False), low)
    if grid.ranks is None:  # every item boundary
        return banded_runs(*data.prefix(), low, high, dtype)
    runs = banded_runs(*data.prefix(grid.edges), low, high, dtype)
    return np.take_along_axis(grid.edges, runs, axis=1)


def settle(
    data: SortedGroups,
    grid: Grid,
    points: np.ndarray,
    fraction: float,
    dtype: np.dtype | None = None,
) -> np.ndarray:
    """`windowed_optimum`, again around the result for the rows where a
    split moved by more than half its window, until none does."""
    rows = np.arange(points.shape[0])
    points = points.copy()
    part, part_grid = data, grid
    for _ in range(SETTLE_PASSES):
        half = half_windows(points[rows], fraction)
        moved = windowed_optimum(part, part_grid, points[rows], half, dtype)
        far = np.flatnonzero((2 * np.abs(moved - points[rows]) > half).any(axis=1))
        points[rows] = moved
        if not far.size:
            break
        rows = rows[far]
        part, part_grid = part.subset(far), part_grid.subset(far)
    return points


def palettize(groups: np.ndarray, nbits: int, lut_dtype=np.float16) -> Palettized:
    """K-means LUTs of 2^nbits entries for each row of `groups` [G, n], in
    chunks of rows of about `CHUNK_VALUES` values."""
    rows, n = groups.shape
    step = max(1, CHUNK_VALUES // n)
    if rows <= step:
        return palettize_rows(groups, nbits, lut_dtype)
    parts = [
        palettize_rows(groups[start : start + step], nbits, lut_dtype)
        for start in range(0, rows, step)
    ]
    return Palettized(
        np.concatenate([p.indices for p in parts]),
        np.concatenate([p.lut for p in parts]),
        np.concatenate([p.squared_error for p in parts]),
    )


def palettize_rows(groups: np.ndarray, nbits: int, lut_dtype) -> Palettized:
    """`palettize` of one chunk of rows."""
    k = 2**nbits
    rows, n = groups.shape
    data = SortedGroups(groups)
    points = np.empty((rows, k + 1), np.int64)
    few = data.size <= max(k, EXACT_ITEMS)
    if few.any():
        points[few] = exact_points(data.subset(np.flatnonzero(few)), k)
    many = np.flatnonzero(~few)
    if many.size:
        points[many] = search_points(data.subset(many), data.average, k, lut_dtype)
    points = data.polish(points, lut_dtype)
    centroids, _ = data.lloyd(run_means(data, points))
    # The stored LUT: centroids rounded to its dtype, polished as such.
    rounded, points = data.lloyd(
        np.sort(centroids.astype(lut_dtype).astype(np.float64), axis=1), lut_dtype
    )
    lut = rounded.astype(lut_dtype)
    error = data.error(rounded, points)
    positions = np.take_along_axis(data.totals, points, axis=1)
    indices = np.empty(groups.shape, np.uint8)
    np.put_along_axis(indices, data.order, cluster_labels(positions, n), axis=1)
    return Palettized(indices, lut, error)


def exact_points(data: SortedGroups, k: int) -> np.ndarray:
    """The optimal split points of every row (a row of at most k items puts
    each in its own cluster; the clusters past them are empty)."""
    split = np.arange(k + 1)
    points = np.minimum(split[None, :], data.size[:, None])
    solvable = np.flatnonzero(data.size > k)
    if solvable.size:
        part = data.subset(solvable)
        points[solvable] = banded_runs(*part.prefix(), *full_windows(part.size, k))
    return points


def search_points(
    data: SortedGroups, average: np.ndarray, k: int, lut_dtype
) -> np.ndarray:
    """Steps 1–3 of the module's search from the `average` sorted group."""
    rows, items = data.values.shape
    clusters = min((c for c in SEARCHES if c >= k), default=max(SEARCHES))
    search = SEARCHES[clusters]
    # 1. The start.
    if search.start == "companding":
        points = companding_start(data, k)
    else:
        typical = SortedGroups(average[None, :])
        edges, count = typical.grid(
            min(START_ITEMS * k, START_LIMIT, int(typical.size[0]))
        )
        counts, sums, squares = (np.diff(a, axis=1) for a in typical.prefix(edges))
        start = np.take_along_axis(edges, optimal_runs(counts, sums, squares, k), 1)
        positions = np.take_along_axis(typical.totals, start, axis=1)
        points = data.items_at(np.broadcast_to(positions, (rows, k + 1)))
        points[:, -1] = data.size
    # 2. Grids of more runs per cluster.
    for per_cluster, fraction in search.levels:
        if search.grid == "values":
            edges, count = data.grid(per_cluster * k)
        else:
            edges, count = cluster_grid(points, per_cluster, data.size)
        points = settle(data, Grid.of(edges, count, items), points, fraction)
    # 3. Every item, with rounded centroids.
    every = Grid(np.empty((rows, 0), np.int64), data.size, None)
    return settle(data, every, points, search.final, lut_dtype)


def companding_start(
    data: SortedGroups, k: int, bins_per_cluster: int = 8
) -> np.ndarray:
    """Split points [G, K+1] at equal steps of ∫ p^(1/3), p the density of
    the row's values (a histogram of equal value steps): the allocation of
    an optimal quantizer of many levels."""
    rows = data.values.shape[0]
    bins = bins_per_cluster * k
    edges = data.value_steps(bins)
    counts = np.diff(np.take_along_axis(data.totals, edges, axis=1), axis=1)
    cumulative = np.zeros((rows, bins + 1))
    np.cumsum(np.cbrt(counts.astype(np.float64)), axis=1, out=cumulative[:, 1:])
    targets = cumulative[:, -1:] * np.arange(k + 1) / k
    # The bin where each target falls, and the value there by interpolation.
    index = np.clip(split_points(cumulative, targets), 1, bins)
    before = np.take_along_axis(cumulative, index - 1, 1)
    after = np.take_along_axis(cumulative, index, 1)
    part = np.where(
        after > before, (targets - before) / np.maximum(after - before, 1e-300), 0
    )
    low, high = data.value_range()
    value = low + (high - low) * (index - 1 + part) / bins
    return feasible_splits(split_points(data.values, value), data.size)


def run_means(data: SortedGroups, points: np.ndarray) -> np.ndarray:
    """The centroids of the runs at `points` (an empty run takes its row's
    smallest value: a repeated entry)."""
    counts, sums, _ = data.statistics(points)
    means = sums / np.maximum(counts, 1)
    return np.sort(np.where(counts > 0, means, data.values[:, :1]), axis=1)


def cluster_labels(points: np.ndarray, n: int) -> np.ndarray:
    """Run labels [G, n] of sorted positions for split points [G, K+1]."""
    rows, k = points.shape[0], points.shape[1] - 1
    labels = np.broadcast_to(np.arange(k, dtype=np.uint8), (rows, k))
    return np.repeat(labels.reshape(-1), np.diff(points, axis=1).reshape(-1)).reshape(
        rows, n
    )
