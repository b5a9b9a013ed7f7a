"""Test a trained model against its base, cell by cell, paired over the held-out tasks.

Reads two ``agent-envs eval --out`` results on the same tasks and grid (the
trained model and the base model, same prompt and seeds) and prints, for every
(K, T) cell: the difference of Pass@(K,T), its paired bootstrap interval over
tasks (``agent_envs.evaluation.compare``), the two-sided paired sign-flip
p-value over tasks (``seed_stats.paired_permutation_test``, exact for up to 14
tasks) and its Holm-adjusted p-value over all the grid's cells
(``seed_stats.holm``).  With one training seed the task is the paired unit:
the p-values cover task sampling, not training variance.

    python benchmarks/real_llm_grpo_tests.py after.json before.json tests.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from agent_envs.evaluation import compare
from agent_envs.evaluation.result import EvalResult
from agent_envs.evaluation.seed_stats import holm, paired_permutation_test


def cell_tests(after: EvalResult, before: EvalResult) -> dict:
    """Return the grid, differences, intervals, raw and Holm p-values (JSON-ready)."""
    if after.task_ids != before.task_ids:
        raise ValueError("the two results must hold the same tasks in the same order")
    difference = compare(after, before)
    per_task = after.per_task_values() - before.per_task_values()  # (tasks, ks, budgets)
    p_values = paired_permutation_test(per_task, np.random.default_rng(0))
    return {
        "a": after.settings.agent_name,
        "b": before.settings.agent_name,
        "tasks": after.task_ids,
        "ks": list(after.settings.ks),
        "budgets": list(after.settings.budgets),
        "diff": difference.diff.tolist(),
        "ci_low": difference.ci_low.tolist(),
        "ci_high": difference.ci_high.tolist(),
        "test": "paired sign-flip permutation test over tasks (exact)",
        "p_value": p_values.tolist(),
        "holm_family_size": int(p_values.size),
        "p_holm": holm(p_values).tolist(),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: real_llm_grpo_tests.py AFTER_JSON BEFORE_JSON OUT_JSON", file=sys.stderr)
        return 2
    after, before = EvalResult.load(argv[0]), EvalResult.load(argv[1])
    tests = cell_tests(after, before)
    Path(argv[2]).write_text(json.dumps(tests, indent=1) + "\n")
    print("| K | " + " | ".join(f"T={t}" for t in tests["budgets"]) + " |")
    print("|---|" + "---|" * len(tests["budgets"]))
    for row, k in enumerate(tests["ks"]):
        cells = [
            f"{tests['diff'][row][col]:+.3f} [{tests['ci_low'][row][col]:+.2f}, "
            f"{tests['ci_high'][row][col]:+.2f}] p {tests['p_value'][row][col]:.3f}, "
            f"Holm {tests['p_holm'][row][col]:.3f}"
            for col in range(len(tests["budgets"]))
        ]
        print(f"| {k} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
