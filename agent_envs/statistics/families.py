"""The studies' families of tests: each declared before it is computed, then Holm-corrected.

Four kinds of family: :func:`paired_family` (paired sign-flip tests of regime
differences on a per-task metric, a study's primary metric, with
hierarchical-bootstrap intervals), :func:`intersection_union_family` (tests
of one or two per-seed statistics against 0, each :func:`seed_effect`),
:func:`holm_family` (every Pass@(K,T) cell of some seed-level comparisons)
and :func:`diagnostic_family` (claim 2 of the paper, that multi-turn RL helps
an agent recover from its errors more than it improves single steps: per
training seed, each run group's recovery rate and step quality minus the
baseline's, through :func:`paired_seed_differences`).  Where a family
reports intervals they are :func:`seed_interval`'s, over seeds then tasks.
The families draw from the studies' generators (``bootstrap_rng(0)`` for
intervals, ``bootstrap_rng(1)`` for tests), so a committed figure recomputes
exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from agent_envs.statistics.resampling import (
    bootstrap_rng,
    hierarchical_bootstrap,
    percentile_interval,
    task_sampler,
)
from agent_envs.statistics.seed_tests import holm, seed_paired_test
from wrappers.errors import InvalidValue

__all__ = [
    "MEASURES",
    "diagnostic_family",
    "holm_family",
    "intersection_union_family",
    "interval",
    "paired_family",
    "paired_p",
    "paired_seed_differences",
    "seed_effect",
    "seed_interval",
]


# ------------------------------ seed-level intervals and paired differences
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
    samplers = [task_sampler(np.asarray(values, dtype=float)[:, None]) for values in per_seed]
    draws = hierarchical_bootstrap(samplers, n_bootstrap, rng)[:, 0]
    low, high = percentile_interval(draws, confidence)
    mean = float(np.mean([np.mean(values) for values in per_seed]))
    return mean, float(low), float(high)


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


# ------------------------------------------------------------ the studies' families
def interval(per_seed: Sequence[np.ndarray]) -> tuple[float, float, float]:
    """Mean over seeds of a per-task metric and its 95% hierarchical-bootstrap interval."""
    return seed_interval(per_seed, bootstrap_rng(0), 2000)


def paired_p(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    """Two-sided paired sign-flip test over seeds of the per-seed task means."""
    return seed_paired_test(a, b, bootstrap_rng(1))


def paired_family(
    tests: Sequence[tuple[str, str]], values: Mapping[str, Sequence[np.ndarray]]
) -> dict[str, dict[str, float]]:
    """Return ``"a - b"`` -> difference, interval, p and Holm p over the family ``tests``.

    ``values[name][s]`` holds seed ``s``'s per-task metric of regime
    ``name``; both regimes of a test are scored on the same tasks.
    """
    raw = [paired_p(values[a], values[b]) for a, b in tests]
    cells = {}
    for (a, b), p, q in zip(tests, raw, holm(np.array(raw)), strict=True):
        diff, low, high = interval([x - y for x, y in zip(values[a], values[b], strict=True)])
        cells[f"{a} - {b}"] = {"diff": diff, "low": low, "high": high, "p": p, "holm_p": float(q)}
    return cells


def holm_family(comparisons: Sequence[Any], family: str, ks: Sequence[int] | None = None) -> int:
    """Holm-correct one family of seed-level tests in place; return the family's size.

    The family is every cell (or, with ``ks``, every cell of those K rows) of
    every comparison given: declare it before looking at the p-values.  Each
    comparison gets ``p_adjusted`` (``nan`` outside the family), ``family``
    and ``family_size``, and :meth:`CompareResult.wins` then marks only cells
    whose adjusted p is at most ``1 - confidence``.
    """
    blocks = []
    for comparison in comparisons:
        if comparison.p_value is None:
            raise ValueError("holm_family needs seed-level comparisons (lists of results).")
        p_value = np.array(comparison.p_value, dtype=float)
        if ks is not None:
            p_value[[i for i, k in enumerate(comparison.ks) if k not in ks]] = np.nan
        blocks.append(p_value)
    adjusted = holm(np.concatenate([block.ravel() for block in blocks])) if blocks else []
    size = int(sum(np.isfinite(block).sum() for block in blocks))
    start = 0
    for comparison, block in zip(comparisons, blocks, strict=True):
        comparison.p_adjusted = np.asarray(adjusted[start : start + block.size]).reshape(
            block.shape
        )
        comparison.family, comparison.family_size = family, size
        start += block.size
    return size


def seed_effect(values: Sequence[np.ndarray]) -> dict[str, Any]:
    """One statistic over seeds: its mean, interval and sign-flip p against 0.

    ``values[s]`` is seed ``s``'s statistic (an array, one value per task or
    one value).  A seed whose statistic is undefined (not finite: no error to
    recover from, say) is left out; with fewer than 2 seeds left the statistic
    is not measured and its p is 1 (no evidence), so a family keeps its size.
    """
    kept = [v for v in values if np.all(np.isfinite(v))]
    if len(kept) < 2:
        return {"diff": None, "low": None, "high": None, "p": 1.0, "seeds": len(kept)}
    diff, low, high = interval(kept)
    p = seed_paired_test(kept, [np.zeros_like(v) for v in kept], bootstrap_rng(1))
    return {"diff": diff, "low": low, "high": high, "p": p, "seeds": len(kept)}


def intersection_union_family(
    tests: Mapping[str, Sequence[Sequence[np.ndarray]]],
) -> dict[str, dict[str, Any]]:
    """Return each test's statistics, its p and the Holm p over the family of ``tests``.

    ``tests[name]`` holds the test's statistics, each one value per seed (as
    :func:`seed_effect` takes them).  A test with two statistics is an
    intersection-union test: both must hold, and its p is the larger of the two.
    """
    cells: dict[str, dict[str, Any]] = {}
    for name, statistics in tests.items():
        parts = [seed_effect(values) for values in statistics]
        seeds = len(statistics[0])
        cells[name] = {"parts": parts, "p": max(part["p"] for part in parts), "seeds": seeds}
    adjusted = holm(np.array([cell["p"] for cell in cells.values()]))
    for cell, q in zip(cells.values(), adjusted, strict=True):
        cell["holm_p"] = float(q)
    return cells


def _recovery(diagnostics: Mapping[str, Any]) -> float | None:
    """Per-error recovery at the largest T of the grid."""
    return (diagnostics.get("error_recovery") or [{}])[-1].get("rate")


def _step_quality(diagnostics: Mapping[str, Any]) -> float | None:
    """The oracle-move rate on the shared reference states."""
    return (diagnostics.get("step_quality") or {}).get("optimal_rate")


#: What :func:`diagnostic_family` compares, read off one result's diagnostics.
MEASURES: dict[str, Callable[[Mapping[str, Any]], float | None]] = {
    "recovery": _recovery,
    "step quality": _step_quality,
}


def diagnostic_family(
    runs: Mapping[str, Sequence[Any]], baseline: str = "warm"
) -> dict[str, dict[str, float]]:
    """Return ``"<name> - <baseline>: <measure>"`` -> difference, interval, p and Holm p.

    ``runs[name]`` holds one result per training seed, in seed order, for
    every group and for ``baseline`` (anything with a ``diagnostics`` dict, such
    as an :class:`~agent_envs.evaluation.EvalResult`).  A group with another number of seeds,
    or a measure some result lacks, is left out of the family.  The intervals
    and tests come from :func:`paired_seed_differences`.
    """
    reference = runs[baseline]
    comparisons = {}
    for name, results in runs.items():
        if name == baseline or len(results) != len(reference):
            continue
        for measure, read in MEASURES.items():
            a = [read(result.diagnostics or {}) for result in results]
            b = [read(result.diagnostics or {}) for result in reference]
            if None not in a + b:
                comparisons[f"{name} - {baseline}: {measure}"] = (a, b)
    return paired_seed_differences(comparisons, lambda: bootstrap_rng(0), lambda: bootstrap_rng(1))
