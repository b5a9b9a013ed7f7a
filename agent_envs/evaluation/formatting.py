"""Output for people and files: terminal tables, and JSON written safely."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from agent_envs.files import atomic_write_text, check_output_path
from agent_envs.redaction import scrub

__all__ = [
    "check_output_path",
    "diagnostics_lines",
    "error_summary",
    "grid_table",
    "write_json",
]


def write_json(path: str | os.PathLike[str], data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON, creating the folder; never leaves a cut file."""
    atomic_write_text(path, scrub(json.dumps(data, indent=1)) + "\n")


def error_summary(errors: Iterable[tuple[str, int]], shown: int = 3) -> str:
    """Return what the errors were: the first ``shown`` distinct messages, with counts.

    ``errors`` holds ``(message, count)`` pairs, first-seen message first.

    >>> error_summary([("ValueError: a", 3), ("KeyError: b", 1)])
    "3x 'ValueError: a'; 1x 'KeyError: b'"
    """
    pairs = list(errors)
    text = "; ".join(f"{count}x {message!r}" for message, count in pairs[:shown])
    if len(pairs) > shown:
        text += f"; and {len(pairs) - shown} more kinds"
    return text


def _cell(value: float, low: float, high: float, ci: bool, signed: bool) -> str:
    number = f"{value:+.3f}" if signed else f"{value:.3f}"
    if not ci:
        return number
    bounds = f"{low:+.2f},{high:+.2f}" if signed else f"{low:.2f},{high:.2f}"
    return f"{number} [{bounds}]"


def grid_table(
    ks: Sequence[int],
    budgets: Sequence[int],
    values: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    ci: bool = True,
    signed: bool = False,
    marks: np.ndarray | None = None,
) -> str:
    """Return a K x T table with one ``value [low,high]`` cell per grid point.

    Args:
        ks, budgets: row and column labels.
        values, low, high: arrays of shape ``(len(ks), len(budgets))``.
        ci: show the interval next to each value.
        signed: show a sign on every number (for differences).
        marks: optional strings appended to each cell (e.g. ``"A"`` for a win).
    """
    cells = [
        [
            _cell(values[i, j], low[i, j], high[i, j], ci, signed)
            + (f" {marks[i, j]}" if marks is not None and marks[i, j] else "")
            for j in range(len(budgets))
        ]
        for i in range(len(ks))
    ]
    width = max([len(cell) for row in cells for cell in row] + [len(f"T={max(budgets)}")])
    header = "K \\ T ".rjust(7) + "  ".join(f"T={t}".rjust(width) for t in budgets)
    rows = [
        f"K={k}".rjust(6) + " " + "  ".join(cell.rjust(width) for cell in row)
        for k, row in zip(ks, cells, strict=True)
    ]
    return "\n".join([header, *rows])


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def diagnostics_lines(diagnostics: dict[str, Any], budgets: Sequence[int]) -> list[str]:
    """Return the diagnostics as a few readable lines."""
    per_t = "  ".join(f"T={t}" for t in budgets)
    lines = ["Diagnostics:"]
    lines.append(
        f"  invalid-action rate: {_fmt(diagnostics.get('invalid_action_rate'))}"
        f" (unparsable: {_fmt(diagnostics.get('unparsable_rate'))})"
    )
    dead = diagnostics.get("dead_end_rate") or []
    lines.append(f"  dead-end rate ({per_t}): " + "  ".join(_fmt(value) for value in dead))
    if "decision_quality" in diagnostics:
        privileged = " [privileged oracle]" if diagnostics.get("privileged_oracle") else ""
        lines.append(
            f"  decision quality{privileged}: {_fmt(diagnostics['decision_quality'])} of all "
            f"judged turns, {_fmt(diagnostics.get('decision_quality_valid'))} of valid ones"
        )
        recovery = diagnostics.get("error_recovery") or []
        lines.append(
            f"  per-error recovery{privileged} ({per_t}): "
            + "  ".join(
                f"{_fmt(item['rate'])} ({item['recovered']}/{item['recoverable']}, "
                f"{item['fatal']} fatal)"
                for item in recovery
            )
        )
        after = diagnostics.get("success_after_error") or []
        lines.append(
            f"  success after an error{privileged} ({per_t}): "
            + "  ".join(f"{_fmt(item['success_rate'])} (n={item['episodes']})" for item in after)
        )
        for horizon, item in (diagnostics.get("by_horizon") or {}).items():
            tasks = f"{item['tasks']} task" + ("" if item["tasks"] == 1 else "s")
            lines.append(
                f"  oracle horizon{privileged} {horizon:>3} ({tasks}), success per T: "
                + "  ".join(_fmt(value) for value in item["success_rate"])
            )
        turns = diagnostics.get("turns") or {}
        if turns.get("episodes"):
            lines.append(
                f"  turns to success{privileged}: {_fmt(turns['mean_turns'], 2)} vs oracle "
                f"{_fmt(turns['mean_oracle_turns'], 2)} (mean ratio {_fmt(turns['mean_ratio'], 2)})"
            )
    step = diagnostics.get("step_quality")
    if step:
        privileged = " [privileged oracle]" if step.get("privileged_oracle") else ""
        lines.append(
            f"  step quality{privileged} on {step['states']} shared reference states: "
            f"{_fmt(step['optimal_rate'])} optimal (recovery states "
            f"{_fmt(step['recovery_optimal_rate'])}, n={step['recovery_states']}; on-path "
            f"{_fmt(step['on_path_optimal_rate'])}, n={step['on_path_states']}), "
            f"{_fmt(step['invalid_rate'])} invalid; "
            f"{step.get('single_move_states_excluded', 0)} states with one legal move left out"
        )
    return lines
