"""The studies' report kit: markdown tables, seed-level surfaces, reference agents, plots.

Each helper returns markdown lines and fills a JSON record, so a study's
``results.md`` and ``results.json`` come from the same numbers.  The
statistics, the Holm families among them, are :mod:`agent_envs.statistics`'.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation import EvalResult
from agent_envs.files import atomic_write_text
from agent_envs.statistics.resampling import bootstrap_rng, hierarchical_bootstrap, task_sampler

__all__ = [
    "cell",
    "diagnostics_table",
    "family_table",
    "grpo_training_table",
    "jsonable",
    "load_average",
    "p_text",
    "ran_on",
    "reference_results",
    "regime_surface",
    "seed_surface",
    "table",
    "write_report",
]


def load_average() -> str:
    """Return the 1-, 5- and 15-minute load averages: how much else shared the CPUs."""
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def ran_on(backend: str, workers: int) -> str:
    """Say where a study's runs ran, for its report's timing line.

    >>> ran_on("local", 2), ran_on("ray", 2)
    ('on 2 worker process(es)', 'as Ray tasks, one per run')
    """
    return "as Ray tasks, one per run" if backend == "ray" else f"on {workers} worker process(es)"


def cell(mean: float, low: float, high: float, signed: bool = False) -> str:
    """Return ``mean [low, high]`` as a table cell."""
    sign = "+" if signed else ""
    return f"{mean:{sign}.3f} [{low:{sign}.2f}, {high:{sign}.2f}]"


def p_text(value: float | None) -> str:
    """Return a p-value as a table cell (``n/a`` when there is none)."""
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.3f}"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Return a markdown table's lines."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(value) for value in row) + " |" for row in rows]


def jsonable(value: Any) -> Any:
    """Return ``value`` with numpy values as Python ones and non-finite floats as ``None``."""
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def write_report(out: Path, markdown: Sequence[str], record: Mapping[str, Any]) -> None:
    """Write ``results.md`` and ``results.json`` into ``out``, each whole or not at all."""
    atomic_write_text(out / "results.md", "\n".join(markdown) + "\n")
    atomic_write_text(out / "results.json", json.dumps(jsonable(record), indent=1) + "\n")


def seed_surface(results: Sequence[EvalResult], n_bootstrap: int = 2000) -> dict[str, Any]:
    """Return a regime's mean Pass@(K,T) over seeds with a hierarchical-bootstrap interval."""
    values = [result.per_task_values() for result in results]
    mean = np.mean([v.mean(axis=0) for v in values], axis=0)
    draws = hierarchical_bootstrap([task_sampler(v) for v in values], n_bootstrap, bootstrap_rng(0))
    low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    return {"mean": mean, "low": low, "high": high}


def regime_surface(
    name: str, results: Sequence[EvalResult], record: dict, png: Path | None, title: str
) -> list[str]:
    """One regime's Pass@(K,T) table over seeds (and its heatmap at ``png``).

    Fills ``record[name]`` with the surface (mean, low, high) as lists.
    """
    surface = seed_surface(results)
    record[name] = {key: value.tolist() for key, value in surface.items()}
    budgets, ks = list(results[0].budgets), list(results[0].ks)
    rows = [
        [f"K={k}"]
        + [cell(*(surface[x][i, j] for x in ("mean", "low", "high"))) for j in range(len(budgets))]
        for i, k in enumerate(ks)
    ]
    lines = [
        f"**{name}** ({len(results)} seeds)",
        "",
        *table(["K \\ T"] + [f"T={t}" for t in budgets], rows),
        "",
    ]
    if png is not None:
        from agent_envs.evaluation.plotting import plot_grid

        plot_grid(
            png,
            surface["mean"],
            ks,
            budgets,
            title=f"{title}: Pass@(K,T), mean of {len(results)} seeds",
            vmin=0.0,
            vmax=1.0,
            cmap="viridis",
            label="Pass@(K,T)",
        )
    return lines


def family_table(cells: Mapping[str, Mapping[str, float]]) -> list[str]:
    """Return a diagnostic family's cells as markdown table lines (header included).

    The cells are :func:`~agent_envs.statistics.diagnostic_family`'s.
    """
    lines = ["| comparison | measure | difference [95%] | p | Holm p |", "|---|---|---|---|---|"]
    for key, cell in cells.items():
        name, measure = key.split(": ")
        lines.append(
            f"| {name} | {measure} | {cell['diff']:+.3f} [{cell['low']:+.3f}, {cell['high']:+.3f}]"
            f" | {cell['p']:.3f} | {cell['holm_p']:.3f} |"
        )
    return lines


def reference_results(
    agents: Mapping[str, Any], env_id: str, named: bool = True, **grid: Any
) -> dict[str, EvalResult]:
    """Evaluate each reference agent (an oracle, a random agent) on the study's grid.

    ``named``: the result's ``agent_name`` is the key of ``agents``.
    """
    from agent_envs.evaluation import evaluate

    return {
        name: evaluate(agent, env_id, **({"agent_name": name} if named else {}), **grid)
        for name, agent in agents.items()
    }


def _grpo_row(logs: list[list[dict]], stops: list[str]) -> dict[str, Any]:
    """Summarise the per-step GRPO logs of one regime's seeds."""

    def mean(key: str, part: slice) -> float:
        values = [e[key] for log in logs for e in log[part] if e.get(key) is not None]
        return float(np.mean(values)) if values else float("nan")

    zero = [e["zero_std"] for log in logs for e in log if e.get("zero_std") is not None]
    first, last = slice(0, 5), slice(-5, None)
    return {
        "zero_std_mean": float(np.mean(zero)),
        "zero_std_max": float(np.max(zero)),
        "invalid": [mean("invalid", first), mean("invalid", last)],
        "success": [mean("success", first), mean("success", last)],
        "kl_end": mean("kl", last),
        "stops": stops,
    }


def grpo_training_table(
    names: Sequence[str], folder: Callable[[str, int], Path], seeds: Sequence[int], record: dict
) -> list[str]:
    """GRPO per regime from each run's ``train_llm.json``: zero-variance groups, invalid
    replies, success, KL, collapse-guard stops (mean over seeds); ``folder(name, seed)``."""
    lines = [
        "### GRPO training logs (every step logged; mean over seeds)",
        "",
        "| regime | zero-variance groups (mean, max) | invalid replies, first/last 5 steps "
        "| success, first/last 5 steps | KL at the end | guard stops |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        logs, stops = [], []
        for seed in seeds:
            sidecar = folder(name, seed) / "train_llm.json"
            if sidecar.exists():
                data = json.loads(sidecar.read_text())
                logs.append(data["log"])
                if data.get("stopped"):
                    stops.append(f"seed {seed} at step {data['stopped']['step']}")
        if not logs:
            continue
        row = record[name] = _grpo_row(logs, stops)
        lines.append(
            f"| {name} | {row['zero_std_mean']:.3f}, {row['zero_std_max']:.3f} | "
            f"{row['invalid'][0]:.3f} / {row['invalid'][1]:.3f} | "
            f"{row['success'][0]:.3f} / {row['success'][1]:.3f} | {row['kl_end']:.4f} | "
            f"{'; '.join(stops) or 'none'} |"
        )
    return [*lines, ""]


_DIAGNOSTICS = ("decision quality", "recovery", "step quality", "on path", "off path")


def _diagnostic_values(diagnostics: dict) -> tuple:
    """One result's diagnostics in the order of ``_DIAGNOSTICS``."""
    recovery = (diagnostics.get("error_recovery") or [{}])[-1]
    quality = diagnostics.get("step_quality") or {}
    return (
        diagnostics.get("decision_quality"),
        recovery.get("rate"),
        quality.get("optimal_rate"),
        quality.get("on_path_optimal_rate"),
        quality.get("recovery_optimal_rate"),
    )


def diagnostics_table(runs: Mapping[str, Sequence[EvalResult]], record: dict) -> list[str]:
    """Per regime: decision quality, per-error recovery and step quality (mean over seeds).

    ``record[regime]`` gets the means (``None`` where no seed has the measure).
    """
    lines = [
        "Diagnostics per regime (mean over seeds).  *Recovery*: of the errors (valid "
        "non-oracle actions) after which success was still reachable, the share that a later "
        "turn brought strictly closer to the goal than before the error, by the largest T (a "
        "wasted turn is no recovery).  *Step quality*: the share of oracle moves on shared "
        "reference states (the study's seed, so every regime and seed meets the same states; "
        "states with one legal move left out): all, on the oracle's path, and off it, i.e. "
        "after a mistake:",
        "",
        "| regime | " + " | ".join(_DIAGNOSTICS) + " |",
        "|---" * 6 + "|",
    ]
    for name, results in runs.items():
        columns: dict[str, list[float]] = {}
        for result in results:
            for key, value in zip(
                _DIAGNOSTICS, _diagnostic_values(result.diagnostics or {}), strict=True
            ):
                if isinstance(value, (int, float)):
                    columns.setdefault(key, []).append(float(value))
        means = {k: float(np.mean(columns[k])) if k in columns else None for k in _DIAGNOSTICS}
        record[name] = means
        cells = " | ".join("n/a" if v is None else f"{v:.3f}" for v in means.values())
        lines.append(f"| {name} | {cells} |")
    return [*lines, ""]
