"""docs/results.md's figures that no study report prints recompute from the committed records.

The post-hoc statistics (the classic study's per-seed growth of the gain with
T and the real-model design's claim-2 statistic on the maze), the leak-free
GRPO run's declared tests without the two secrets the examples solve, and
the `--full` LLM study's per-seed warm-start calibration.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agent_envs.evaluation import EvalResult
from agent_envs.evaluation.seed_stats import paired_permutation_test

DOCS = Path(__file__).resolve().parents[1] / "docs"
RESULTS = (DOCS / "results.md").read_text()


def _classic(env: str) -> dict[str, list[EvalResult]]:
    record = json.loads((DOCS / "budgetmix" / "results.json").read_text())[f"agent_envs/{env}"]
    return {n: [EvalResult.from_dict(r) for r in rs] for n, rs in record["results"].items()}


def _sign_flip(values: np.ndarray) -> float:
    return float(paired_permutation_test(values, np.random.default_rng(0)))


@pytest.mark.parametrize(
    ("env", "figure"), [("FrozenLake-Slippery-v0", "+0.032"), ("Maze-5x5-v0", "+0.294")]
)
def test_the_post_hoc_growth_of_the_gain_with_t(env, figure):
    runs = _classic(env)
    per_seed = []
    for long_, warm in zip(runs["long"], runs["warm"], strict=True):
        gain = (long_.success_counts - warm.success_counts).mean(axis=0) / long_.samples
        per_seed.append(gain[-1] - gain[0])
    per_seed = np.array(per_seed)
    assert f"{per_seed.mean():+.3f}" == figure and figure in RESULTS
    assert (per_seed > 0).all() and _sign_flip(per_seed) == pytest.approx(2 / 2**10)


def test_the_post_hoc_claim_2_statistic_on_the_maze():
    runs = _classic("Maze-5x5-v0")

    def recovery(result):
        return result.diagnostics["error_recovery"][-1]["rate"]

    def quality(result):
        return result.diagnostics["step_quality"]["optimal_rate"]

    for name, figure in (("long", "+0.259"), ("long+pr", "+0.250")):
        per_seed = np.array(
            [
                (recovery(a) - recovery(w)) - (quality(a) - quality(w))
                for a, w in zip(runs[name], runs["warm"], strict=True)
            ]
        )
        assert f"{per_seed.mean():+.3f}" == figure and f"{name} {figure}" in RESULTS
        assert (per_seed > 0).all() and _sign_flip(per_seed) == pytest.approx(2 / 2**10)


def test_the_leak_free_run_without_the_secrets_its_examples_solve(monkeypatch):
    from studies.real_llm import grpo_tests

    run = DOCS / "real_llm" / "grpo-v2"
    after, before = EvalResult.load(run / "after.json"), EvalResult.load(run / "before.json")
    # secret 10 is task 10017, secret 18 task 10038 (agent_envs/GuessNumber-20-v0)
    monkeypatch.setattr(grpo_tests, "SUBSETS", {"without 10 and 18": (10017, 10038)})
    section = grpo_tests.analyse(after, before)["sets"]["without 10 and 18"]
    assert len(section["tasks"]) == 6
    for test, figure in zip(section["primary"].values(), ("+0.330", "+0.667"), strict=True):
        assert f"{test['diff']:+.3f}" == figure and figure in RESULTS
        assert test["p_value"] == pytest.approx(2 / 2**6) and test["p_holm"] == 0.0625


def test_the_full_runs_warm_starts_per_seed():
    data = json.loads((DOCS / "llm_budgetmix" / "full" / "results.json").read_text())
    warm = [EvalResult.from_dict(r) for r in data["regimes"]["warm"]["results"]]
    budgets = list(warm[0].budgets)
    pass1 = np.array([(r.success_counts / r.samples).mean(axis=0) for r in warm])
    at3, at12 = pass1[:, budgets.index(3)], pass1[:, budgets.index(12)]
    assert ", ".join(f"{v:g}" for v in at3) in " ".join(RESULTS.split())
    assert ", ".join(f"{v:g}" for v in at12) in " ".join(RESULTS.split())
    assert f"{at3.mean():.3f}" == "0.311" and int((at3 > 0.3).sum()) == 8
    assert f"{at12.mean():.3f}" == "0.658" and int((at12 > 0.7).sum()) == 2
