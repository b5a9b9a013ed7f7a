"""Statistics, on one floor: bootstraps, sign-flip and permutation tests, Holm families.

Everything here works on arrays (and, for the families, on the fields of a
result or a comparison); it imports no evaluator, so the evaluator, the
comparison and the studies all call down into it and nothing here calls up.

* The bootstrap: :func:`bootstrap_means` over tasks, its
  :func:`percentile_interval`, and :func:`hierarchical_bootstrap` over seeds
  then tasks.
* Seed-level tests: the training seed, not the (seed, task) pair, is the
  unit.  Results of several training seeds are not independent draws of
  tasks: each seed's tasks share one trained policy, and treating (seed,
  task) pairs as independent makes intervals far too narrow.  So the
  bootstrap resamples seeds, then tasks within each drawn seed, and the
  tests (:func:`paired_permutation_test`, the sign-flip test, and
  :func:`unpaired_permutation_test`) compare seeds.
* :func:`difference_surface`: the resampling behind
  :func:`~agent_envs.evaluation.compare`, over tasks or over seeds.
* Holm: :func:`holm` adjusts one family of p-values.  A study declares each
  family of tests before computing it; four kinds of family:
  :func:`paired_family` (paired sign-flip tests of regime differences on a
  per-task metric, a study's primary metric, with hierarchical-bootstrap
  intervals), :func:`intersection_union_family` (tests of one or two
  per-seed statistics against 0, each :func:`seed_effect`),
  :func:`holm_family` (every Pass@(K,T) cell of some seed-level
  comparisons) and :func:`diagnostic_family` (claim 2 of the paper, that
  multi-turn RL helps an agent recover from its errors more than it improves
  single steps: per training seed, each run group's recovery rate and step
  quality minus the baseline's).  The families draw from the studies'
  generators (``bootstrap_rng(0)`` for intervals, ``bootstrap_rng(1)`` for
  tests), so a committed figure recomputes exactly.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from wrappers.errors import InvalidValue
from wrappers.utils import seeding

__all__ = [
    "MEASURES",
    "MIN_SEEDS",
    "SeedSampler",
    "bootstrap_means",
    "bootstrap_rng",
    "compare_generators",
    "diagnostic_family",
    "difference_surface",
    "hierarchical_bootstrap",
    "holm",
    "holm_family",
    "intersection_union_family",
    "interval",
    "min_p_value",
    "paired_family",
    "paired_p",
    "paired_permutation_test",
    "paired_seed_differences",
    "percentile_interval",
    "seed_effect",
    "seed_interval",
    "seed_paired_test",
    "task_sampler",
    "unpaired_permutation_test",
]

#: Fewer seeds per side than this and no cell is called significant.
MIN_SEEDS = 5
# Exact tests enumerate at most this many relabellings; beyond, Monte Carlo.
_EXACT_LIMIT = 1 << 14
_MONTE_CARLO = 1 << 14

#: Draws ``m`` task-level bootstrap means of one seed, shape ``(m, ...)``.
SeedSampler = Callable[[int, np.random.Generator], np.ndarray]


def bootstrap_rng(seed: int) -> np.random.Generator:
    """Return the generator the bootstrap of a run with base ``seed`` draws from."""
    return seeding.stream(seeding.BOOTSTRAP, seed)


# ------------------------------------------------------------------ bootstrap
def bootstrap_means(values: np.ndarray, n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    """Return ``n_bootstrap`` bootstrap draws of the mean over axis 0 (tasks).

    Rows are resampled with replacement; each draw is the mean of one resample.

    Args:
        values: array of shape ``(tasks, ...)``; for a paired comparison pass
            the per-task differences.
        n_bootstrap: number of resamples (>= 1).
        rng: the generator that draws the resamples (seed it for determinism).

    Returns:
        An array of shape ``(n_bootstrap, *values.shape[1:])``.
    """
    values = np.asarray(values, dtype=float)
    rows = values.shape[0]
    flat = values.reshape(rows, -1)
    draws = np.empty((n_bootstrap, flat.shape[1]))
    # Resamples become multiplicity weights, so memory stays at chunk x tasks
    # whatever the grid size; the chunk bounds it for very many tasks.
    chunk = max(1, 2_000_000 // max(rows, 1))
    for start in range(0, n_bootstrap, chunk):
        stop = min(start + chunk, n_bootstrap)
        picks = rng.integers(0, rows, size=(stop - start, rows))
        weights = np.zeros((stop - start, rows))
        np.add.at(weights, (np.arange(stop - start)[:, None], picks), 1.0)
        draws[start:stop] = weights @ flat / rows
    return draws.reshape((n_bootstrap, *values.shape[1:]))


def percentile_interval(
    draws: np.ndarray, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Return the ``(low, high)`` percentile interval of bootstrap ``draws`` over axis 0."""
    tail = (1.0 - confidence) / 2.0
    return np.quantile(draws, tail, axis=0), np.quantile(draws, 1.0 - tail, axis=0)


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


# ---------------------------------------------------------------- seed-level tests
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


# ------------------------------------------------ the comparison's resampling
def _pair_sampler(a: np.ndarray, a_tasks: list[int], b: np.ndarray, b_tasks: list[int]):
    """Sample one seed's A - B: tasks jointly when both hold the same tasks."""
    if sorted(a_tasks) == sorted(b_tasks):
        where = {task: index for index, task in enumerate(b_tasks)}
        return task_sampler(a - b[[where[task] for task in a_tasks]])
    return lambda m, rng: bootstrap_means(a, m, rng) - bootstrap_means(b, m, rng)


def _ratio_sampler(hits: np.ndarray, states: np.ndarray) -> SeedSampler:
    """Sample sum(hits) / sum(states) over resampled tasks (one seed's pooled rate)."""
    columns = np.stack([hits, states], axis=1).astype(float)

    def sample(m: int, rng: np.random.Generator) -> np.ndarray:
        means = bootstrap_means(columns, m, rng)
        return means[:, 0] / means[:, 1]

    return sample


def _step_quality_difference(
    found: Sequence[Mapping[str, Any] | None],
    sides: int,
    paired: bool,
    n_bootstrap: int,
    rng: np.random.Generator,
    confidence: float,
) -> dict[str, Any] | None:
    """A - B of the step quality's optimal-action rate, when all share one state set.

    ``found`` holds each result's step quality (A's ``sides`` first, then B's).
    """
    if any(item is None for item in found):
        return None
    if any(item["state_set"] != found[0]["state_set"] for item in found):
        return None  # different states: the rates answer different questions
    rows = [np.array(item["per_task"], dtype=float) for item in found]
    rates = [row[:, 2].sum() / row[:, 1].sum() for row in rows]
    rows_a, rows_b = rows[:sides], rows[sides:]
    if paired:
        # One state set: per task, A's and B's hits on the very same states.
        samplers = [
            _ratio_sampler(a[:, 2] - b[:, 2], a[:, 1]) for a, b in zip(rows_a, rows_b, strict=True)
        ]
        draws = hierarchical_bootstrap(samplers, n_bootstrap, rng)
    else:
        draws = hierarchical_bootstrap(
            [_ratio_sampler(a[:, 2], a[:, 1]) for a in rows_a], n_bootstrap, rng
        ) - hierarchical_bootstrap(
            [_ratio_sampler(b[:, 2], b[:, 1]) for b in rows_b], n_bootstrap, rng
        )
    low, high = percentile_interval(draws, confidence)
    rate_a = float(np.mean(rates[:sides]))
    rate_b = float(np.mean(rates[sides:]))
    return {
        "states": int(rows[0][:, 1].sum()),
        "single_move_states_excluded": found[0].get("single_move_states_excluded", 0),
        "privileged_oracle": bool(found[0].get("privileged_oracle")),
        "a": rate_a,
        "b": rate_b,
        "diff": rate_a - rate_b,
        "ci_low": float(low),
        "ci_high": float(high),
    }


def compare_generators(seed: int) -> tuple[np.random.Generator, ...]:
    """Return the generators of a comparison with base ``seed``.

    In order: the bootstrap of the difference (the results' own stream), the
    seed-level tests' Monte Carlo and the bootstrap of the step quality.
    """
    return (
        bootstrap_rng(seed),
        seeding.stream(seed, seeding.COMPARE_TESTS),
        seeding.stream(seed, seeding.COMPARE_BOOTSTRAP),
    )


def _seed_level(
    values_a: list[np.ndarray],
    tasks_a: list[list[int]],
    values_b: list[np.ndarray],
    tasks_b: list[list[int]],
    n_bootstrap: int,
    generators: Sequence[np.random.Generator],
) -> tuple[np.ndarray, bool, dict[str, Any]]:
    """Hierarchical bootstrap draws of A - B and the seed-level permutation test."""
    rng, tests = generators[0], generators[1]
    means_a = np.stack([values.mean(axis=0) for values in values_a])
    means_b = np.stack([values.mean(axis=0) for values in values_b])
    paired = len(values_a) == len(values_b)
    if paired:
        samplers = [
            _pair_sampler(va, ta, vb, tb)
            for va, ta, vb, tb in zip(values_a, tasks_a, values_b, tasks_b, strict=True)
        ]
        draws = hierarchical_bootstrap(samplers, n_bootstrap, rng)
        p_value = paired_permutation_test(means_a - means_b, tests)
        test = "paired sign-flip permutation test"
    else:
        draws_a = hierarchical_bootstrap([task_sampler(v) for v in values_a], n_bootstrap, rng)
        draws_b = hierarchical_bootstrap([task_sampler(v) for v in values_b], n_bootstrap, rng)
        draws = draws_a - draws_b
        p_value = unpaired_permutation_test(means_a, means_b, tests)
        test = "unpaired permutation test"
    extra = dict(
        unit="seed",
        seeds=[len(values_a), len(values_b)],
        test=test,
        p_value=p_value,
        min_p_value=min_p_value(len(values_a), len(values_b), paired),
    )
    return draws, paired, extra


def difference_surface(
    values_a: list[np.ndarray],
    tasks_a: list[list[int]],
    values_b: list[np.ndarray],
    tasks_b: list[list[int]],
    step_quality: Sequence[Mapping[str, Any] | None],
    *,
    seed_level: bool,
    n_bootstrap: int,
    confidence: float,
    generators: Sequence[np.random.Generator],
) -> dict[str, Any]:
    """Return the fields of the difference surface A - B and its bootstrap interval.

    ``values_a[s]`` is side A's seed ``s`` per-task Pass@(K,T) values (shape
    ``(tasks, K, T)``) on the task ids ``tasks_a[s]``; likewise for B.  Over
    tasks (``seed_level=False``, one result a side) the bootstrap resamples
    tasks, jointly when both hold the same tasks; over seeds it is the
    hierarchical bootstrap with the seed-level permutation test, paired seed
    by seed when both sides have as many seeds.  ``step_quality`` holds each
    result's step quality (A's first), compared when all share one state set.
    ``generators`` are :func:`compare_generators`'.
    """
    means_a = np.stack([values.mean(axis=0) for values in values_a])
    means_b = np.stack([values.mean(axis=0) for values in values_b])
    if seed_level:
        draws, paired, extra = _seed_level(
            values_a, tasks_a, values_b, tasks_b, n_bootstrap, generators
        )
    else:
        paired, extra, rng = sorted(tasks_a[0]) == sorted(tasks_b[0]), {}, generators[0]
        if paired:
            draws = _pair_sampler(values_a[0], tasks_a[0], values_b[0], tasks_b[0])(
                n_bootstrap, rng
            )
        else:
            draws = bootstrap_means(values_a[0], n_bootstrap, rng) - bootstrap_means(
                values_b[0], n_bootstrap, rng
            )
    low, high = percentile_interval(draws, confidence)
    step = _step_quality_difference(
        step_quality, len(values_a), paired, n_bootstrap, generators[2], confidence
    )
    return dict(
        diff=means_a.mean(axis=0) - means_b.mean(axis=0),
        ci_low=low,
        ci_high=high,
        paired=paired,
        step_quality=step,
        **extra,
    )


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
