"""The LLM BudgetMix study's report: ``results.md`` and ``results.json`` from its runs.

Every figure is recomputed from the per-seed results, so these functions
applied to a committed ``results.json``'s own results give its figures back
(``tests/test_studies.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation.compare import compare_family
from agent_envs.statistics.families import diagnostic_family, interval, paired_family
from agent_envs.statistics.resampling import min_p_value
from studies import report as kit
from studies.llm_budgetmix.design import (
    ENV_ID,
    KS,
    PLAN,
    PRIMARY,
    PRIMARY_TESTS,
    SECONDARY_PRIMARY_TESTS,
    STEP_QUALITY_SEED,
    STEP_QUALITY_STATES,
    primary_values,
)

SLUG = ENV_ID.split("/")[-1]


def reference_results(eval_tasks: list[int], samples: int) -> dict[str, Any]:
    """The oracle and a uniform guesser inside the interval, on the evaluation tasks."""
    from baselines.simple_agents import IntervalGuesser, OracleAgent

    return kit.reference_results(
        {"oracle": OracleAgent(), "interval guesser": IntervalGuesser()},
        ENV_ID,
        named=False,
        ks=[k for k in KS if k <= samples],
        budgets=PLAN.eval_budgets,
        tasks=eval_tasks,
        samples=samples,
        step_quality=STEP_QUALITY_STATES,
        step_quality_seed=STEP_QUALITY_SEED,
    )


def surface_lines(
    names: list[str], results: dict, references: dict, out: Path | None, summary: dict
) -> list[str]:
    """Pass@(K,T) per regime (mean over seeds, interval) and a heatmap each (``out``)."""
    lines = ["### Pass@(K,T) per regime: mean over seeds [95% hierarchical bootstrap]", ""]
    for name in names:
        png = None if out is None else out / f"{SLUG}-{name}.png"
        lines += kit.regime_surface(name, results[name], summary["regimes"], png, f"{SLUG} {name}")
    lines += ["References on the same tasks (Pass@(1,T)):", ""]
    budgets = list(PLAN.eval_budgets)
    for name, result in references.items():
        cells = ", ".join(
            f"T={t}: {v:.3f}" for t, v in zip(budgets, result.surface[0], strict=True)
        )
        lines.append(f"- {name}: {cells}")
        summary["references"][name] = result.to_dict()
    return [*lines, ""]


def primary_lines(
    values: dict[str, list], intervals: dict, families: dict, smallest: float, summary: dict
) -> list[str]:
    """The declared primary metric per regime and its Holm-corrected families of tests."""
    rows = []
    for name, (mean, low, high) in intervals.items():
        per_seed = [float(np.mean(v)) for v in values[name]]
        summary["primary"][name] = {"mean": mean, "low": low, "high": high, "per_seed": per_seed}
        rows.append((name, kit.cell(mean, low, high), ", ".join(f"{v:.3f}" for v in per_seed)))
    seeds = len(next(iter(values.values())))
    lines = [
        f"### Primary metric: {PRIMARY}",
        "",
        *kit.table(["regime", "mean [95% interval]", "per seed"], rows),
        "",
        f"Paired sign-flip tests over {seeds} seeds (the smallest p one test can give is "
        f"{smallest:.3f}), Holm within each family; each difference "
        "with its 95% hierarchical-bootstrap interval:",
        "",
    ]
    rows = []
    for family, key in (("primary", "primary_tests"), ("other comparisons", "other_primary_tests")):
        cells = families[key]
        summary.setdefault(key, {}).update(cells)
        rows += [
            (
                family,
                test,
                kit.cell(c["diff"], c["low"], c["high"], True),
                f"{c['p']:.3f}",
                f"{c['holm_p']:.3f}",
            )
            for test, c in cells.items()
        ]
    header = ["family", "test", "difference [95% interval]", "p", "Holm p"]
    return [*lines, *kit.table(header, rows), ""]


def secondary_lines(compared: dict, size: int, out: Path | None, summary: dict) -> list:
    """Seed-level compares, Holm over every Pass@(1,T) cell of the family."""
    budgets, rows = list(PLAN.eval_budgets), []
    for name, d in compared.items():
        summary["secondary"][name] = d.to_dict()
        marks = d.wins()[0]
        cells = [
            f"{kit.cell(d.diff[0, j], d.ci_low[0, j], d.ci_high[0, j], True)}"
            f" ({kit.p_text(d.p_value[0, j])}, {kit.p_text(d.p_adjusted[0, j])})"
            + (f" **{marks[j]}**" if marks[j] else "")
            for j in range(len(budgets))
        ]
        step = d.step_quality
        cells.append(
            kit.cell(step["diff"], step["ci_low"], step["ci_high"], True) if step else "n/a"
        )
        rows.append([name, *cells])
        if name.endswith("- warm") and out is not None:
            d.plot(out / f"{SLUG}-{name.split(' ')[0]}-minus-warm.png")
    header = ["comparison", *(f"T={t}" for t in budgets), "step quality"]
    return [
        f"### Secondary: Pass@(1,T) differences, seed level (Holm over the {size} cells)",
        "",
        "Each cell: difference [95% interval] (p, Holm p).",
        "",
        *kit.table(header, rows),
        "",
        "(**A**/**B**: significant after Holm; A is the left-hand regime.)",
        "",
    ]


def _recovery(group: list[Any], budget: int) -> tuple[int, int, float | None]:
    """Pool (recovered, recoverable, mean turns to recover) within ``budget`` over seeds."""
    recovered = recoverable = 0
    turns = 0.0
    for result in group:
        entry = (result.diagnostics or {})["error_recovery"][list(result.budgets).index(budget)]
        recovered += entry["recovered"]
        recoverable += entry["recoverable"]
        turns += (entry["mean_turns_to_recover"] or 0.0) * entry["recovered"]
    return recovered, recoverable, (turns / recovered if recovered else None)


def _step_quality(group: list[Any]) -> str:
    """Pooled step quality of a regime, with the states judged and those left out."""
    hits = states = excluded = 0
    for result in group:
        quality = (result.diagnostics or {}).get("step_quality") or {}
        states += quality.get("states") or 0
        hits += round((quality.get("optimal_rate") or 0.0) * (quality.get("states") or 0))
        excluded += quality.get("single_move_states_excluded") or 0
    return f"{hits / states:.3f} (n={states}, {excluded} left out)" if states else "n/a"


def diagnostics_lines(names: list[str], results: dict, references: dict, summary) -> list[str]:
    """Invalid replies, decision and step quality, and recovery at a tight and a long T."""
    tight, longest = PLAN.short, PLAN.long
    rows = []
    groups = {**{name: results[name] for name in names}, **{n: [r] for n, r in references.items()}}
    for name, group in groups.items():
        invalid = np.mean([(r.diagnostics or {}).get("invalid_action_rate") or 0.0 for r in group])
        quality = np.mean([(r.diagnostics or {}).get("decision_quality") or 0.0 for r in group])
        short, long_ = _recovery(group, tight), _recovery(group, longest)
        summary["diagnostics"][name] = {
            "invalid": float(invalid),
            "decision_quality": float(quality),
            "recovery_tight": short,
            "recovery_long": long_,
        }
        rates = [f"{r / n:.3f} ({r}/{n})" if n else "n/a" for r, n, _ in (short, long_)]
        turns = "n/a" if long_[2] is None else f"{long_[2]:.2f}"
        rows.append((name, f"{invalid:.3f}", f"{quality:.3f}", _step_quality(group), *rates, turns))
    header = [
        "regime",
        "invalid replies",
        "decision quality",
        "step quality",
        f"recovery T={tight}",
        f"recovery T={longest}",
        f"turns to recover T={longest}",
    ]
    return [
        "### Diagnostics (pooled over seeds)",
        "",
        "Recovery: of the recoverable errors (valid guesses that are not the oracle's), "
        "the share that a *later* turn brought strictly closer to the secret than before "
        "the error (a guess outside the interval loses no ground but is no recovery), and "
        "the mean turns that took.  Step quality: the oracle-move rate on one shared set "
        "of reference states (the study's seed, so every regime and seed meets the same "
        "states); states with one legal move are left out.",
        "",
        *kit.table(header, rows),
        "",
    ]


def diagnostic_test_lines(cells: dict) -> list[str]:
    """Claim 2's family: each regime minus warm on recovery (T=12) and step quality, Holm."""
    return [
        f"### Claim 2: recovery against step quality, seed level (Holm over the {len(cells)} "
        "tests)",
        "",
        f"Per seed, each regime minus the warm start: recovery at T={PLAN.long} "
        "and step quality.  Bootstrap interval over seeds, paired sign-flip p, Holm over the "
        "family (added in v3 after the first 6-seed run, before these tests were computed).",
        "",
        *kit.family_table(cells),
        "",
    ]


def analyse(names: list[str], results: dict, references: dict, out: Path | None) -> tuple:
    """Return the markdown lines and the JSON summary of every figure but the training logs.

    Every figure is computed first, from the floors below (the kit's surfaces,
    ``compare``, :mod:`agent_envs.statistics`); the words are written after.
    """
    summary: dict[str, Any] = {
        key: {}
        for key in (
            "regimes",
            "references",
            "primary",
            "primary_tests",
            "other_primary_tests",
            "secondary",
            "diagnostics",
            "training",
        )
    }
    values = {name: [primary_values(r) for r in results[name]] for name in names}
    diagnostics = diagnostics_lines(names, results, references, summary)
    surfaces = surface_lines(names, results, references, out, summary)
    pairs = [(name, "warm") for name in names if name != "warm"]
    pairs += [("mix", other) for other in ("short", "long") if "mix" in names and other in names]
    compared, size = compare_family(pairs, results, family="secondary", ks=[1])
    intervals = {name: interval(values[name]) for name in names}
    families = {
        key: paired_family([t for t in tests if set(t) <= set(values)], values)
        for key, tests in (
            ("primary_tests", PRIMARY_TESTS),
            ("other_primary_tests", SECONDARY_PRIMARY_TESTS),
        )
    }
    seeds = len(results[names[0]])
    smallest = min_p_value(seeds, seeds, True)
    cells = summary["diagnostic_tests"] = diagnostic_family(results, "warm")
    markdown = primary_lines(values, intervals, families, smallest, summary)
    markdown += secondary_lines(compared, size, out, summary)
    markdown += surfaces + diagnostics + diagnostic_test_lines(cells)
    for name in names:  # every seed's whole result: EvalResult.from_dict rebuilds it
        summary["regimes"][name]["results"] = [r.to_dict() for r in results[name]]
    return markdown, summary
