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
from agent_envs.evaluation.compare import compare_family
from agent_envs.statistics.families import diagnostic_family, intersection_union_family
from studies import report as kit
from studies.real_model import design


def _outcome(diff: float | None, holm_p: float) -> str:
    """The declared test's outcome: ``passes``, ``reverses`` or ``fails``.

    Not the claim's verdict: a test that passes leaves a claim *not supported*
    where the data explain the effect another way (``docs/results.md``).
    """
    if diff is None:
        return "not measured"
    if holm_p <= 0.05:
        return "passes" if diff > 0 else "reverses"
    return "fails"


def _primary_values(runs: Mapping[str, Sequence[EvalResult]]) -> dict[str, list[list[Any]]]:
    """Each primary test whose regimes ran: its statistics, each one value per seed."""
    values = {}
    for name, (needs, statistics) in design.PRIMARY_TESTS.items():
        if not set(needs) <= set(runs):
            continue
        seeds = min(len(runs[regime]) for regime in needs)
        values[name] = [[stat(runs, seed) for seed in range(seeds)] for stat in statistics]
    return values


def _with_outcomes(cells: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Add each primary test's outcome (``test``) to its statistics; return them."""
    for cell in cells.values():
        diffs = [part["diff"] for part in cell["parts"]]
        cell["test"] = _outcome(None if None in diffs else min(diffs), cell["holm_p"])
    return cells


def primary_tests(runs: Mapping[str, Sequence[EvalResult]]) -> dict[str, dict[str, Any]]:
    """Return each primary test's statistics (difference, interval, p) and Holm over the three.

    Each statistic is :func:`~agent_envs.statistics.seed_effect`'s; a test with
    two statistics is an intersection-union test: both must hold, and its p is
    the larger of the two.
    """
    return _with_outcomes(intersection_union_family(_primary_values(runs)))


def primary_lines(cells: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The primary tests as a table: difference [95% interval] (p) per statistic, Holm p."""
    rows = [
        (
            name,
            "; ".join(
                "not measured (fewer than 2 seeds define it)"
                if p["diff"] is None
                else f"{kit.cell(p['diff'], p['low'], p['high'], True)} (p {p['p']:.3f})"
                for p in cell["parts"]
            ),
            cell["seeds"],
            f"{cell['holm_p']:.3f}",
            cell["test"],
        )
        for name, cell in cells.items()
    ]
    header = ["primary test", "difference [95% interval] (p)", "seeds", "Holm p", "the test"]
    return ["### Primary tests (Holm over the three)", "", *kit.table(header, rows), ""]


def surface_lines(runs: Mapping[str, Sequence[EvalResult]], out: Path | None, record: dict) -> list:
    """Pass@(K,T) per regime: mean over seeds with hierarchical-bootstrap intervals."""
    lines = ["### Pass@(K,T) per regime: mean over seeds [95% hierarchical bootstrap]", ""]
    for name, results in runs.items():
        png = None if out is None else out / f"{name}.png"
        lines += kit.regime_surface(name, results, record, png, name)
    return lines


def secondary_lines(compared: Mapping[str, Any], size: int, cells: Mapping | None) -> list[str]:
    """The declared secondary families: regime - base cells (Holm), claim 2's diagnostics."""
    if cells is None:
        return []
    lines = [f"### Secondary: {design.SECONDARY[0]} (Holm over {size} cells)", ""]
    lines += [
        f"- {name}: "
        + (
            ", ".join(f"T={t}: {w}" for t, w in zip(d.budgets, d.wins()[0], strict=True) if w)
            or "no cell"
        )
        for name, d in compared.items()
    ]
    return [*lines, "", f"### Secondary: {design.SECONDARY[1]}", "", *kit.family_table(cells), ""]


def analyse(runs: Mapping[str, Sequence[EvalResult]], out: Path | None) -> tuple[list, dict]:
    """Return the markdown lines and the JSON record of every figure.

    Every figure is computed first, from the floors below (the kit's surfaces,
    ``compare``, :mod:`agent_envs.statistics`); the words are written after.
    """
    values = _primary_values(runs)
    surfaces: dict[str, Any] = {}
    surface = surface_lines(runs, out, surfaces)
    pairs = [(name, "base") for name in runs if name != "base" and len(runs[name]) > 1]
    secondary = bool(pairs) and len(runs["base"]) > 1
    compared, size = (
        compare_family(pairs, runs, family="secondary", ks=[1]) if secondary else ({}, 0)
    )
    family = diagnostic_family(runs, "base") if secondary else None
    cells = intersection_union_family(values)
    _with_outcomes(cells)
    record: dict[str, Any] = {"surfaces": surfaces, "primary_tests": cells}
    if family is not None:
        record["compare_with_base"] = {name: d.to_dict() for name, d in compared.items()}
        record["diagnostic_tests"] = family
    diagnostics: dict[str, Any] = {}
    record["diagnostics"] = diagnostics  # filled with the table below
    record["results"] = {name: [r.to_dict() for r in results] for name, results in runs.items()}
    lines = primary_lines(cells) + surface + secondary_lines(compared, size, family)
    lines += ["### Diagnostics (mean over seeds)", "", *kit.diagnostics_table(runs, diagnostics)]
    return lines, record


def calibration_lines(
    results: Sequence[EvalResult], env_id: str, cpu: float, load: str
) -> tuple[list[str], dict[str, Any]]:
    """The pilot: the base model's Pass@(1,T) on training tasks, pooled, against the bands."""
    counts = np.concatenate([r.success_counts for r in results])
    samples, budgets = results[0].samples, list(results[0].budgets)
    per_task = counts / samples
    mean = per_task.mean(axis=0)
    error = per_task.std(axis=0, ddof=1) / np.sqrt(len(per_task)) if len(per_task) > 1 else 0 * mean
    surface = {t: float(m) for t, m in zip(budgets, mean, strict=True)}
    long_, short = surface[design.LONG], surface[design.SHORT]
    low, high = design.CALIBRATION["long"]
    met = low <= long_ <= high and short <= design.CALIBRATION["short_at_most"] * long_
    # Every chunk plays as many episodes.
    invalid = float(np.mean([r.diagnostics["invalid_action_rate"] for r in results]))
    record = {
        "env_id": env_id,
        "tasks": len(per_task),
        "samples": samples,
        "surface": surface,
        "standard_error": dict(zip(budgets, error.tolist(), strict=True)),
        "long": long_,
        "short": short,
        "bands_met": met,
        "invalid_rate": invalid,
        "process_cpu_seconds": round(cpu, 1),
        "load_average": load,
        "results": [r.to_dict() for r in results],
    }
    rows = [[f"{m:.3f} +- {1.96 * e:.3f}" for m, e in zip(mean, error, strict=True)]]
    return [
        f"# Calibration pilot ({env_id}, base model, training tasks only)",
        "",
        f"{len(per_task)} training tasks x {samples} samples; Pass@(1,T), mean over tasks "
        "+- 1.96 SE:",
        "",
        *kit.table([f"T={t}" for t in budgets], rows),
        "",
        f"Long T={design.LONG}: {long_:.3f} (band {low}-{high}); short T={design.SHORT}: "
        f"{short:.3f} (at most {design.CALIBRATION['short_at_most']} of long, "
        f"{design.CALIBRATION['short_at_most'] * long_:.3f}).  "
        f"Bands {'met' if met else 'NOT met'}.",
        "",
        f"Invalid replies: {invalid:.3f} of the base model's moves (mean over the chunks).",
        "",
        f"Cost: {cpu:.0f} CPU s (process time, every chunk), load average {load} at the end.",
        "",
    ], record


def move_table(done: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per regime: each kind of move's share, mean over seeds, and each seed's mix."""
    from studies.real_model.moves import MOVES

    per_regime: dict[str, list[Mapping[str, Any]]] = {}
    for job in sorted(done, key=lambda job: job["seed"]):
        per_regime.setdefault(job["regime"], []).append(job["moves"])
    return {
        regime: {
            **{kind: float(np.mean([mix[kind] for mix in mixes])) for kind in MOVES},
            "seeds": list(mixes),
        }
        for regime, mixes in per_regime.items()
    }


def move_lines(table: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What the policies do: the share of each kind of move per regime (held-out episodes)."""
    from studies.real_model.moves import MOVES

    rows = [
        (regime, *(f"{mix[kind]:.3f}" for kind in MOVES), sum(s["moves"] for s in mix["seeds"]))
        for regime, mix in table.items()
    ]
    return [
        "### What the policies do: share of moves, mean over seeds (held-out episodes)",
        "",
        "bisect: a midpoint of the interval shown; step: one from the previous guess; "
        "repeat: guessed before; invalid: refused by the env (`studies/real_model/moves.py`).",
        "",
        *kit.table(["regime", *MOVES, "moves"], rows),
        "",
    ]
