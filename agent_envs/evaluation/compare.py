"""compare(): where in (K,T) does policy A beat policy B, with confidence intervals."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation.formatting import write_json
from agent_envs.evaluation.pass_at_k import bootstrap_means, percentile_interval
from agent_envs.evaluation.result import EvalResult, bootstrap_rng

__all__ = ["CompareResult", "compare"]


@dataclass
class CompareResult:
    """The difference surface A - B of two results on the same env and grid.

    ``diff[i][j]`` is Pass@(``ks[i]``, ``budgets[j]``) of A minus that of B,
    with a ``confidence`` bootstrap interval ``[ci_low, ci_high]``.  With
    ``paired=True`` both results hold the same tasks and the bootstrap
    resamples tasks jointly (tighter); otherwise each side is resampled on its
    own.  A cell whose interval lies above 0 is where A beats B.
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

    def wins(self) -> np.ndarray:
        """Return a ``(K, T)`` array: ``"A"`` where A is better, ``"B"`` where B is, else ``""``."""
        marks = np.full(self.diff.shape, "", dtype=object)
        marks[self.ci_low > 0] = "A"
        marks[self.ci_high < 0] = "B"
        return marks

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        data: dict[str, Any] = {"format": "agent-envs-compare/1"}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            data[name] = value.tolist() if isinstance(value, np.ndarray) else value
        data["wins"] = self.wins().tolist()
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
            f"[{self.confidence:.0%} {'paired' if self.paired else 'unpaired'} bootstrap over "
            f"tasks, {self.n_bootstrap} resamples; A/B marks a cell whose interval excludes 0]",
        ]
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

    def plot(self, path: str | os.PathLike[str], scale: float = 1.0) -> Path:
        """Write the difference as a diverging heatmap (needs ``[plot]``); return the path.

        Design decision: the colour scale is fixed and symmetric, ``-scale``
        to ``+scale`` (default -1..1, every possible difference), so that a
        difference of 0.10 looks small and equal colours mean equal
        differences in every plot.  Scaling to the largest cell instead made
        0.10 as saturated as 0.97.  Pass a smaller ``scale`` to zoom in.
        """
        from agent_envs.evaluation.plotting import plot_grid

        if not 0 < scale <= 1:
            raise ValueError(f"scale must be in (0, 1], got {scale!r}.")
        marks = np.where(self.wins() != "", "*", "")
        return plot_grid(
            path,
            self.diff,
            self.ks,
            self.budgets,
            title=(
                f"Pass@(K,T) difference A - B on {self.env_id} (* = CI excludes 0)\n"
                f"A = {self.a}\nB = {self.b}"
            ),
            vmin=-scale,
            vmax=scale,
            cmap="RdBu",
            label="Pass@(K,T) of A minus B",
            marks=marks,
        )


def _check_compatible(a: EvalResult, b: EvalResult) -> None:
    problems = []
    if a.env_id != b.env_id:
        problems.append(f"envs differ ({a.env_id} vs {b.env_id})")
    if a.ks != b.ks:
        problems.append(f"K grids differ ({a.ks} vs {b.ks})")
    if a.budgets != b.budgets:
        problems.append(f"T grids differ ({a.budgets} vs {b.budgets})")
    if problems:
        raise ValueError(
            "Cannot compare: "
            + "; ".join(problems)
            + ". Rerun both with the same env, --k and --t."
        )


def compare(
    a: EvalResult,
    b: EvalResult,
    *,
    n_bootstrap: int | None = None,
    confidence: float | None = None,
    seed: int = 0,
) -> CompareResult:
    """Return the difference surface ``a - b`` with bootstrap intervals.

    Args:
        a, b: results on the same env with the same K and T grids.
        n_bootstrap: resamples (default: the larger of the two results').
        confidence: interval coverage (default: ``a.confidence``).
        seed: seeds the bootstrap.

    Raises:
        ValueError: when the envs or grids differ.

    Example:
        >>> from agent_envs.evaluation import evaluate, compare
        >>> from baselines.simple_agents import OracleAgent, RandomAgent
        >>> grid = dict(ks=[1], budgets=[7], tasks=10, n_bootstrap=200)
        >>> oracle = evaluate(OracleAgent(), "agent_envs/GuessNumber-v0", **grid)
        >>> random = evaluate(RandomAgent(), "agent_envs/GuessNumber-v0", **grid)
        >>> compare(oracle, random).wins().tolist()
        [['A']]
    """
    _check_compatible(a, b)
    n_bootstrap = n_bootstrap or max(a.n_bootstrap, b.n_bootstrap)
    confidence = confidence or a.confidence
    values_a, values_b = a.per_task_values(), b.per_task_values()
    rng = bootstrap_rng(seed)
    paired = sorted(a.task_ids) == sorted(b.task_ids)
    if paired:
        where = {task: index for index, task in enumerate(b.task_ids)}
        order = [where[task] for task in a.task_ids]
        draws = bootstrap_means(values_a - values_b[order], n_bootstrap, rng)
    else:
        draws = bootstrap_means(values_a, n_bootstrap, rng) - bootstrap_means(
            values_b, n_bootstrap, rng
        )
    low, high = percentile_interval(draws, confidence)
    return CompareResult(
        env_id=a.env_id,
        a=a.agent or "A",
        b=b.agent or "B",
        ks=list(a.ks),
        budgets=list(a.budgets),
        diff=a.surface - b.surface,
        ci_low=low,
        ci_high=high,
        paired=paired,
        confidence=confidence,
        n_bootstrap=n_bootstrap,
    )
