"""The dynamic program of the k-means LUTs (`passes/compression/optimal.py`)
against brute force over every clustering of small weighted rows."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from xdsl_ane.passes.compression.optimal import banded_runs, optimal_runs, prefix_sums


def run_error(counts: np.ndarray, values: np.ndarray, points) -> float:
    error = 0.0
    for a, b in zip(points[:-1], points[1:]):
        c, v = counts[a:b], values[a:b]
        mean = (c * v).sum() / c.sum()
        error += float((c * (v - mean) ** 2).sum())
    return error


def best_error(counts, values, k, windows=None) -> float:
    """The least error over all clusterings (split m within windows[m])."""
    items = len(counts)
    best = np.inf
    for cuts in itertools.combinations(range(1, items), k - 1):
        if windows and any(not lo <= c <= hi for c, (lo, hi) in zip(cuts, windows)):
            continue
        best = min(best, run_error(counts, values, (0, *cuts, items)))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_optimal_runs_is_the_brute_force_optimum(seed: int):
    rng = np.random.default_rng(seed)
    items = int(rng.integers(3, 10))
    k = int(rng.integers(1, items + 1))
    counts = rng.integers(1, 4, (3, items)).astype(float)
    values = np.sort(rng.standard_normal((3, items)), axis=1)
    points = optimal_runs(counts, counts * values, counts * values**2, k)
    assert (points[:, 0] == 0).all() and (points[:, -1] == items).all()
    assert (np.diff(points, axis=1) > 0).all()
    for row in range(3):
        got = run_error(counts[row], values[row], points[row])
        assert got == pytest.approx(best_error(counts[row], values[row], k), abs=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_banded_runs_is_the_optimum_within_the_windows(seed: int):
    rng = np.random.default_rng(100 + seed)
    items, k = 9, 4
    counts = rng.integers(1, 4, (1, items)).astype(float)
    values = np.sort(rng.standard_normal((1, items)), axis=1)
    # Overlapping windows for the three inner splits.
    windows = [(1, 4), (2, 6), (5, 8)]
    low = np.array([[0] + [w[0] for w in windows] + [items]])
    high = np.array([[0] + [w[1] for w in windows] + [items]])
    points = banded_runs(
        *prefix_sums(counts, counts * values, counts * values**2), low, high
    )
    assert all(lo <= p <= hi for p, (lo, hi) in zip(points[0, 1:-1], windows))
    got = run_error(counts[0], values[0], points[0])
    assert got == pytest.approx(best_error(counts[0], values[0], k, windows), abs=1e-9)
