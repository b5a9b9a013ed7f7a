"""The real-model study's report: the three primary tests, surfaces, diagnostics, the pilot.

Everything is computed from the per-seed results that ``results.json``
stores whole, so a test recomputes every interval, p-value and Holm p.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation import EvalResult
from agent_envs.evaluation.result import bootstrap_rng
from agent_envs.evaluation.seed_stats import holm, seed_paired_test
from studies import report as kit
from studies.families import diagnostic_family, family_table, interval
from studies.real_model import design


def _verdict(diff: float, holm_p: float) -> str:
    if holm_p <= 0.05:
        return "supports" if diff > 0 else "reverses"
    return "consistent with" if diff > 0 else "does not support"


def primary_tests(runs: Mapping[str, Sequence[EvalResult]]) -> dict[str, dict[str, Any]]:
    """Return each primary test's statistics (difference, interval, p) and Holm over the three.

    A test with two statistics is an intersection-union test: both must hold,
    and its p is the larger of the two.
    """
    cells: dict[str, dict[str, Any]] = {}
    for name, (needs, statistics) in design.PRIMARY_TESTS.items():
        if not set(needs) <= set(runs):
            continue
        seeds = min(len(runs[regime]) for regime in needs)
        parts = []
        for statistic in statistics:
            values = [statistic(runs, seed) for seed in range(seeds)]
            diff, low, high = interval(values)
            zeros = [np.zeros_like(v) for v in values]
            p = seed_paired_test(values, zeros, bootstrap_rng(1))
            parts.append({"diff": diff, "low": low, "high": high, "p": p})
        cells[name] = {"parts": parts, "p": max(part["p"] for part in parts), "seeds": seeds}
    for cell, q in zip(
        cells.values(), holm(np.array([c["p"] for c in cells.values()])), strict=True
    ):
        cell["holm_p"] = float(q)
        cell["verdict"] = _verdict(min(part["diff"] for part in cell["parts"]), float(q))
    return cells


def primary_lines(cells: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The primary tests as a table: difference [95% interval] (p) per statistic, Holm p."""
    rows = [
        (
            name,
            "; ".join(
                f"{kit.cell(p['diff'], p['low'], p['high'], True)} (p {p['p']:.3f})"
                for p in cell["parts"]
            ),
            cell["seeds"],
            f"{cell['holm_p']:.3f}",
            cell["verdict"],
        )
        for name, cell in cells.items()
    ]
    header = ["primary test", "difference [95% interval] (p)", "seeds", "Holm p", "the data"]
    return ["### Primary tests (Holm over the three)", "", *kit.table(header, rows), ""]


def surface_lines(runs: Mapping[str, Sequence[EvalResult]], out: Path | None, record: dict) -> list:
    """Pass@(K,T) per regime: mean over seeds with hierarchical-bootstrap intervals."""
    lines = ["### Pass@(K,T) per regime: mean over seeds [95% hierarchical bootstrap]", ""]
    for name, results in runs.items():
        surface = kit.seed_surface(results)
        record[name] = {key: value.tolist() for key, value in surface.items()}
        budgets, ks = list(results[0].budgets), list(results[0].ks)
        rows = [
            [f"K={k}"]
            + [
                kit.cell(*(surface[x][i, j] for x in ("mean", "low", "high")))
                for j in range(len(budgets))
            ]
            for i, k in enumerate(ks)
        ]
        lines += [
            f"**{name}** ({len(results)} seeds)",
            "",
            *kit.table(["K \\ T"] + [f"T={t}" for t in budgets], rows),
            "",
        ]
        if out is not None:
            from agent_envs.evaluation.plotting import plot_grid

            plot_grid(
                out / f"{name}.png",
                surface["mean"],
                ks,
                budgets,
                vmin=0.0,
                vmax=1.0,
                title=f"{name}: Pass@(K,T), mean of {len(results)} seeds",
                cmap="viridis",
                label="Pass@(K,T)",
            )
    return lines


def secondary_lines(runs: Mapping[str, Sequence[EvalResult]], record: dict) -> list[str]:
    """The declared secondary families: regime - base cells (Holm), claim 2's diagnostics."""
    pairs = [(name, "base") for name in runs if name != "base" and len(runs[name]) > 1]
    lines = []
    if pairs and len(runs["base"]) > 1:
        compared, size = kit.compare_family(pairs, runs)
        record["compare_with_base"] = {name: d.to_dict() for name, d in compared.items()}
        lines += [f"### Secondary: {design.SECONDARY[0]} (Holm over {size} cells)", ""]
        lines += [
            f"- {name}: "
            + (
                ", ".join(f"T={t}: {w}" for t, w in zip(d.budgets, d.wins()[0], strict=True) if w)
                or "no cell"
            )
            for name, d in compared.items()
        ]
        cells = record["diagnostic_tests"] = diagnostic_family(runs, "base")
        lines += ["", f"### Secondary: {design.SECONDARY[1]}", "", *family_table(cells), ""]
    diagnostics: dict[str, Any] = {}
    lines += ["### Diagnostics (mean over seeds)", "", *kit.diagnostics_table(runs, diagnostics)]
    record["diagnostics"] = diagnostics
    return lines


def analyse(runs: Mapping[str, Sequence[EvalResult]], out: Path | None) -> tuple[list, dict]:
    """Return the markdown lines and the JSON record of every figure."""
    record: dict[str, Any] = {"surfaces": {}}
    cells = record["primary_tests"] = primary_tests(runs)
    lines = primary_lines(cells)
    lines += surface_lines(runs, out, record["surfaces"])
    lines += secondary_lines(runs, record)
    record["results"] = {name: [r.to_dict() for r in results] for name, results in runs.items()}
    return lines, record


def calibration_lines(result: EvalResult) -> tuple[list[str], dict[str, Any]]:
    """The pilot: the base model's Pass@(1,T) on training tasks against the bands."""
    surface = dict(zip(result.budgets, result.surface[0].tolist(), strict=True))
    long_, short = surface[design.LONG], surface[design.SHORT]
    low, high = design.CALIBRATION["long"]
    met = low <= long_ <= high and short <= design.CALIBRATION["short_at_most"] * long_
    record = {"surface": surface, "long": long_, "short": short, "bands_met": met}
    return [
        f"# Calibration pilot ({design.ENV_ID}, base model, training tasks)",
        "",
        f"Pass@(1,T): {surface}.  Long T={design.LONG}: {long_:.3f} (band {low}-{high}); "
        f"short T={design.SHORT}: {short:.3f} (at most {design.CALIBRATION['short_at_most']} "
        f"of long).  Bands {'met' if met else 'NOT met'}.",
        "",
    ], record
