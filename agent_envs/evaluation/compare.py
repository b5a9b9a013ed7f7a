"""compare(): where in (K,T) does policy A beat policy B, with confidence intervals.

Two results are compared task by task.  Lists of results, one per training
seed, are compared seed by seed (see :mod:`agent_envs.statistics`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation.formatting import write_json
from agent_envs.evaluation.result import EvalResult
from agent_envs.evaluation.settings import MAX_BOOTSTRAP
from agent_envs.statistics.families import holm_family
from agent_envs.statistics.resampling import MIN_SEEDS, compare_generators, difference_surface
from wrappers.errors import InvalidType, InvalidValue
from wrappers.utils.validators import check_int, check_number

__all__ = ["CompareResult", "compare", "compare_family"]


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
        return min(self.seeds) >= MIN_SEEDS and self.smallest_p <= 1 - self.confidence

    @property
    def smallest_p(self) -> float:
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
        """Return the difference surface as a text table (rows K, columns T).

        The table is written by :func:`~agent_envs.evaluation.compare_table.compare_table`.
        """
        from agent_envs.evaluation.compare_table import compare_table

        return compare_table(self, ci)

    def plot(self, path: str | os.PathLike[str], scale: float = 1.0) -> Path:
        """Write the difference as a diverging heatmap (needs ``[plot]``); return the path.

        The heatmap is drawn by :func:`~agent_envs.evaluation.plotting.plot_difference`
        (a fixed, symmetric colour scale, ``-scale`` to ``+scale``).
        """
        from agent_envs.evaluation.plotting import plot_difference

        return plot_difference(self, path, scale)


#: The diagnostics ``reply_rates`` holds, read off each side's results.
REPLY_RATES = ("unparsable_rate", "invalid_action_rate")


def _reply_rates(side: Sequence[EvalResult]) -> dict[str, float | None]:
    """Return the mean over ``side``'s results of each reply rate (``None`` if any lacks it)."""
    rates: dict[str, float | None] = {}
    for key in REPLY_RATES:
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
        ValueError: when the envs or grids differ, or ``n_bootstrap`` or
            ``confidence`` is out of range.
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
    if confidence is not None:
        check_number(confidence, "confidence", 0.0, 1.0, open_low=True, open_high=True)
    confidence = side_a[0].confidence if confidence is None else confidence
    generators = compare_generators(seed)
    return _difference(side_a, side_b, seed_level, n_bootstrap, confidence, generators)


def compare_family(
    pairs: Sequence[tuple[str, str]],
    runs: Mapping[str, Sequence[EvalResult]],
    *,
    family: str,
    ks: Sequence[int] | None,
) -> tuple[dict[str, CompareResult], int]:
    """Seed-level :func:`compare` of each pair ``(a, b)`` of ``runs``, Holm over one family.

    ``runs[name]`` holds one result per training seed.  The family is every
    cell of the K rows in ``ks`` (every cell with ``None``) of every
    comparison, declared before the p-values are read
    (:func:`~agent_envs.statistics.holm_family`).  Returns
    ``({"a - b": CompareResult}, the family's size)``.
    """
    compared = {f"{a} - {b}": compare(runs[a], runs[b], seed=0) for a, b in pairs}
    return compared, holm_family(list(compared.values()), family, ks=ks)


def _difference(
    side_a: list[EvalResult],
    side_b: list[EvalResult],
    seed_level: bool,
    n_bootstrap: int,
    confidence: float,
    generators: tuple[np.random.Generator, ...],
) -> CompareResult:
    """Return ``compare``'s result for two checked sides: the mean difference and its interval.

    What the statistics need is read off the results first (the reply rates,
    the step quality, each seed's per-task values and task ids); the
    resampling is :func:`~agent_envs.statistics.difference_surface`'s.
    """
    first, other = side_a[0], side_b[0]
    reply_rates = {"a": _reply_rates(side_a), "b": _reply_rates(side_b)}
    step_quality = [(result.diagnostics or {}).get("step_quality") for result in side_a + side_b]
    values_a = [result.per_task_values() for result in side_a]
    values_b = [result.per_task_values() for result in side_b]
    tasks_a = [result.task_ids for result in side_a]
    tasks_b = [result.task_ids for result in side_b]
    figures = difference_surface(
        values_a,
        tasks_a,
        values_b,
        tasks_b,
        step_quality,
        seed_level=seed_level,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        generators=generators,
    )
    return CompareResult(
        env_id=first.env_id,
        a=first.agent or "A",
        b=other.agent or "B",
        ks=list(first.ks),
        budgets=list(first.budgets),
        confidence=confidence,
        n_bootstrap=n_bootstrap,
        reply_rates=reply_rates,
        **figures,
    )
