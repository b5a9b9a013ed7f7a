"""Test a trained model against its base, paired over the held-out tasks.

Reads two ``agent-envs eval --out`` results on the same tasks and grid (the
trained model and the base model, same prompt and seeds) and writes a JSON
with, for the whole task set and for every declared subset:

- **the primary family** (declared before the trained model was evaluated,
  Holm over its two tests):
  1. the mean over the T grid of the Pass@(1,T) gain;
  2. the gain at the longest T minus the gain at the shortest T (does the
     gain grow with the budget, the paper's first claim?);
- **every (K, T) cell**: the gain, its paired bootstrap interval over tasks,
  the two-sided paired sign-flip p-value over tasks and its Holm p over the
  grid's cells.

The unit is the held-out task (one training seed): the p-values cover task
sampling, not training variance.  With n tasks the exact sign-flip test
cannot go below ``2 / 2**n``, so over 24 cells Holm cannot go below
``48 / 2**n`` (0.19 at 8 tasks): the cell family is reported for its
intervals, and the primary family is where a test can decide.

    python -m studies.real_llm.grpo_tests after.json before.json tests.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation.result import EvalResult
from agent_envs.statistics.resampling import bootstrap_means, bootstrap_rng
from agent_envs.statistics.seed_tests import holm, paired_permutation_test

#: Resamples of the paired bootstrap over tasks.
N_BOOTSTRAP = 2000

#: Task subsets reported beside the whole set, declared before the run.
#: Secret 10 (task 10017) is every GuessNumber-20 example's first move, so the
#: prompt shows its answer whatever the examples are.
SUBSETS = {"without secret 10": (10017,)}


def _interval(per_task: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    draws = bootstrap_means(per_task, N_BOOTSTRAP, bootstrap_rng(seed))
    low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    return low, high


def _test(per_task: np.ndarray) -> dict[str, Any]:
    """Mean, interval, sign-flip p of per-task values (tasks, *shape)."""
    low, high = _interval(per_task, 0)
    return {
        "diff": per_task.mean(axis=0).tolist(),
        "ci_low": np.asarray(low).tolist(),
        "ci_high": np.asarray(high).tolist(),
        "p_value": paired_permutation_test(per_task, np.random.default_rng(0)).tolist(),
    }


def primary_family(per_task: np.ndarray, ks: list[int]) -> dict[str, Any]:
    """The two declared primary tests on per-task gains (tasks, ks, budgets), Holm over both."""
    pass1 = per_task[:, ks.index(1), :]
    tests = {
        "mean Pass@(1,T) over the T grid": _test(pass1.mean(axis=1)),
        "gain at the longest T minus at the shortest T": _test(pass1[:, -1] - pass1[:, 0]),
    }
    adjusted = holm(np.array([t["p_value"] for t in tests.values()]))
    for test, p in zip(tests.values(), adjusted, strict=True):
        test["p_holm"] = float(p)
    return tests


def cell_family(per_task: np.ndarray) -> dict[str, Any]:
    """Every (K, T) cell's gain, interval, sign-flip p and Holm p over the cells."""
    tests = _test(per_task)
    p_values = np.asarray(tests["p_value"])
    tests["holm_family_size"] = int(p_values.size)
    tests["p_holm"] = holm(p_values).tolist()
    return tests


def analyse(after: EvalResult, before: EvalResult) -> dict[str, Any]:
    """Return the whole analysis, JSON-ready."""
    if after.task_ids != before.task_ids:
        raise ValueError("the two results must hold the same tasks in the same order")
    if list(after.settings.ks) != list(before.settings.ks) or list(after.budgets) != list(
        before.budgets
    ):
        raise ValueError("the two results must share the K and T grids")
    ks = list(after.settings.ks)
    gains = after.per_task_values() - before.per_task_values()  # (tasks, ks, budgets)
    sets = {"all tasks": list(after.task_ids)}
    for name, left_out in SUBSETS.items():
        sets[name] = [t for t in after.task_ids if t not in left_out]
    analysis: dict[str, Any] = {
        "a": after.settings.agent_name,
        "b": before.settings.agent_name,
        "ks": ks,
        "budgets": list(after.budgets),
        "unit": "held-out task (paired); exact two-sided sign-flip test",
        "n_bootstrap": N_BOOTSTRAP,
        "sets": {},
    }
    for name, tasks in sets.items():
        rows = [after.task_ids.index(t) for t in tasks]
        analysis["sets"][name] = {
            "tasks": tasks,
            "primary": primary_family(gains[rows], ks),
            "cells": cell_family(gains[rows]),
        }
    return analysis


def _print(analysis: dict[str, Any]) -> None:
    for name, section in analysis["sets"].items():
        print(f"## {name} ({len(section['tasks'])} tasks)")
        for test, value in section["primary"].items():
            print(
                f"- {test}: {value['diff']:+.3f} [{value['ci_low']:+.3f}, {value['ci_high']:+.3f}]"
                f", p {value['p_value']:.3f}, Holm p {value['p_holm']:.3f}"
            )
        cells = section["cells"]
        print("| K | " + " | ".join(f"T={t}" for t in analysis["budgets"]) + " |")
        print("|---|" + "---|" * len(analysis["budgets"]))
        for row, k in enumerate(analysis["ks"]):
            line = [
                f"{cells['diff'][row][c]:+.3f} [{cells['ci_low'][row][c]:+.2f}, "
                f"{cells['ci_high'][row][c]:+.2f}] p {cells['p_value'][row][c]:.3f}, "
                f"Holm {cells['p_holm'][row][c]:.2f}"
                for c in range(len(analysis["budgets"]))
            ]
            print(f"| {k} | " + " | ".join(line) + " |")


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m studies.real_llm.grpo_tests AFTER BEFORE OUT", file=sys.stderr)
        return 2
    after, before = EvalResult.load(argv[0]), EvalResult.load(argv[1])
    analysis = analyse(after, before)
    Path(argv[2]).write_text(json.dumps(analysis, indent=1) + "\n")
    _print(analysis)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
