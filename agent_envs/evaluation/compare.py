"""compare(): where in (K,T) does policy A beat policy B, with confidence intervals.

Two results are compared task by task.  Lists of results, one per training
seed, are compared seed by seed (see :mod:`agent_envs.evaluation.seed_stats`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation.formatting import write_json
from agent_envs.evaluation.pass_at_k import bootstrap_means, percentile_interval
from agent_envs.evaluation.result import EvalResult, bootstrap_rng
from agent_envs.evaluation.seed_stats import (
    MIN_SEEDS,
    SeedSampler,
    hierarchical_bootstrap,
    min_p_value,
    paired_permutation_test,
    task_sampler,
    unpaired_permutation_test,
)
from agent_envs.evaluation.settings import MAX_BOOTSTRAP
from wrappers.errors import InvalidType, InvalidValue
from wrappers.utils import seeding
from wrappers.utils.validators import check_int, check_number

__all__ = ["CompareResult", "compare"]


@dataclass
class CompareResult:
    """The difference surface A - B of two results (or two lists of seeds) on one env and grid.

    ``diff[i][j]`` is Pass@(``ks[i]``, ``budgets[j]``) of A minus that of B,
    with a ``confidence`` bootstrap interval ``[ci_low, ci_high]``.

    ``unit="task"`` (two results): with ``paired=True`` both hold the same
    tasks and the bootstrap resamples tasks jointly; otherwise each side is
    resampled on its own.  A cell whose interval excludes 0 is marked.

    ``unit="seed"`` (lists of results, one per training seed): ``diff`` is the
    mean over seeds of A minus that of B; the interval is a hierarchical
    bootstrap (seeds, then tasks within each seed); ``p_value`` is the
    seed-level ``test`` (paired by position when both lists are equally
    long).  A cell is marked only when its interval excludes 0 *and* its
    p-value is at most ``1 - confidence``; with fewer than ``MIN_SEEDS``
    seeds per side, or when ``min_p_value`` (the smallest p-value the test
    can give with these seeds) is above ``1 - confidence``, no cell can be.

    ``p_adjusted``, when a study Holm-corrects a declared family of
    comparisons: the cell's Holm-adjusted p-value within its ``family`` of
    ``family_size`` tests (``nan`` for a cell outside the family, which is
    then never marked); marks then use it instead of ``p_value``.

    ``step_quality``, when every result carries one on the same state set:
    the optimal-action rates of A and B and their difference with an interval
    (same resampling as the surface, over tasks or seeds then tasks).

    ``reply_rates``: each side's unparsable and invalid-action rates (the mean
    over its seeds), so a difference in Pass@(K,T) can be read against a
    difference in well-formed replies; a rate a side lacks is ``None``.
    """

    env_id: str
    a: str
    b: str
    ks: list[int]
    budgets: list[int]
    diff: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    paired: bool
    confidence: float
    n_bootstrap: int
    unit: str = "task"
    seeds: list[int] = field(default_factory=lambda: [1, 1])
    test: str | None = None
    p_value: np.ndarray | None = None
    min_p_value: float | None = None
    step_quality: dict[str, Any] | None = None
    p_adjusted: np.ndarray | None = None
    family: str | None = None
    family_size: int | None = None
    reply_rates: dict[str, dict[str, float | None]] | None = None

    @property
    def can_be_significant(self) -> bool:
        """Whether any cell could be significant with these seeds (always, over tasks).

        In a Holm family of m tests the smallest adjusted p is m times the
        smallest p the test can give, so a family too large for its seeds
        can mark nothing.
        """
        if self.unit == "task":
            return True
        return min(self.seeds) >= MIN_SEEDS and self._smallest_p() <= 1 - self.confidence

    def _smallest_p(self) -> float:
        """The smallest p (Holm-adjusted in a family) any cell could reach."""
        smallest = self.min_p_value or 1.0
        if self.p_adjusted is not None and self.family_size is not None:
            # A family of none of this comparison's cells tests nothing here.
            smallest = min(1.0, smallest * self.family_size) if self.family_size else 1.0
        return smallest

    def wins(self) -> np.ndarray:
        """Return a ``(K, T)`` array: ``"A"`` where A is better, ``"B"`` where B is, else ``""``."""
        marks = np.full(self.diff.shape, "", dtype=object)
        significant = np.ones(self.diff.shape, dtype=bool)
        if self.unit == "seed":
            if not self.can_be_significant:
                return marks
            p_value = self.p_value if self.p_adjusted is None else self.p_adjusted
            with np.errstate(invalid="ignore"):
                significant = p_value <= 1 - self.confidence  # nan (untested) is never
        marks[significant & (self.ci_low > 0)] = "A"
        marks[significant & (self.ci_high < 0)] = "B"
        return marks

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        data: dict[str, Any] = {"format": "agent-envs-compare/1"}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, np.ndarray):  # nan (a cell outside the family) -> null
                value = np.where(np.isnan(value), None, value).tolist()
            data[name] = value
        data["wins"] = self.wins().tolist()
        data["can_be_significant"] = self.can_be_significant
        return data

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_dict` as JSON to ``path``, creating its folder."""
        write_json(path, self.to_dict())

    def table(self, ci: bool = True) -> str:
        """Return the difference surface as a text table (rows K, columns T)."""
        from agent_envs.evaluation.formatting import grid_table

        marks = self.wins()
        lines = [
            f"Pass@(K,T) difference A - B on {self.env_id}",
            f"  A = {self.a}",
            f"  B = {self.b}",
            grid_table(
                self.ks, self.budgets, self.diff, self.ci_low, self.ci_high, ci, True, marks
            ),
            self._method(),
        ]
        if self.unit == "seed":
            lines += self._p_value_lines()
        if self.step_quality:
            sq = self.step_quality
            lines.append(
                f"step quality (optimal-action rate on {sq['states']} shared reference states, "
                f"{sq.get('single_move_states_excluded', 0)} with one legal move left out"
                f"{', privileged oracle' if sq.get('privileged_oracle') else ''}): "
                f"A {sq['a']:.3f}, B {sq['b']:.3f}, A - B {sq['diff']:+.3f} "
                f"[{sq['ci_low']:+.3f},{sq['ci_high']:+.3f}]"
            )
        if self.reply_rates:
            lines.append(
                "replies (A / B): "
                + ", ".join(
                    f"{label} {_rate_text(self.reply_rates['a'][key])} / "
                    f"{_rate_text(self.reply_rates['b'][key])}"
                    for key, label in _REPLY_RATES
                )
            )
        for side in ("A", "B"):
            cells = [
                f"(K={k},T={t})"
                for i, k in enumerate(self.ks)
                for j, t in enumerate(self.budgets)
                if marks[i, j] == side
            ]
            if len(cells) == marks.size:
                cells = ["everywhere on the grid"]
            lines.append(f"{side} is better at: {', '.join(cells) if cells else 'nowhere'}")
        return "\n".join(lines)

    def _p_value_lines(self) -> list[str]:
        """The seed-level p-values, Holm-adjusted ones when in a family, and why none may pass."""
        lines = ["seed-level p-values:", *self._grid_lines(self.p_value)]
        if self.p_adjusted is not None:
            lines.append(
                f"Holm-adjusted p-values (family {self.family!r}, {self.family_size} tests; "
                "marks use these):"
            )
            lines += self._grid_lines(self.p_adjusted)
        if not self.can_be_significant:
            lines.append(self._why_nothing_is_significant())
        return lines

    def _grid_lines(self, values: np.ndarray) -> list[str]:
        return [
            f"  K={k}  " + "  ".join(f"T={t}: {row[j]:.3f}" for j, t in enumerate(self.budgets))
            for k, row in zip(self.ks, values, strict=True)
        ]

    def _method(self) -> str:
        if self.unit == "task":
            kind = "paired" if self.paired else "unpaired"
            return (
                f"[{self.confidence:.0%} {kind} bootstrap over tasks, {self.n_bootstrap} "
                "resamples; A/B marks a cell whose interval excludes 0]"
            )
        return (
            f"[{self.confidence:.0%} hierarchical bootstrap (seeds, then tasks within each seed), "
            f"{self.n_bootstrap} resamples; {self.test} over {self.seeds[0]} vs {self.seeds[1]} "
            f"seeds; A/B marks a cell whose interval excludes 0 and whose p <= "
            f"{1 - self.confidence:.2g}]"
        )

    def _why_nothing_is_significant(self) -> str:
        fewest = min(self.seeds)
        if fewest < MIN_SEEDS:
            reason = f"fewer than {MIN_SEEDS} seeds per side ({self.seeds[0]} vs {self.seeds[1]})"
        else:
            reason = (
                f"with {self.seeds[0]} vs {self.seeds[1]} seeds the {self.test} cannot go below "
                f"p = {self.min_p_value:.3g}"
            )
            if self.p_adjusted is not None and self.family_size:
                reason += (
                    f", so in a Holm family of {self.family_size} tests no adjusted p goes "
                    f"below {self._smallest_p():.3g}"
                )
        return f"No cell can be significant: {reason}; train more seeds."

    def plot(self, path: str | os.PathLike[str], scale: float = 1.0) -> Path:
        """Write the difference as a diverging heatmap (needs ``[plot]``); return the path.

        Design decision: the colour scale is fixed and symmetric, ``-scale``
        to ``+scale`` (default -1..1, every possible difference), so that a
        difference of 0.10 looks small and equal colours mean equal
        differences in every plot.  Scaling to the largest cell instead made
        0.10 as saturated as 0.97.  Pass a smaller ``scale`` to zoom in.
        """
        from agent_envs.evaluation.plotting import plot_grid

        check_number(scale, "scale", 0.0, 1.0, open_low=True)
        marks = np.where(self.wins() != "", "*", "")
        return plot_grid(
            path,
            self.diff,
            self.ks,
            self.budgets,
            title=(
                f"Pass@(K,T) difference A - B on {self.env_id} (* = a significant cell)\n"
                f"A = {self.a}\nB = {self.b}"
            ),
            vmin=-scale,
            vmax=scale,
            cmap="RdBu",
            label="Pass@(K,T) of A minus B",
            marks=marks,
        )


#: The diagnostics ``reply_rates`` holds, with their labels in the table.
_REPLY_RATES = (("unparsable_rate", "unparsable"), ("invalid_action_rate", "invalid-action rate"))


def _rate_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _reply_rates(side: Sequence[EvalResult]) -> dict[str, float | None]:
    """Return the mean over ``side``'s results of each reply rate (``None`` if any lacks it)."""
    rates: dict[str, float | None] = {}
    for key, _ in _REPLY_RATES:
        values = [(result.diagnostics or {}).get(key) for result in side]
        numbers = [v for v in values if isinstance(v, (int, float))]
        rates[key] = float(np.mean(numbers)) if numbers and len(numbers) == len(values) else None
    return rates


def _check_compatible(a: EvalResult, b: EvalResult) -> None:
    problems = []
    if a.env_id != b.env_id:
        problems.append(f"envs differ ({a.env_id} vs {b.env_id})")
    if a.ks != b.ks:
        problems.append(f"K grids differ ({a.ks} vs {b.ks})")
    if a.budgets != b.budgets:
        problems.append(f"T grids differ ({a.budgets} vs {b.budgets})")
    if problems:
        raise InvalidValue(
            "Cannot compare: "
            + "; ".join(problems)
            + ". Rerun both with the same env, --k and --t."
        )


def _sides(side: EvalResult | Sequence[EvalResult], name: str) -> list[EvalResult]:
    results = [side] if isinstance(side, EvalResult) else list(side)
    if not results or not all(isinstance(result, EvalResult) for result in results):
        raise InvalidType(
            f"{name} must be an EvalResult or a non-empty list of them (one per seed)."
        )
    return results


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


def _step_quality_rows(result: EvalResult) -> dict[str, Any] | None:
    return (result.diagnostics or {}).get("step_quality")


def _step_quality_difference(
    side_a: list[EvalResult],
    side_b: list[EvalResult],
    paired: bool,
    n_bootstrap: int,
    rng: np.random.Generator,
    confidence: float,
) -> dict[str, Any] | None:
    """A - B of the step quality's optimal-action rate, when all share one state set."""
    found = [_step_quality_rows(result) for result in side_a + side_b]
    if any(item is None for item in found):
        return None
    if any(item["state_set"] != found[0]["state_set"] for item in found):
        return None  # different states: the rates answer different questions
    rows = [np.array(item["per_task"], dtype=float) for item in found]
    rates = [row[:, 2].sum() / row[:, 1].sum() for row in rows]
    rows_a, rows_b = rows[: len(side_a)], rows[len(side_a) :]
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
    rate_a = float(np.mean(rates[: len(side_a)]))
    rate_b = float(np.mean(rates[len(side_a) :]))
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


def _task_level(
    values_a: np.ndarray,
    a: EvalResult,
    values_b: np.ndarray,
    b: EvalResult,
    n_bootstrap: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Bootstrap draws of A - B over tasks: paired when both hold the same tasks."""
    if sorted(a.task_ids) == sorted(b.task_ids):
        return _pair_sampler(values_a, a.task_ids, values_b, b.task_ids)(n_bootstrap, rng)
    return bootstrap_means(values_a, n_bootstrap, rng) - bootstrap_means(values_b, n_bootstrap, rng)


def _seed_level(
    side_a: list[EvalResult],
    side_b: list[EvalResult],
    values_a: list[np.ndarray],
    values_b: list[np.ndarray],
    n_bootstrap: int,
    seed: int,
) -> tuple[np.ndarray, bool, dict[str, Any]]:
    """Hierarchical bootstrap draws of A - B and the seed-level permutation test."""
    rng = bootstrap_rng(seed)
    means_a = np.stack([values.mean(axis=0) for values in values_a])
    means_b = np.stack([values.mean(axis=0) for values in values_b])
    paired = len(side_a) == len(side_b)
    tests = seeding.stream(seed, seeding.COMPARE_TESTS)
    if paired:
        samplers = [
            _pair_sampler(va, ra.task_ids, vb, rb.task_ids)
            for va, ra, vb, rb in zip(values_a, side_a, values_b, side_b, strict=True)
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
        seeds=[len(side_a), len(side_b)],
        test=test,
        p_value=p_value,
        min_p_value=min_p_value(len(side_a), len(side_b), paired),
    )
    return draws, paired, extra


def compare(
    a: EvalResult | Sequence[EvalResult],
    b: EvalResult | Sequence[EvalResult],
    *,
    n_bootstrap: int | None = None,
    confidence: float | None = None,
    seed: int = 0,
) -> CompareResult:
    """Return the difference surface ``a - b`` with bootstrap intervals.

    Two results are compared over tasks.  Lists of results, one per training
    seed, are compared at the seed level: a hierarchical bootstrap (seeds,
    then tasks within each seed) and a seed-level permutation test, paired
    seed by seed (``a[i]`` with ``b[i]``) when both lists are equally long.
    With fewer than ``MIN_SEEDS`` (5) seeds per side no cell is marked.

    Args:
        a, b: results on the same env with the same K and T grids, or lists
            of them (one per training seed).
        n_bootstrap: resamples (default: the largest of the results').
        confidence: interval coverage (default: that of the first result of ``a``).
        seed: seeds the bootstrap and the Monte Carlo tests.

    Raises:
        ValueError: when the envs or grids differ.
        TypeError: when a side is neither a result nor a list of results.

    Example:
        >>> from agent_envs.evaluation import evaluate, compare
        >>> class Oracle:  # follows the env's oracle, which ActionHints puts in info
        ...     required_info = ("oracle_actions",)
        ...     def act(self, observation, info):
        ...         return info["oracle_actions"][0]
        >>> grid = dict(ks=[1], budgets=[7], tasks=10, n_bootstrap=200)
        >>> oracle = evaluate(Oracle(), "agent_envs/GuessNumber-v0", **grid)
        >>> random = evaluate(lambda obs: "1", "agent_envs/GuessNumber-v0", **grid)
        >>> compare(oracle, random).wins().tolist()
        [['A']]
        >>> seeds = compare([oracle] * 3, [random] * 3)
        >>> seeds.unit, seeds.can_be_significant, seeds.wins().tolist()
        ('seed', False, [['']])
    """
    seed_level = not (isinstance(a, EvalResult) and isinstance(b, EvalResult))
    side_a, side_b = _sides(a, "a"), _sides(b, "b")
    for other in side_a[1:] + side_b:
        _check_compatible(side_a[0], other)
    if n_bootstrap is not None:
        check_int(n_bootstrap, "n_bootstrap", 1, MAX_BOOTSTRAP)
    n_bootstrap = n_bootstrap or max(result.n_bootstrap for result in side_a + side_b)
    return _difference(
        side_a, side_b, seed_level, n_bootstrap, confidence or side_a[0].confidence, seed
    )


def _difference(
    side_a: list[EvalResult],
    side_b: list[EvalResult],
    seed_level: bool,
    n_bootstrap: int,
    confidence: float,
    seed: int,
) -> CompareResult:
    """Return ``compare``'s result for two checked sides: the mean difference and its interval."""
    first = side_a[0]
    values_a = [result.per_task_values() for result in side_a]
    values_b = [result.per_task_values() for result in side_b]
    means_a = np.stack([values.mean(axis=0) for values in values_a])
    means_b = np.stack([values.mean(axis=0) for values in values_b])
    if seed_level:
        draws, paired, extra = _seed_level(side_a, side_b, values_a, values_b, n_bootstrap, seed)
    else:
        paired, extra = sorted(first.task_ids) == sorted(side_b[0].task_ids), {}
        rng = bootstrap_rng(seed)
        draws = _task_level(values_a[0], first, values_b[0], side_b[0], n_bootstrap, rng)
    low, high = percentile_interval(draws, confidence)
    rng = seeding.stream(seed, seeding.COMPARE_BOOTSTRAP)
    step = _step_quality_difference(side_a, side_b, paired, n_bootstrap, rng, confidence)
    return CompareResult(
        env_id=first.env_id,
        a=first.agent or "A",
        b=side_b[0].agent or "B",
        ks=list(first.ks),
        budgets=list(first.budgets),
        diff=means_a.mean(axis=0) - means_b.mean(axis=0),
        ci_low=low,
        ci_high=high,
        paired=paired,
        confidence=confidence,
        n_bootstrap=n_bootstrap,
        step_quality=step,
        reply_rates={"a": _reply_rates(side_a), "b": _reply_rates(side_b)},
        **extra,
    )
