"""Sign-flip and permutation tests whose unit is the training seed, and Holm's method.

Results of several training seeds are not independent draws of tasks: each
seed's tasks share one trained policy, and treating (seed, task) pairs as
independent makes intervals far too narrow and p-values far too small.  So
the tests compare seeds: :func:`paired_permutation_test` (the sign-flip test;
:func:`seed_paired_test` runs it on two regimes' per-task values) and
:func:`unpaired_permutation_test`.  :func:`holm` adjusts one family of their
p-values.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

__all__ = ["holm", "paired_permutation_test", "seed_paired_test", "unpaired_permutation_test"]

# Exact tests enumerate at most this many relabellings; beyond, Monte Carlo.
_EXACT_LIMIT = 1 << 14
_MONTE_CARLO = 1 << 14


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


def seed_paired_test(
    a: Sequence[np.ndarray], b: Sequence[np.ndarray], rng: np.random.Generator
) -> float:
    """Return the two-sided paired sign-flip p-value of mean(a) - mean(b) over seeds.

    ``a[s]`` and ``b[s]`` are seed ``s``'s per-task values of two regimes;
    ``rng`` serves only the Monte Carlo test beyond 14 seeds.
    """
    differences = np.array([np.mean(x) - np.mean(y) for x, y in zip(a, b, strict=True)])
    return float(paired_permutation_test(differences[:, None], rng)[0])


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
