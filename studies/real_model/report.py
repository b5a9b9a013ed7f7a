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


def _part(values: list[np.ndarray]) -> dict[str, Any]:
    """One statistic over seeds: difference, interval and sign-flip p.

    A seed whose statistic is undefined (no error to recover from, say) is
    left out; with fewer than 2 seeds left the statistic is not measured and
    its p is 1 (no evidence), so the Holm family stays the declared three.
    """
    kept = [v for v in values if np.all(np.isfinite(v))]
    if len(kept) < 2:
        return {"diff": None, "low": None, "high": None, "p": 1.0, "seeds": len(kept)}
    diff, low, high = interval(kept)
    p = seed_paired_test(kept, [np.zeros_like(v) for v in kept], bootstrap_rng(1))
    return {"diff": diff, "low": low, "high": high, "p": p, "seeds": len(kept)}


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
        parts = [_part([stat(runs, seed) for seed in range(seeds)]) for stat in statistics]
        cells[name] = {"parts": parts, "p": max(part["p"] for part in parts), "seeds": seeds}
    for cell, q in zip(
        cells.values(), holm(np.array([c["p"] for c in cells.values()])), strict=True
    ):
        cell["holm_p"] = float(q)
        diffs = [part["diff"] for part in cell["parts"]]
        cell["test"] = _outcome(None if None in diffs else min(diffs), float(q))
    return cells


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
