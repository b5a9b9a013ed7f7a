"""pass_at_k against exact rational values, its errors, and the bootstrap."""

from __future__ import annotations

import importlib
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_envs.evaluation import pass_at_k
from agent_envs.evaluation.pass_at_k import pass_at_k_table
from agent_envs.statistics import bootstrap_means, percentile_interval


def exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(comb(n - c, k), comb(n, k))


SMALL_GRID = [(n, c, k) for n in range(13) for c in range(n + 1) for k in range(n + 1)]
LARGE_GRID = [
    (n, c, k)
    for n in (100, 1000, 10_000)
    for c in (0, 1, 2, 17, n // 2, n - 3, n - 1, n)
    for k in (1, 2, 3, 10, 100, n // 2, n - 1, n)
    if k <= n
]


def test_small_grid_matches_exact_fractions():
    for n, c, k in SMALL_GRID:
        expected = float(exact(n, c, k))
        assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-13, abs=1e-15), (n, c, k)


def test_large_n_matches_exact_fractions():
    # Relative precision holds even for tiny and near-one values at n = 10,000.
    for n, c, k in LARGE_GRID:
        value, expected = pass_at_k(n, c, k), float(exact(n, c, k))
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-300), (n, c, k)
        assert 0.0 <= value <= 1.0


def test_edge_cases_are_exact():
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 6, 5) == 1.0  # n - c < k: every draw of 5 has a success
    assert pass_at_k(10, 3, 1) == 0.3  # k = 1 is c / n exactly
    assert pass_at_k(5, 2, 0) == 0.0
    assert pass_at_k(0, 0, 0) == 0.0


@pytest.mark.parametrize(
    ("n", "c", "k", "match"),
    [
        (4, 2, 5, "k must be at most n"),
        (4, 5, 1, "c .* must be at most n"),
        (-1, 0, 0, "n must be an int >= 0"),
        (4, -1, 1, "c must be an int >= 0"),
        (4, 1, -2, "k must be an int >= 0"),
    ],
)
def test_bad_values_raise_value_error(n, c, k, match):
    with pytest.raises(ValueError, match=match):
        pass_at_k(n, c, k)


@pytest.mark.parametrize("bad", [2.0, "3", None, True])
def test_non_integers_raise_type_error(bad):
    with pytest.raises(TypeError, match="must be an int"):
        pass_at_k(bad, 1, 1)


def test_numpy_integers_are_accepted():
    assert pass_at_k(np.int64(8), np.int32(2), np.uint8(4)) == pass_at_k(8, 2, 4)


@given(n=st.integers(1, 300), data=st.data())
def test_monotone_in_k_and_c(n, data):
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    value = pass_at_k(n, c, k)
    if k < n:
        assert pass_at_k(n, c, k + 1) >= value
    if c < n:
        assert pass_at_k(n, c + 1, k) >= value


def test_table_equals_scalar_calls():
    counts = np.array([[0, 1, 3], [8, 2, 5]])
    table = pass_at_k_table(8, counts, [1, 2, 8])
    assert table.shape == (3, 2, 3)
    for index, k in enumerate([1, 2, 8]):
        for cell in np.ndindex(counts.shape):
            assert table[(index, *cell)] == pass_at_k(8, int(counts[cell]), k)


def test_bootstrap_is_seeded_and_brackets_the_mean():
    values = np.random.default_rng(0).random((40, 2, 3))
    first = bootstrap_means(values, 500, np.random.default_rng(7))
    second = bootstrap_means(values, 500, np.random.default_rng(7))
    assert np.array_equal(first, second)
    low, high = percentile_interval(first, 0.95)
    mean = values.mean(axis=0)
    assert np.all(low <= mean) and np.all(mean <= high)
    assert np.all(high - low < 0.3)


def test_bootstrap_of_constant_values_has_zero_width():
    draws = bootstrap_means(np.ones((10, 1)), 200, np.random.default_rng(0))
    low, high = percentile_interval(draws)
    assert low[0] == high[0] == 1.0


def test_table_computes_only_the_counts_that_occur(monkeypatch):
    # Regression: the table used to compute all n + 1 counts per k, O(n**2) in
    # all (seconds per k at n = 10,000); now each distinct count once.
    # The package re-exports the function under the module's name: fetch the module.
    module = importlib.import_module("agent_envs.evaluation.pass_at_k")
    calls = []
    scalar = module.pass_at_k
    monkeypatch.setattr(
        module, "pass_at_k", lambda n, c, k: calls.append((n, c, k)) or scalar(n, c, k)
    )
    counts = np.array([[0, 17, 10_000], [17, 5_000, 0]])
    table = pass_at_k_table(10_000, counts, [1, 100])
    assert sorted(calls) == sorted((10_000, c, k) for k in (1, 100) for c in (0, 17, 5_000, 10_000))
    for index, k in enumerate([1, 100]):
        for cell in np.ndindex(counts.shape):
            assert table[(index, *cell)] == scalar(10_000, int(counts[cell]), k)
    with pytest.raises(ValueError, match="at most n"):
        pass_at_k_table(4, np.array([5]), [1])
