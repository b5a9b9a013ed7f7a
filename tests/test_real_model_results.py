"""The real-model study's committed results recompute from its committed runs.

The study's runner writes ``docs/real_model_study/results.json`` once all of
its runs have finished.  The tests below check it against each run's own
``job.json``.  They rebuild the three primary tests without the report code:
the statistics come from the per-task success counts and the diagnostics,
each p-value from every sign pattern over the seeds, and Holm by hand.  Then
they check that the report code, run again, writes every other figure exactly
as committed.  The study finished, so a missing ``results.json`` fails here
rather than skipping every test.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from agent_envs.evaluation import EvalResult

STUDY = Path(__file__).resolve().parents[1] / "docs" / "real_model_study"
RESULTS = STUDY / "results.json"
REGIMES = ("base", "short", "long", "mix")
MOVE_KINDS = ("invalid", "repeat", "bisect", "step", "other")


@pytest.fixture(scope="module")
def study():
    record = json.loads(RESULTS.read_text())
    jobs = [json.loads(path.read_text()) for path in sorted(STUDY.glob("runs/*/job.json"))]
    runs = {
        name: [EvalResult.from_dict(result) for result in results]
        for name, results in record["results"].items()
    }
    return record, jobs, runs


def sign_flip_p(per_seed: list[float]) -> float:
    """Two-sided exact sign-flip p of the mean over seeds: every sign pattern, enumerated."""
    values = np.asarray(per_seed, dtype=float)
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(values))))
    flipped = np.abs(signs @ values) / len(values)
    return float(np.mean(flipped >= abs(values.mean()) - 1e-12))


def holm_by_hand(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    adjusted, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def pass1(result: EvalResult) -> np.ndarray:
    return result.success_counts / result.samples


def recovery(result: EvalResult) -> float:
    """Recovered over recoverable errors at the largest T, as the evaluator recorded it."""
    return result.diagnostics["error_recovery"][-1]["rate"]


def test_the_study_is_whole_eight_seeds_a_regime_on_smollm2_from_the_committed_runs(study):
    record, jobs, runs = study
    assert set(runs) == set(REGIMES) and all(len(results) == 8 for results in runs.values())
    assert "smollm2" in record["settings"]["base_model"].lower()
    committed = {(job["regime"], job["seed"]): job["result"] for job in jobs}
    for name, results in record["results"].items():
        for seed, result in enumerate(results):
            assert result == committed[(name, seed)], (name, seed)


def primary_statistics(runs: dict[str, list[EvalResult]]) -> list[list[list[float]]]:
    """Per primary test, per statistic: one value per seed (the mean over tasks)."""
    seeds = range(8)
    gain = [pass1(runs["long"][s]) - pass1(runs["base"][s]) for s in seeds]
    claim_1 = [float(np.mean(g[:, -1] - g[:, 0])) for g in gain]
    claim_2 = [
        (recovery(runs["long"][s]) - recovery(runs["base"][s]))
        - (
            runs["long"][s].diagnostics["step_quality"]["optimal_rate"]
            - runs["base"][s].diagnostics["step_quality"]["optimal_rate"]
        )
        for s in seeds
    ]
    worst = int(np.argmin(np.mean([pass1(r).mean(axis=0) for r in runs["long"]], axis=0)))
    mix_minus_long = [pass1(runs["mix"][s]) - pass1(runs["long"][s]) for s in seeds]
    claim_3_mean = [float(d.mean()) for d in mix_minus_long]
    claim_3_worst = [float(d[:, worst].mean()) for d in mix_minus_long]
    return [[claim_1], [claim_2], [claim_3_mean, claim_3_worst]]


def test_the_three_primary_tests_recompute_without_the_report_code(study):
    record, _, runs = study
    cells = list(record["primary_tests"].values())
    assert len(cells) == 3
    p = []
    for cell, statistics in zip(cells, primary_statistics(runs), strict=True):
        assert cell["seeds"] == 8 and len(cell["parts"]) == len(statistics)
        for part, per_seed in zip(cell["parts"], statistics, strict=True):
            assert part["diff"] == pytest.approx(np.mean(per_seed), abs=1e-12)
            assert part["p"] == pytest.approx(sign_flip_p(per_seed), abs=1e-12)
        # An intersection-union test: both statistics must hold, so its p is the larger.
        p.append(max(sign_flip_p(per_seed) for per_seed in statistics))
    for cell, q in zip(cells, holm_by_hand(p), strict=True):
        assert cell["holm_p"] == pytest.approx(q, abs=1e-12)
        smallest = min(part["diff"] for part in cell["parts"])
        expected = ("passes" if smallest > 0 else "reverses") if q <= 0.05 else "fails"
        assert cell["test"] == expected


def test_every_other_figure_recomputes_exactly_through_the_report_code(study):
    from studies.real_model.report import analyse, move_table
    from studies.report import jsonable

    record, jobs, runs = study
    _, again = analyse(runs, None)
    again = json.loads(json.dumps(jsonable(again)))
    keys = ["surfaces", "primary_tests", "compare_with_base", "diagnostic_tests", "diagnostics"]
    for key in keys:
        assert again[key] == record[key], key
    assert json.loads(json.dumps(move_table(jobs))) == record["moves"]


def test_the_move_shares_are_each_regimes_mean_over_its_seeds(study):
    record, jobs, _ = study
    for name in REGIMES:
        mixes = [job["moves"] for job in jobs if job["regime"] == name]
        assert len(mixes) == 8
        for kind in MOVE_KINDS:
            assert record["moves"][name][kind] == pytest.approx(np.mean([m[kind] for m in mixes]))
        assert sum(record["moves"][name][kind] for kind in MOVE_KINDS) == pytest.approx(1.0)


def test_the_pass_at_1_surface_is_the_mean_over_seeds_and_tasks(study):
    record, _, runs = study
    for name, results in runs.items():
        row = results[0].ks.index(1)
        mean = np.mean([pass1(result).mean(axis=0) for result in results], axis=0)
        assert np.allclose(record["surfaces"][name]["mean"][row], mean), name
