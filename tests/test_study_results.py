"""The committed studies recompute from their own files: every interval, every Holm p."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agent_envs.evaluation import EvalResult
from agent_envs.statistics import (
    bootstrap_rng,
    hierarchical_bootstrap,
    holm,
    paired_seed_differences,
    seed_interval,
    seed_paired_test,
    task_sampler,
)

DOCS = Path(__file__).resolve().parents[1] / "docs"
STUDY = DOCS / "llm_budgetmix" / "results.json"
CLASSIC = DOCS / "budgetmix" / "results.json"


@pytest.fixture(scope="module", params=["default", "full"])
def study(request):
    path = STUDY if request.param == "default" else STUDY.parent / "full" / "results.json"
    data = json.loads(path.read_text())
    if "envs" in data:  # v2 kept one section per env
        data = next(iter(data["envs"].values()))
    runs = {
        name: [EvalResult.from_dict(result) for result in regime["results"]]
        for name, regime in data["regimes"].items()
    }
    return data, runs


def test_every_regime_interval_recomputes_from_the_per_seed_per_task_counts(study):
    data, runs = study
    for name, results in runs.items():
        # The per-task success counts of every seed are there: that is all it takes.
        assert all(r.success_counts.shape == (len(r.task_ids), len(r.budgets)) for r in results)
        values = [r.per_task_values() for r in results]
        draws = hierarchical_bootstrap([task_sampler(v) for v in values], 2000, bootstrap_rng(0))
        low, high = np.percentile(draws, [2.5, 97.5], axis=0)
        mean = np.mean([v.mean(axis=0) for v in values], axis=0)
        stored = data["regimes"][name]
        assert np.allclose(mean, stored["mean"]), name
        assert np.allclose(low, stored["low"]) and np.allclose(high, stored["high"]), name


def test_the_primary_metric_its_interval_and_its_holm_p_values_recompute(study):
    data, runs = study
    values = {
        name: [(r.success_counts / r.samples).mean(axis=1) for r in results]
        for name, results in runs.items()
    }
    for name, stored in data["primary"].items():
        mean, low, high = seed_interval(values[name], bootstrap_rng(0))
        assert (mean, low, high) == pytest.approx((stored["mean"], stored["low"], stored["high"]))
    for family in ("primary_tests", "other_primary_tests"):
        tests = data[family]
        pairs = [[values[name] for name in key.split(" - ")] for key in tests]
        raw = [seed_paired_test(a, b, bootstrap_rng(1)) for a, b in pairs]
        assert raw == pytest.approx([cell["p"] for cell in tests.values()])
        assert holm(np.array(raw)).tolist() == pytest.approx([c["holm_p"] for c in tests.values()])
        for (a, b), cell in zip(pairs, tests.values(), strict=True):
            paired = [x - y for x, y in zip(a, b, strict=True)]
            interval = seed_interval(paired, bootstrap_rng(0))
            assert interval == pytest.approx((cell["diff"], cell["low"], cell["high"]))


# ------------------------------------------------------------ the classic study
@pytest.fixture(scope="module", params=["FrozenLake-Slippery-v0", "Maze-5x5-v0"])
def classic(request):
    record = json.loads(CLASSIC.read_text())[f"agent_envs/{request.param}"]
    runs = {
        name: [EvalResult.from_dict(result) for result in results]
        for name, results in record["results"].items()
    }
    return record, runs


def worst_case(result, shortest):
    """The classic primary metric per task: the lowest Pass@(1,T) over T >= its shortest path."""
    allowed = np.asarray(result.budgets)[None, :] >= np.asarray(shortest)[:, None]
    return np.where(allowed, result.success_counts / result.samples, np.inf).min(axis=1)


def test_the_classic_primary_metric_its_tests_and_holm_recompute(classic):
    record, runs = classic
    values = {name: [worst_case(r, record["shortest"]) for r in rs] for name, rs in runs.items()}
    for name, series in values.items():
        stored = record["primary"][name]
        interval = seed_interval(series, bootstrap_rng(0))
        assert interval == pytest.approx((stored["mean"], stored["low"], stored["high"]))
    pairs = sorted({tuple(sorted(key.split(" vs "))) for key in record["p_values"]})
    raw = [seed_paired_test(values[a], values[b], bootstrap_rng(1)) for a, b in pairs]
    assert raw == pytest.approx([record["p_values"][f"{a} vs {b}"] for a, b in pairs])
    adjusted = [record["holm_p_values"][f"{a} vs {b}"] for a, b in pairs]
    assert holm(np.array(raw)).tolist() == pytest.approx(adjusted)


def test_the_classic_surface_and_secondary_holm_recompute(classic):
    record, runs = classic
    for name, results in runs.items():
        for j, (mean, low, high) in enumerate(record["surface"][name]):
            cells = [r.success_counts[:, j] / r.samples for r in results]
            assert seed_interval(cells, bootstrap_rng(0)) == pytest.approx((mean, low, high))
    # The secondary family: every Pass@(1,T) cell of every regime's comparison with warm.
    compared = record["compare_with_warm"].values()
    raw = np.concatenate([c["p_value"][c["ks"].index(1)] for c in compared])
    adjusted = np.concatenate([c["p_adjusted"][c["ks"].index(1)] for c in compared])
    assert holm(raw).tolist() == pytest.approx(adjusted.tolist())


def assert_claim_2_recomputes(stored, runs):
    """Recompute a committed claim-2 family from its per-seed diagnostics alone."""
    read = {
        "recovery": lambda d: d["error_recovery"][-1]["rate"],
        "step quality": lambda d: d["step_quality"]["optimal_rate"],
    }
    comparisons = {}
    for key in stored:
        name, measure = key.split(" - warm: ")
        comparisons[key] = tuple(
            [read[measure](r.diagnostics) for r in runs[side]] for side in (name, "warm")
        )
    cells = paired_seed_differences(comparisons, lambda: bootstrap_rng(0), lambda: bootstrap_rng(1))
    assert cells.keys() == stored.keys() and len(cells) == 8
    for key, cell in cells.items():
        assert cell == pytest.approx(stored[key]), key


def test_the_classic_diagnostic_family_recomputes(classic):
    record, runs = classic
    assert_claim_2_recomputes(record["diagnostic_tests"], runs)


def test_the_llm_studys_claim_2_family_recomputes():
    """The --full run's family (the 6-seed default run predates it)."""
    data = json.loads((STUDY.parent / "full" / "results.json").read_text())
    runs = {
        name: [EvalResult.from_dict(result) for result in regime["results"]]
        for name, regime in data["regimes"].items()
    }
    assert_claim_2_recomputes(data["diagnostic_tests"], runs)
