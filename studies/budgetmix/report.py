"""The classic BudgetMix study's report: ``results.md`` and ``results.json`` from its runs.

Every figure is recomputed from the per-seed results, so
:func:`analyse_env` applied to a committed ``results.json``'s own results
gives its figures back (``tests/test_studies.py``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation import EvalResult
from agent_envs.evaluation.compare import compare_family
from agent_envs.files import atomic_write_text
from agent_envs.statistics.families import diagnostic_family, interval, paired_p
from agent_envs.statistics.seed_tests import holm
from studies import report as kit
from studies.budgetmix.design import (
    ALGO,
    GREEDY,
    PLANS,
    PROCESS_REWARD_COEF,
    REGIMES,
    TRAIN_FIRST,
    EnvPlan,
    grid_of,
)


def worst_case(result: Any, shortest: list[int]) -> np.ndarray:
    """Per task: the lowest Pass@(1,T) over the grid's T at or above its shortest path."""
    values = result.success_counts / result.samples  # Pass@1 estimate per (task, T)
    allowed = np.asarray(result.budgets)[None, :] >= np.asarray(shortest)[:, None]
    return np.where(allowed, values, np.inf).min(axis=1)


def analyse_env(
    env_id: str, runs: dict[str, list], shortest: list[int], references: dict, plots: Path | None
) -> tuple[list[str], dict[str, Any]]:
    """Return the markdown lines and the JSON record of one env (``runs``: regime -> seeds).

    Every figure is computed first, from the floors below (``compare``,
    :mod:`agent_envs.statistics`); the words are written after.
    """
    worst = {name: [worst_case(r, shortest) for r in results] for name, results in runs.items()}
    bar: dict[str, Any] = {}
    bar_text = bar_lines(runs, references, PLANS[env_id], bar)
    reference = {name: worst_case(result, shortest).mean() for name, result in references.items()}
    figures = _figures(runs, worst, list(next(iter(references.values())).budgets))
    record: dict[str, Any] = {"primary": {}, "surface": {}, "diagnostics": {}, "p_values": {}}
    lines = primary_lines(env_id, worst, reference, figures["primary"], record)
    record["results"] = {n: [r.to_dict() for r in results] for n, results in runs.items()}
    lines += primary_test_lines(worst, figures, record)
    lines += surface_lines(figures["surface"], references, record)
    record.update(bar)
    compared: dict[str, Any] = {}  # the record's last entry, after the diagnostic tests
    differences = difference_lines(env_id, figures, plots, compared)
    tests = diagnostic_test_lines(runs, figures["diagnostic_tests"], record)
    lines += bar_text + kit.diagnostics_table(runs, record["diagnostics"]) + tests
    record.update(compared)
    return lines + differences, record


def _figures(runs: dict[str, list], worst: dict[str, list[np.ndarray]], grid: list) -> dict:
    """One env's figures from the floors below: the compares, the intervals, every test."""
    pairs = [
        (name, "warm")
        for name, results in runs.items()
        if name != "warm" and "warm" in runs and len(results) == len(runs["warm"])
    ]
    compared, size = compare_family(pairs, runs, family="secondary", ks=[1]) if pairs else ({}, 0)
    names = list(worst)
    p_values = {
        f"{a} vs {b}": paired_p(worst[a], worst[b])
        for a in names
        for b in names
        if a != b and len(worst[a]) == len(worst[b])
    }
    tested = sorted({tuple(sorted(key.split(" vs "))) for key in p_values})
    raw = np.array([p_values[f"{a} vs {b}"] for a, b in tested])
    adjusted = holm(raw) if raw.size else raw
    return {
        "pairs": pairs,
        "compared": compared,
        "size": size,
        "primary": {name: interval(values) for name, values in worst.items()},
        "p_values": p_values,
        "holm_p": {f"{a} vs {b}": float(q) for (a, b), q in zip(tested, adjusted, strict=True)},
        "surface": {
            name: [
                interval([r.success_counts[:, j] / r.samples for r in results])
                for j in range(len(grid))
            ]
            for name, results in runs.items()
        },
        "diagnostic_tests": diagnostic_family(runs, "warm") if "warm" in runs else None,
    }


def primary_lines(
    env_id: str, worst: dict, reference: dict, primary: dict, record: dict
) -> list[str]:
    """The primary metric per regime (mean over seeds, interval) and per reference agent."""
    lines = [
        f"### {env_id}",
        "",
        "**Primary metric**: worst-case Pass@(1,T) over T >= each "
        "task's shortest path (mean over tasks; mean over seeds, 95% hierarchical bootstrap "
        "interval).",
        "",
        "| regime | seeds | primary metric | per seed |",
        "|---|---|---|---|",
    ]
    for name, values in worst.items():
        mean, low, high = primary[name]
        record["primary"][name] = {
            "mean": mean,
            "low": low,
            "high": high,
            "per_seed": [float(v.mean()) for v in values],
        }
        per_seed = ", ".join(f"{v.mean():.2f}" for v in values)
        lines.append(
            f"| {name} | {len(values)} | {mean:.3f} [{low:.3f}, {high:.3f}] | {per_seed} |"
        )
    for name, value in reference.items():
        record["primary"][name] = {"mean": float(value)}
        lines.append(f"| {name} (reference) | - | {value:.3f} | - |")
    return lines


def primary_test_lines(
    worst: dict[str, list[np.ndarray]], figures: dict, record: dict
) -> list[str]:
    """Every pairwise paired test of the primary metric: one family, Holm-corrected."""
    names = list(worst)
    lines = [
        "",
        "Paired sign-flip test over seeds (two-sided p, then Holm over the family of "
        "every pair) of the primary metric:",
        "",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for a in names:
        cells = []
        for b in names:
            if a == b or len(worst[a]) != len(worst[b]):
                cells.append("-")
                continue
            p = record["p_values"][f"{a} vs {b}"] = figures["p_values"][f"{a} vs {b}"]
            higher = np.mean([x.mean() for x in worst[a]]) > np.mean([x.mean() for x in worst[b]])
            cells.append(f"{'+' if higher else '-'} p={p:.3f}")
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    holm_p = record["holm_p_values"] = figures["holm_p"]
    smallest = ", ".join(f"{k} {q:.3f}" for k, q in sorted(holm_p.items(), key=lambda x: x[1])[:3])
    return [
        *lines,
        "",
        "(`+`: the row's regime scores higher than the column's.)  Holm over the "
        f"{len(holm_p)} pairs: smallest adjusted p {smallest}.",
        "",
    ]


def surface_lines(surface: dict, references: dict, record: dict) -> list[str]:
    """Secondary: the Pass@(1,T) surface per regime, mean over seeds with seed-level intervals."""
    grid = list(next(iter(references.values())).budgets)
    lines = [
        "Secondary: Pass@(1,T) on the held-out tasks (mean over seeds, 95% hierarchical "
        "bootstrap interval):",
        "",
        "| regime | " + " | ".join(f"T={t}" for t in grid) + " |",
        "|---|" + "---|" * len(grid),
    ]
    for name, row in surface.items():
        record["surface"][name] = [list(cell) for cell in row]
        lines.append(
            f"| {name} | " + " | ".join(f"{m:.2f} [{lo:.2f}, {hi:.2f}]" for m, lo, hi in row) + " |"
        )
    for name, result in references.items():
        values = (result.success_counts / result.samples).mean(axis=0)
        record["surface"][name] = values.tolist()
        lines.append(f"| {name} | " + " | ".join(f"{v:.2f}" for v in values) + " |")
    return [*lines, ""]


def bar_lines(runs: dict, references: dict, plan: EnvPlan, record: dict) -> list[str]:
    """The long regime at its own T against the oracle: the 80%-of-oracle bar."""
    if "long" not in runs or "oracle" not in references:
        return []
    j = list(references["oracle"].budgets).index(plan.long)
    learned = float(np.mean([r.success_counts[:, j].mean() / r.samples for r in runs["long"]]))
    oracle = float(references["oracle"].success_counts[:, j].mean() / references["oracle"].samples)
    ratio = learned / oracle if oracle else float("nan")
    record["bar"] = {"long": learned, "oracle": oracle, "ratio": ratio}
    verdict = "meets" if ratio >= 0.8 else "does NOT meet"
    return [
        f"**The 80%-of-oracle bar** (long regime at its own T={plan.long}, held-out tasks): "
        f"{learned:.3f} against the oracle's {oracle:.3f}, ratio {ratio:.2f}: {verdict} "
        "the bar.",
        "",
    ]


def diagnostic_test_lines(runs: dict, cells: dict | None, record: dict) -> list[str]:
    """Claim 2's family: every regime minus warm on recovery and on step quality, Holm over it."""
    if cells is None:
        return []
    record["diagnostic_tests"] = cells
    excluded = {
        (r.diagnostics or {}).get("step_quality", {}).get("single_move_states_excluded")
        for r in runs["warm"]
    }
    return [
        f"Claim 2's family (added after the runs, before its tests were computed; not "
        f"pre-registered): each regime minus the warm start on recovery (largest T) and on "
        f"step quality, per seed; seed-level bootstrap interval, paired sign-flip p, Holm "
        f"over the {len(cells)} tests:",
        "",
        *kit.family_table(cells),
        "",
        f"Reference states with one legal move, left out: {sorted(excluded)}.",
        "",
    ]


def difference_lines(env_id: str, figures: dict, out: Path | None, record: dict) -> list[str]:
    """Seed-level ``compare`` of each regime against the warm start; plots and a summary."""
    compared = figures["compared"]
    if not compared:
        return []
    lines = [
        "Seed-level comparison with the warm start (`agent_envs.evaluation.compare` on the "
        "per-seed results: hierarchical bootstrap, paired permutation test), cells of "
        "Pass@(1,T) where the regime differs significantly (Holm over the family of all "
        f"{figures['size']} cells):",
        "",
    ]
    for (name, _), difference in zip(figures["pairs"], compared.values(), strict=True):
        saved = record.setdefault("compare_with_warm", {})[name] = difference.to_dict()
        marked = [
            f"T={t}: {w}" for t, w in zip(saved["budgets"], saved["wins"][0], strict=True) if w
        ]
        lines.append(f"- {name} - warm: " + (", ".join(marked) if marked else "no cell"))
        if out is not None:
            difference.plot(out / f"{env_id.split('/')[-1]}-{name}-minus-warm.png")
    return [*lines, "", "(A: the regime is higher; B: the warm start is higher.)", ""]


def training_lines(env_id: str, summaries: list[dict]) -> list[str]:
    """Training time and training success per regime."""
    rows = []
    for regime in REGIMES:
        done = [s for s in summaries if s["env_id"] == env_id and s["regime"] == regime]
        if done:
            rates = ", ".join(str(s["train_success_rate"]) for s in done)
            rows.append((regime, f"{np.mean([s['train_seconds'] for s in done]):.0f}", rates))
    header = ["regime", "train s (mean)", "training success, last 100 episodes (per seed)"]
    return [*kit.table(header, rows), ""]


def runs_of(env_id: str, summaries: list[dict]) -> dict[str, list[EvalResult]]:
    """Return regime -> the per-seed results (seed order) of one env's finished jobs."""
    runs: dict[str, list[Any]] = {}
    for regime in REGIMES:
        rows = sorted(
            (s for s in summaries if s["env_id"] == env_id and s["regime"] == regime),
            key=lambda s: s["seed"],
        )
        if rows:
            runs[regime] = [EvalResult.load(Path(s["folder"]) / "result.json") for s in rows]
    return runs


def env_section(env_id: str, chosen: tuple, summaries: list, size: dict, args: Any) -> tuple:
    """Return one env's markdown lines and record: references, analysis and training."""
    from baselines.simple_agents import OracleAgent, RandomAgent

    (tasks, shortest), plan = chosen, PLANS[env_id]
    runs, training = runs_of(env_id, summaries), training_lines(env_id, summaries)
    # Visible: each T is its own episode, so the oracle plans for that T.
    references = kit.reference_results(
        {"oracle": OracleAgent(), "random": RandomAgent()},
        env_id,
        ks=[1],
        budgets=list(grid_of(env_id, shortest)),
        tasks=tasks,
        samples=size["oracle_samples"],
        seed=0,
        diagnostics=False,
        visible_budget=True,
    )
    plots = None if args.no_plots else args.out
    lines, record = analyse_env(env_id, runs, shortest, references, plots)
    intro = [
        f"Held-out tasks: {len(tasks)} ids below {TRAIN_FIRST} (first {tasks[:5]}...), "
        + (
            "chosen so that the oracle's best first move changes with T; "
            if plan.budget_sensitive
            else ""
        )
        + f"shortest paths {min(shortest)}..{max(shortest)}.  Budgets: short "
        f"T={max(shortest)}, long T={plan.long}, BudgetMix {list(plan.mix)}, warm start on "
        f"BudgetMix {list(plan.mix)}; ProcessReward coef {PROCESS_REWARD_COEF}.  Training: "
        + (plan.describe() if not args.quick else "quick sizes")
        + f"; encoding {plan.encoding}.",
        "",
    ]
    record = {
        "tasks": tasks,
        "shortest": shortest,
        **record,
        "references": {n: r.to_dict() for n, r in references.items()},
    }
    return lines[:2] + intro + lines[2:] + training, record


def write(args: Any, chosen: dict, summaries: list, size: dict, run: dict) -> None:
    """Write ``results.md`` and ``results.json`` into ``args.out``."""
    lines: list[str] = []
    everything: dict[str, Any] = {}
    args.out.mkdir(parents=True, exist_ok=True)
    for env_id in args.envs:
        env_lines, everything[env_id] = env_section(env_id, chosen[env_id], summaries, size, args)
        lines += env_lines
    wall, load = time.perf_counter() - run["started"], run["load"]
    header = [
        "# BudgetMix study v3: results",
        "",
        "**Primary metric (declared before the runs):** the worst-case Pass@(1,T) over the "
        "T grid, restricted per task to T at or above that task's shortest path, averaged over "
        "the held-out tasks.  Unit of replication: the training seed (hierarchical bootstrap "
        "over seeds then tasks; paired sign-flip test over seeds).  Everything else is "
        "secondary.",
        "",
        f"Command: `{run['command'].strip()}`",
        "",
        f"{len(summaries)} runs ({len(args.envs)} env(s) x {len(REGIMES)} regimes x "
        f"{size['seeds']} seeds): {ALGO} (warm start and fine-tuning per env below); turns left "
        f"in the observation, truncation terminal; fresh training task every episode (ids >= "
        f"{TRAIN_FIRST}); evaluation {size['held_out']} held-out tasks x {size['samples']} "
        f"attempts per T, acting {'greedily' if GREEDY else 'by sampling'} (oracle and random: "
        f"{size['oracle_samples']} attempts).",
        f"Wall time {wall / 60:.1f} min {kit.ran_on(args.backend, args.workers)}, one torch "
        f"each; load average at start {tuple(round(x, 2) for x in load)}, at end "
        f"{tuple(round(x, 2) for x in os.getloadavg())} on {os.cpu_count()} CPUs shared with "
        "other jobs.",
        "",
    ]
    reused = sum(summary["reused"] for summary in summaries)
    if reused:
        header.insert(
            -1,
            f"{reused} of {len(summaries)} runs were reused from {args.work}, so "
            "this wall time does not cover them.",
        )
    atomic_write_text(args.out / "results.json", json.dumps(everything, indent=1) + "\n")
    atomic_write_text(args.out / "results.md", "\n".join(header + lines) + "\n")
    print("\n".join(header + lines))
