"""Seed-level tests of two diagnostics: does training change recovery, step quality, or both?

The paper's second claim is that multi-turn RL helps an agent recover from
its errors more than it improves single steps.  :func:`diagnostic_family`
tests it the way the studies test Pass@(1,T): per training seed, each run
group's recovery rate and step quality minus the baseline's (the same seed's
warm start), a bootstrap interval over seeds, a paired sign-flip test, and
one Holm correction over every test of the family.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent_envs.evaluation.result import EvalResult, bootstrap_rng
from agent_envs.evaluation.seed_stats import paired_seed_differences

__all__ = ["MEASURES", "diagnostic_family", "family_table"]


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
    and tests come from :func:`~agent_envs.evaluation.seed_stats.paired_seed_differences`
    with the studies' generators (``bootstrap_rng(0)`` for intervals,
    ``bootstrap_rng(1)`` for tests), so a committed figure recomputes exactly.
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
