"""A comparison's text table: the difference surface, its method, p-values and marks.

The terminal's view of a :class:`~agent_envs.evaluation.CompareResult`
(``agent-envs compare`` prints it); the result itself holds only the figures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agent_envs.evaluation.formatting import grid_table
from agent_envs.statistics.resampling import MIN_SEEDS

__all__ = ["compare_table"]


#: The label in the table of each rate of ``reply_rates``.
_REPLY_LABELS = (("unparsable_rate", "unparsable"), ("invalid_action_rate", "invalid-action rate"))


def _rate_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def compare_table(result: Any, ci: bool = True) -> str:
    """Return ``result``'s difference surface as a text table (rows K, columns T).

    ``result`` is a :class:`~agent_envs.evaluation.CompareResult`; its ``table`` method
    calls this.
    """
    marks = result.wins()
    lines = [
        f"Pass@(K,T) difference A - B on {result.env_id}",
        f"  A = {result.a}",
        f"  B = {result.b}",
        grid_table(
            result.ks, result.budgets, result.diff, result.ci_low, result.ci_high, ci, True, marks
        ),
        _method(result),
    ]
    if result.unit == "seed":
        lines += _p_value_lines(result)
    if result.step_quality:
        sq = result.step_quality
        lines.append(
            f"step quality (optimal-action rate on {sq['states']} shared reference states, "
            f"{sq.get('single_move_states_excluded', 0)} with one legal move left out"
            f"{', privileged oracle' if sq.get('privileged_oracle') else ''}): "
            f"A {sq['a']:.3f}, B {sq['b']:.3f}, A - B {sq['diff']:+.3f} "
            f"[{sq['ci_low']:+.3f},{sq['ci_high']:+.3f}]"
        )
    if result.reply_rates:
        lines.append(
            "replies (A / B): "
            + ", ".join(
                f"{label} {_rate_text(result.reply_rates['a'][key])} / "
                f"{_rate_text(result.reply_rates['b'][key])}"
                for key, label in _REPLY_LABELS
            )
        )
    for side in ("A", "B"):
        cells = [
            f"(K={k},T={t})"
            for i, k in enumerate(result.ks)
            for j, t in enumerate(result.budgets)
            if marks[i, j] == side
        ]
        if len(cells) == marks.size:
            cells = ["everywhere on the grid"]
        lines.append(f"{side} is better at: {', '.join(cells) if cells else 'nowhere'}")
    return "\n".join(lines)


def _p_value_lines(result: Any) -> list[str]:
    """The seed-level p-values, Holm-adjusted ones when in a family, and why none may pass."""
    lines = ["seed-level p-values:", *_grid_lines(result, result.p_value)]
    if result.p_adjusted is not None:
        lines.append(
            f"Holm-adjusted p-values (family {result.family!r}, {result.family_size} tests; "
            "marks use these):"
        )
        lines += _grid_lines(result, result.p_adjusted)
    if not result.can_be_significant:
        lines.append(_why_nothing_is_significant(result))
    return lines


def _grid_lines(result: Any, values: np.ndarray) -> list[str]:
    return [
        f"  K={k}  " + "  ".join(f"T={t}: {row[j]:.3f}" for j, t in enumerate(result.budgets))
        for k, row in zip(result.ks, values, strict=True)
    ]


def _method(result: Any) -> str:
    if result.unit == "task":
        kind = "paired" if result.paired else "unpaired"
        return (
            f"[{result.confidence:.0%} {kind} bootstrap over tasks, {result.n_bootstrap} "
            "resamples; A/B marks a cell whose interval excludes 0]"
        )
    return (
        f"[{result.confidence:.0%} hierarchical bootstrap (seeds, then tasks within each seed), "
        f"{result.n_bootstrap} resamples; {result.test} over {result.seeds[0]} vs "
        f"{result.seeds[1]} seeds; A/B marks a cell whose interval excludes 0 and whose p <= "
        f"{1 - result.confidence:.2g}]"
    )


def _why_nothing_is_significant(result: Any) -> str:
    fewest = min(result.seeds)
    if fewest < MIN_SEEDS:
        reason = f"fewer than {MIN_SEEDS} seeds per side ({result.seeds[0]} vs {result.seeds[1]})"
    else:
        reason = (
            f"with {result.seeds[0]} vs {result.seeds[1]} seeds the {result.test} cannot go below "
            f"p = {result.min_p_value:.3g}"
        )
        if result.p_adjusted is not None and result.family_size:
            reason += (
                f", so in a Holm family of {result.family_size} tests no adjusted p goes "
                f"below {result.smallest_p:.3g}"
            )
    return f"No cell can be significant: {reason}; train more seeds."
