"""Seed-level statistics: the training seed, not the (seed, task) pair, is the unit.

Results of several training seeds are not independent draws of tasks: each
seed's tasks share one trained policy.  Treating (seed, task) pairs as
independent makes intervals far too narrow.  Here the bootstrap resamples
seeds, then tasks within each drawn seed, and the test compares seeds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from agent_envs.evaluation.pass_at_k import bootstrap_means
from wrappers.errors import InvalidValue

__all__ = [
    "MIN_SEEDS",
    "hierarchical_bootstrap",
    "holm",
    "min_p_value",
    "paired_permutation_test",
    "paired_seed_differences",
    "seed_interval",
    "seed_paired_test",
    "unpaired_permutation_test",
]

#: Fewer seeds per side than this and no cell is called significant.
MIN_SEEDS = 5
# Exact tests enumerate at most this many relabellings; beyond, Monte Carlo.
_EXACT_LIMIT = 1 << 14
_MONTE_CARLO = 1 << 14

#: Draws ``m`` task-level bootstrap means of one seed, shape ``(m, ...)``.
SeedSampler = Callable[[int, np.random.Generator], np.ndarray]


def task_sampler(values: np.ndarray) -> SeedSampler:
    """Return a sampler of one seed's mean over its tasks (rows of ``values``)."""
    return lambda m, rng: bootstrap_means(values, m, rng)


def hierarchical_bootstrap(
    samplers: Sequence[SeedSampler], n_bootstrap: int, rng: np.random.Generator
) -> np.ndarray:
    """Return ``n_bootstrap`` draws of the mean over seeds of each seed's mean over tasks.

    Each draw picks ``len(samplers)`` seeds with replacement and, for every
    pick (a seed picked twice counts twice, with two independent task
    resamples), a resample of that seed's tasks.
    """
    seeds = len(samplers)
    picks = rng.integers(0, seeds, size=(n_bootstrap, seeds))
    total: np.ndarray | None = None
    for index, sampler in enumerate(samplers):
        rows = np.nonzero(picks == index)[0]  # one entry per pick, in draw order
        if rows.size == 0:
            continue
        draws = sampler(rows.size, rng)
        if total is None:
            total = np.zeros((n_bootstrap, *draws.shape[1:]))
        np.add.at(total, rows, draws)
    assert total is not None  # some seed is always picked
    return total / seeds


def min_p_value(seeds_a: int, seeds_b: int, paired: bool) -> float:
    """Return the smallest two-sided p-value the seed-level test can give."""
    if paired:
        return min(1.0, 2.0 / 2**seeds_a)
    splits = math.comb(seeds_a + seeds_b, seeds_a)
    return min(1.0, (2.0 if seeds_a == seeds_b else 1.0) / splits)


def _p_value(observed: np.ndarray, statistics: np.ndarray) -> np.ndarray:
    # A relabelling counts when it is at least as extreme; the tolerance keeps
    # float noise from splitting ties (the identity relabelling always counts).
    extreme = np.abs(statistics) >= np.abs(observed) - 1e-12
    return extreme.mean(axis=0)


def paired_permutation_test(differences: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Two-sided sign-flip test of mean(differences) = 0 over axis 0 (the seeds).

    Exact (every sign pattern) for up to 14 seeds, Monte Carlo beyond.
    Returns the p-value of each cell.
    """
    differences = np.asarray(differences, dtype=float)
    seeds = differences.shape[0]
    if 2**seeds <= _EXACT_LIMIT:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=seeds)))
    else:
        signs = rng.choice((1.0, -1.0), size=(_MONTE_CARLO, seeds))
        signs[0] = 1.0
    flat = differences.reshape(seeds, -1)
    statistics = signs @ flat / seeds
    observed = flat.mean(axis=0)
    return _p_value(observed, statistics).reshape(differences.shape[1:])


def unpaired_permutation_test(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Two-sided permutation test of mean(a) = mean(b) over axis 0 (the seeds).

    Exact (every split) when there are at most 16384 splits, Monte Carlo beyond.
    """
    pooled = np.concatenate([np.asarray(a, dtype=float), np.asarray(b, dtype=float)])
    total, first = pooled.shape[0], len(a)
    flat = pooled.reshape(total, -1)
    if math.comb(total, first) <= _EXACT_LIMIT:
        groups = list(itertools.combinations(range(total), first))
    else:
        groups = [tuple(range(first))] + [
            tuple(rng.permutation(total)[:first]) for _ in range(_MONTE_CARLO - 1)
        ]
    member = np.zeros((len(groups), total))
    for row, group in enumerate(groups):
        member[row, list(group)] = 1.0
    statistics = member @ flat / first - (1.0 - member) @ flat / (total - first)
    observed = flat[:first].mean(axis=0) - flat[first:].mean(axis=0)
    return _p_value(observed, statistics).reshape(pooled.shape[1:])


def holm(p_values: np.ndarray) -> np.ndarray:
    """Return Holm's step-down adjusted p-values of one family of tests (any shape).

    The family is every finite entry; ``nan`` entries are not tests and stay
    ``nan``.  Sorted ascending, the i-th smallest of m p-values becomes
    ``max over j <= i of min(1, (m - j) * p_(j))``; rejecting where the
    adjusted p is at most alpha controls the family-wise error rate at alpha.

    >>> holm(np.array([0.01, 0.04, 0.03, np.nan])).round(3).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    p_values = np.asarray(p_values, dtype=float)
    flat = p_values.ravel()
    adjusted = np.full(flat.shape, np.nan)
    tested = np.flatnonzero(np.isfinite(flat))
    order = tested[np.argsort(flat[tested], kind="stable")]
    m = order.size
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * flat[index]))
        adjusted[index] = running
    return adjusted.reshape(p_values.shape)


def seed_interval(
    per_seed: Sequence[np.ndarray],
    rng: np.random.Generator,
    n_bootstrap: int = 2000,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """Return the mean over seeds of a per-task metric and its hierarchical-bootstrap interval.

    ``per_seed[s]`` holds one value per task for training seed ``s`` (a
    study's primary metric, for example); the interval resamples seeds, then
    tasks within each seed.
    """
    from agent_envs.evaluation.pass_at_k import percentile_interval

    samplers = [task_sampler(np.asarray(values, dtype=float)[:, None]) for values in per_seed]
    draws = hierarchical_bootstrap(samplers, n_bootstrap, rng)[:, 0]
    low, high = percentile_interval(draws, confidence)
    mean = float(np.mean([np.mean(values) for values in per_seed]))
    return mean, float(low), float(high)


def seed_paired_test(
    a: Sequence[np.ndarray], b: Sequence[np.ndarray], rng: np.random.Generator
) -> float:
    """Return the two-sided paired sign-flip p-value of mean(a) - mean(b) over seeds.

    ``a[s]`` and ``b[s]`` are seed ``s``'s per-task values of two regimes;
    ``rng`` serves only the Monte Carlo test beyond 14 seeds.
    """
    differences = np.array([np.mean(x) - np.mean(y) for x, y in zip(a, b, strict=True)])
    return float(paired_permutation_test(differences[:, None], rng)[0])


def paired_seed_differences(
    comparisons: dict[str, tuple[Sequence[float], Sequence[float]]],
    interval_rng: Callable[[], np.random.Generator],
    test_rng: Callable[[], np.random.Generator],
    n_bootstrap: int = 2000,
) -> dict[str, dict[str, float]]:
    """Return each comparison's seed-level difference, interval, p and Holm p over them all.

    ``comparisons[name] = (a, b)`` holds one value per training seed of each
    side (a diagnostic such as the recovery rate; seed ``s`` of ``a`` pairs
    with seed ``s`` of ``b``).  The interval is a bootstrap over seeds of the
    mean difference; the p-value is the paired sign-flip test over seeds; the
    Holm correction treats every comparison given as one family.  The
    generators come fresh from ``interval_rng()`` and ``test_rng()`` for each
    comparison, so each figure can be recomputed alone.
    """
    cells: dict[str, dict[str, float]] = {}
    for name, (a, b) in comparisons.items():
        if len(a) != len(b):
            raise InvalidValue(f"{name}: {len(a)} seeds against {len(b)}; the test pairs seeds.")
        differences = [np.array([x - y], dtype=float) for x, y in zip(a, b, strict=True)]
        diff, low, high = seed_interval(differences, interval_rng(), n_bootstrap)
        p = seed_paired_test([np.array([x]) for x in a], [np.array([y]) for y in b], test_rng())
        cells[name] = {"diff": diff, "low": low, "high": high, "p": p}
    adjusted = holm(np.array([cell["p"] for cell in cells.values()]))
    for cell, q in zip(cells.values(), adjusted, strict=True):
        cell["holm_p"] = float(q)
    return cells
