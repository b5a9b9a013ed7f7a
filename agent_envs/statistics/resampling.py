"""The bootstrap, and the comparison's resampling built on it and on the seed-level tests.

* The bootstrap: :func:`bootstrap_means` over tasks, its
  :func:`percentile_interval`, and :func:`hierarchical_bootstrap` over seeds
  then tasks (each seed's tasks drawn by a :data:`SeedSampler`, such as
  :func:`task_sampler`'s).  :func:`bootstrap_rng` is the generator the
  bootstrap of a run draws from.
* :func:`difference_surface`: the resampling behind
  :func:`~agent_envs.evaluation.compare`, over tasks, or over seeds (the
  hierarchical bootstrap with the seed-level permutation test, whose smallest
  possible p is :func:`min_p_value`), with its generators
  :func:`compare_generators`.  Beside it, the step quality's optimal-action
  rate, when all results share one state set.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from agent_envs.statistics.seed_tests import paired_permutation_test, unpaired_permutation_test
from wrappers.utils import seeding

__all__ = [
    "MIN_SEEDS",
    "SeedSampler",
    "bootstrap_means",
    "bootstrap_rng",
    "compare_generators",
    "difference_surface",
    "hierarchical_bootstrap",
    "min_p_value",
    "percentile_interval",
    "task_sampler",
]

#: Fewer seeds per side than this and no cell is called significant.
MIN_SEEDS = 5

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


# ------------------------------------------------ the comparison's resampling
def min_p_value(seeds_a: int, seeds_b: int, paired: bool) -> float:
    """Return the smallest two-sided p-value the seed-level test can give."""
    if paired:
        return min(1.0, 2.0 / 2**seeds_a)
    splits = math.comb(seeds_a + seeds_b, seeds_a)
    return min(1.0, (2.0 if seeds_a == seeds_b else 1.0) / splits)


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
