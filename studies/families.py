"""Holm families of seed-level tests: the statistics only the studies use.

A study declares each family of tests before computing it; every test in a
family is corrected together by Holm's method.  The unit of every test is the
training seed.  Three kinds of family:

* :func:`paired_family`: paired sign-flip tests of regime differences on a
  per-task metric (a study's primary metric), with hierarchical-bootstrap
  intervals;
* :func:`holm_family`: every Pass@(K,T) cell of some seed-level
  :func:`~agent_envs.evaluation.compare` results;
* :func:`diagnostic_family`: claim 2 of the paper, that multi-turn RL helps
  an agent recover from its errors more than it improves single steps: per
  training seed, each run group's recovery rate and step quality minus the
  baseline's (the same seed's warm start).

The generators are the studies' (``bootstrap_rng(0)`` for intervals,
``bootstrap_rng(1)`` for tests), so a committed figure recomputes exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from agent_envs.evaluation.compare import CompareResult
from agent_envs.evaluation.result import EvalResult, bootstrap_rng
from agent_envs.evaluation.seed_stats import (
    holm,
    paired_seed_differences,
    seed_interval,
    seed_paired_test,
)

__all__ = [
    "MEASURES",
    "diagnostic_family",
    "family_table",
    "holm_family",
    "interval",
    "paired_family",
    "paired_p",
]


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


def holm_family(
    comparisons: Sequence[CompareResult], family: str, ks: Sequence[int] | None = None
) -> int:
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
    runs: Mapping[str, Sequence[EvalResult]], baseline: str = "warm"
) -> dict[str, dict[str, float]]:
    """Return ``"<name> - <baseline>: <measure>"`` -> difference, interval, p and Holm p.

    ``runs[name]`` holds one result per training seed, in seed order, for
    every group and for ``baseline``.  A group with another number of seeds,
    or a measure some result lacks, is left out of the family.  The intervals
    and tests come from :func:`~agent_envs.evaluation.seed_stats.paired_seed_differences`.
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


def family_table(cells: Mapping[str, Mapping[str, float]]) -> list[str]:
    """Return :func:`diagnostic_family`'s cells as markdown table lines (header included)."""
    lines = ["| comparison | measure | difference [95%] | p | Holm p |", "|---|---|---|---|---|"]
    for key, cell in cells.items():
        name, measure = key.split(": ")
        lines.append(
            f"| {name} | {measure} | {cell['diff']:+.3f} [{cell['low']:+.3f}, {cell['high']:+.3f}]"
            f" | {cell['p']:.3f} | {cell['holm_p']:.3f} |"
        )
    return lines
