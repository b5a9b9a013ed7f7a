"""docs/results.md's figures that no study report prints recompute from the committed records.

The post-hoc statistics (the classic study's per-seed growth of the gain with
T and the real-model design's claim-2 statistic on the maze), the leak-free
GRPO run's declared tests without the two secrets the examples solve, the
`--full` LLM study's per-seed warm-start calibration, and the real-model
study's post-hoc readings (the room below the oracle, what recovery tracks,
which runs did not learn).
"""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from agent_envs.evaluation import EvalResult
from agent_envs.statistics import paired_permutation_test

DOCS = Path(__file__).resolve().parents[1] / "docs"
RESULTS = (DOCS / "results.md").read_text()
REAL_MODEL = DOCS / "real_model_study"
# The study's own page, whitespace folded so that a figure may wrap.
REAL_MODEL_PAGE = " ".join((REAL_MODEL / "README.md").read_text().split())


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


def _real_model_runs() -> tuple[dict, list[dict]]:
    record = json.loads((REAL_MODEL / "results.json").read_text())
    jobs = [json.loads(path.read_text()) for path in sorted(REAL_MODEL.glob("runs/*/job.json"))]
    assert len(jobs) == 32
    return record, jobs


def _pass_at_1_last_t(job: dict) -> float:
    settings = job["result"]["settings"]
    return job["result"]["surface"][settings["ks"].index(1)][-1]


def test_the_real_model_gain_as_a_share_of_the_room_below_the_oracle():
    record, _ = _real_model_runs()
    settings = record["results"]["base"][0]["settings"]
    env = gym.make(settings["env_name"]).unwrapped
    turns = []
    for task in settings["tasks"]:
        env.reset(seed=0, options={"task_id": task})
        turns.append(env.oracle_turns())
    # The oracle bisects, so it solves a task within T exactly when its turns fit.
    oracle = np.array([np.mean([t <= budget for t in turns]) for budget in settings["budgets"]])
    assert oracle.tolist() == [2 / 16, 14 / 16, 1.0, 1.0]
    base, long_ = (np.array(record["surfaces"][name]["mean"][0]) for name in ("base", "long"))
    share = " / ".join(f"{x:.2f}" for x in (long_ - base) / (oracle - base))
    assert share == "0.45 / 0.24 / 0.25 / 0.39"
    assert f"is {share} at T = 2 / 5 / 8 / 12" in " ".join(RESULTS.split())
    assert "0.45, 0.24, 0.25 and 0.39 at T = 2, 5, 8 and 12" in REAL_MODEL_PAGE


def test_the_real_model_recovery_and_success_track_the_invalid_share():
    _, jobs = _real_model_runs()
    invalid = [job["moves"]["invalid"] for job in jobs]
    recovery = [job["result"]["diagnostics"]["error_recovery"][-1]["rate"] for job in jobs]
    r_recovery = np.corrcoef(recovery, invalid)[0, 1]
    r_success = np.corrcoef([_pass_at_1_last_t(job) for job in jobs], invalid)[0, 1]
    assert (round(r_recovery, 2), round(r_success, 2)) == (-0.89, -0.94)
    assert "(r = -0.89)" in RESULTS
    assert "(Pearson r = -0.89), and so does Pass@(1,12) (r = -0.94)" in REAL_MODEL_PAGE


def test_the_real_model_runs_that_did_not_learn():
    _, jobs = _real_model_runs()
    trained = [job for job in jobs if job["regime"] != "base"]
    stuck = [job for job in trained if job["moves"]["invalid"] > 0.4]
    assert sorted((job["regime"], job["seed"]) for job in stuck) == [
        ("mix", 6),
        ("short", 1),
        ("short", 4),
        ("short", 7),
    ]
    shares = [job["moves"]["invalid"] for job in stuck]
    assert f"{min(shares):.0%}-{max(shares):.0%}" == "47%-58%"
    passes = [_pass_at_1_last_t(job) for job in stuck]
    long_ = [_pass_at_1_last_t(job) for job in jobs if job["regime"] == "long"]
    figure = f"{min(passes):.2f}-{max(passes):.2f} against long's {min(long_):.2f}-{max(long_):.2f}"
    assert figure == "0.16-0.35 against long's 0.48-0.60"
    assert f"47-58% invalid moves, as the base model has, and their Pass@(1,12) is {figure}" in (
        REAL_MODEL_PAGE
    )
    # Short's groups without reward variance: mean over each run's GRPO steps.
    short = [
        np.mean([s["zero_std"] for s in j["train_log"]]) for j in trained if j["regime"] == "short"
    ]
    assert f"{min(short):.0%}-{max(short):.0%}" == "70%-88%"
    assert "70-88% of its training groups had no reward variance" in REAL_MODEL_PAGE


def _pass_at_k(job: dict, k: int, column: int) -> float:
    """A run's Pass@(k,T) at one budget column, read off its committed surface."""
    settings = job["result"]["settings"]
    return job["result"]["surface"][settings["ks"].index(k)][column]


def test_the_real_model_k8_surfaces_short_beats_long_and_long_falls_below_base_at_t2():
    _, jobs = _real_model_runs()
    by_regime: dict[str, list[dict]] = {}
    for job in sorted(jobs, key=lambda job: job["seed"]):
        by_regime.setdefault(job["regime"], []).append(job)

    def mean(regime: str, column: int) -> float:
        return float(np.mean([_pass_at_k(job, 8, column) for job in by_regime[regime]]))

    figures = [
        f"{mean(r, c):.3f}" for r, c in (("short", 0), ("long", 0), ("short", 3), ("long", 3))
    ]
    assert figures == ["0.203", "0.109", "0.680", "0.625"]
    assert "Pass@(8,2) 0.203 against 0.109 and Pass@(8,12) 0.680 against 0.625" in REAL_MODEL_PAGE
    assert "Pass@(8,2) 0.203 against 0.109, Pass@(8,12) 0.680 against 0.625" in " ".join(
        RESULTS.split()
    )
    base = [_pass_at_k(job, 8, 0) for job in by_regime["base"]]
    long_ = [_pass_at_k(job, 8, 0) for job in by_regime["long"]]
    lower = sum(a < b for a, b in zip(long_, base, strict=True))
    equal = sum(a == b for a, b in zip(long_, base, strict=True))
    assert (f"{np.mean(long_):.3f}", f"{np.mean(base):.3f}", lower, equal) == (
        "0.109",
        "0.219",
        7,
        1,
    )
    assert "0.109 against 0.219, lower in 7 of the 8 seeds and equal in one" in REAL_MODEL_PAGE
