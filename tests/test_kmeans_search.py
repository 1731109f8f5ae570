"""The k-means search of `passes/compression/kmeans.py` on groups too large
for the exact dynamic program: its items and tables against per-row numpy,
its moves against brute force, and its LUTs against coremltools' own exact
one-dimensional k-means (the `kmeans1d` that `palettize_weights` runs),
whose centroids coremltools then rounds to fp16."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from xdsl_ane.backend.weights import quiet_coremltools
from xdsl_ane.passes.compression.kmeans import (
    EXACT_ITEMS,
    Ranks,
    SortedGroups,
    compact_rows,
    palettize,
)

with quiet_coremltools():
    from coremltools._deps import kmeans1d

# k-means over real-size weight groups against coremltools: -m 'not slow' skips it.
pytestmark = pytest.mark.slow


def weights(rows: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((rows, n)) * 0.02).astype(np.float16)


def stored_error(groups: np.ndarray, lut: np.ndarray, indices: np.ndarray):
    rows = np.arange(groups.shape[0])[:, None]
    decoded = lut[rows, indices].astype(np.float64)
    return ((decoded - groups.astype(np.float64)) ** 2).sum(axis=1)


def coremltools_error(groups: np.ndarray, k: int) -> np.ndarray:
    """Per row, the error of coremltools' LUT: the exact k-means of the row's
    distinct values (weighted by their counts), centroids cast to fp16."""
    errors = []
    for row in groups:
        values, inverse, counts = np.unique(
            row, return_inverse=True, return_counts=True
        )
        result = kmeans1d.cluster(values, k, weights=counts)
        lut = np.array(result.centroids).astype(np.float16).astype(np.float64)
        labels = np.array(result.clusters)[inverse.reshape(-1)]
        errors.append(float(((lut[labels] - row.astype(np.float64)) ** 2).sum()))
    return np.array(errors)


def test_items_are_the_distinct_values_with_their_counts():
    rng = np.random.default_rng(0)
    # Few distinct values per row, and rows of different numbers of them.
    groups = (rng.integers(-40, 40, (5, 300)) * rng.integers(1, 4, (5, 1))).astype(
        np.float16
    ) / np.float16(64)
    data = SortedGroups(groups)
    for r, row in enumerate(groups):
        values, counts = np.unique(row.astype(np.float64), return_counts=True)
        d = len(values)
        assert data.size[r] == d
        np.testing.assert_array_equal(data.values[r, :d], values)
        assert (data.values[r, d:] == values[-1]).all()
        np.testing.assert_array_equal(
            data.totals[r, : d + 1], np.r_[0, np.cumsum(counts)]
        )
        np.testing.assert_allclose(
            data.sums[r, : d + 1], np.r_[0, np.cumsum(counts * values)]
        )
        np.testing.assert_allclose(
            data.squares[r, : d + 1], np.r_[0, np.cumsum(counts * values**2)]
        )
        # The order sorts the row.
        np.testing.assert_array_equal(row[data.order[r]], np.sort(row))


def test_ranks_and_compact_rows_match_per_row_numpy():
    rng = np.random.default_rng(1)
    limit = 50
    rows = [
        np.unique(rng.integers(0, limit + 1, int(rng.integers(1, 30))))
        for _ in range(6)
    ]
    width = max(len(r) for r in rows)
    padded = np.array([np.r_[r, np.full(width - len(r), r[-1])] for r in rows])
    ranks = Ranks(padded, limit)
    keys = rng.integers(-3, limit + 4, (6, 40))
    for r, row in enumerate(rows):
        expected = np.searchsorted(row, np.clip(keys[r], 0, limit))
        np.testing.assert_array_equal(ranks.below(keys)[r], expected)
    edges = np.sort(rng.integers(0, 40, (6, 25)), axis=1)
    end = rng.integers(10, 45, 6)
    out, count = compact_rows(edges, end)
    for r in range(6):
        kept = np.unique(edges[r][edges[r] < end[r]])
        assert count[r] == len(kept)
        np.testing.assert_array_equal(out[r, : len(kept)], kept)
        assert (out[r, len(kept) :] == end[r]).all()


def test_refine_with_rounded_centroids_is_the_best_move():
    """`refine` is exact over its moves: brute force over every move of each
    split by up to `reach` items, centroids rounded to fp16."""
    rng = np.random.default_rng(2)
    groups = (rng.standard_normal((3, 40)) * 0.3).astype(np.float16)
    data = SortedGroups(groups)
    k, reach = 4, 2
    points = np.array([[0, 10, 20, 30, int(s)] for s in data.size])
    refined = data.refine(points, reach, np.float16)
    for r in range(3):
        size = int(data.size[r])
        best = np.inf
        for moves in itertools.product(range(-reach, reach + 1), repeat=k - 1):
            inner = np.clip(points[r, 1:-1] + moves, 0, size)
            if (np.diff(np.r_[0, inner, size]) < 0).any():
                continue
            candidate = np.r_[0, inner, size][None, :]
            cost = data.subset(np.array([r])).run_costs(
                candidate[:, :-1], candidate[:, 1:], np.float16
            )
            best = min(best, float(cost.sum()))
        got = data.subset(np.array([r])).run_costs(
            refined[r : r + 1, :-1], refined[r : r + 1, 1:], np.float16
        )
        assert float(got.sum()) == pytest.approx(best, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("nbits", [4, 6])
def test_search_is_at_most_coremltools_exact_kmeans(nbits: int):
    """Rows of 16384 fp16 values (a Qwen3-0.6B projection's 16 output
    channels): far more distinct values than the exact program takes."""
    groups = weights(8, 16384, seed=nbits)
    result = palettize(groups, nbits)
    assert (SortedGroups(groups).size > EXACT_ITEMS).all()
    ours = stored_error(groups, result.lut, result.indices)
    np.testing.assert_allclose(ours, result.squared_error, rtol=1e-9)
    theirs = coremltools_error(groups, 2**nbits)
    assert ours.sum() <= theirs.sum(), ours.sum() / theirs.sum()
    assert (ours <= theirs * (1 + 1e-5)).all(), ours / theirs


def test_lut8_search_is_at_most_coremltools_exact_kmeans():
    groups = weights(4, 16384, seed=8)
    result = palettize(groups, 8)
    ours = stored_error(groups, result.lut, result.indices)
    theirs = coremltools_error(groups, 256)
    assert ours.sum() <= theirs.sum(), ours.sum() / theirs.sum()


def test_rows_of_few_and_many_distinct_values_in_one_tensor():
    groups = weights(4, 4096, seed=3)
    groups[1] = np.float16(0.25)  # one value
    groups[2] = np.resize(np.arange(9, dtype=np.float16), 4096)  # nine
    result = palettize(groups, 4)
    ours = stored_error(groups, result.lut, result.indices)
    assert ours[1] == 0 and ours[2] == 0
    assert (result.indices < 16).all()
    np.testing.assert_allclose(ours, result.squared_error, rtol=1e-9, atol=1e-12)
    theirs = coremltools_error(groups[[0, 3]], 16)
    assert (ours[[0, 3]] <= theirs * (1 + 1e-5)).all()


def unlike_groups(seed: int) -> np.ndarray:
    """Groups of 16384 values not like N(0, σ²) and not like each other:
    Gaussian, Student-t (3), rescaled by up to 10×, with a few outliers 30σ
    out, Laplace, and bimodal with modes of different widths."""
    rng = np.random.default_rng(seed)
    n = 16384
    rows = [
        rng.standard_normal(n),
        rng.standard_t(3, n),
        rng.standard_normal(n) * 10 ** rng.uniform(-1, 1),
        np.r_[rng.standard_normal(n - 20), rng.standard_normal(20) * 30],
        rng.laplace(size=n),
        np.r_[rng.standard_normal(n // 2) - 3, rng.standard_normal(n // 2) * 0.3 + 2],
    ]
    return (np.array([rng.permutation(x) for x in rows]) * 0.02).astype(np.float16)


@pytest.mark.parametrize("nbits", [4, 6, 8])
def test_search_on_groups_unlike_each_other(nbits: int):
    groups = np.concatenate([unlike_groups(21), unlike_groups(22)])
    result = palettize(groups, nbits)
    ours = stored_error(groups, result.lut, result.indices)
    theirs = coremltools_error(groups, 2**nbits)
    assert ours.sum() <= theirs.sum(), ours.sum() / theirs.sum()
    assert (ours <= theirs * (1 + 1e-4)).all(), ours / theirs
