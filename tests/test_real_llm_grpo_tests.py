"""The declared before/after analysis of a SmolLM2 GRPO run, and the runs it recomputes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agent_envs.evaluation import EvalResult
from studies.real_llm.grpo_tests import analyse, main

GRPO = Path(__file__).resolve().parents[1] / "docs" / "real_llm" / "grpo"


def _load(name: str) -> EvalResult:
    return EvalResult.load(GRPO / name)


def test_the_first_run_gives_the_audits_holm_p_at_t12_back():
    # The audit: over 10 tasks and 24 cells, only (K=1, T=12) survives Holm, p 0.047.
    cells = analyse(_load("after-tgrid.json"), _load("before-tgrid.json"))["sets"]["all tasks"]
    p_holm = np.array(cells["cells"]["p_holm"])
    assert p_holm[0, -1] == pytest.approx(24 * 2 / 2**10)
    assert (np.delete(p_holm.ravel(), 5) > 0.05).all()


def test_a_model_against_itself_gains_nothing_and_no_test_rejects():
    before = _load("before-tgrid.json")
    for section in analyse(before, before)["sets"].values():
        cells = section["cells"]
        assert np.allclose(cells["diff"], 0) and np.allclose(cells["p_value"], 1)
        for test in section["primary"].values():
            assert test["diff"] == 0 and test["p_holm"] == 1


def test_the_declared_subset_leaves_secret_10_out():
    analysis = analyse(_load("after-tgrid.json"), _load("before-tgrid.json"))
    everything = analysis["sets"]["all tasks"]["tasks"]
    subset = analysis["sets"]["without secret 10"]["tasks"]
    assert 10017 in everything and subset == [t for t in everything if t != 10017]


def test_results_on_other_tasks_are_refused():
    after, before = _load("after-tgrid.json"), _load("before.json")
    with pytest.raises(ValueError, match=r"same tasks|K and T"):
        analyse(after, before)


def test_the_command_writes_what_it_prints(tmp_path, capsys):
    out = tmp_path / "tests.json"
    assert main([str(GRPO / "after-tgrid.json"), str(GRPO / "before-tgrid.json"), str(out)]) == 0
    written = json.loads(out.read_text())
    first = written["sets"]["all tasks"]["primary"]["mean Pass@(1,T) over the T grid"]
    assert f"{first['diff']:+.3f}" in capsys.readouterr().out
    assert main([]) == 2


RERUN = GRPO.parent / "grpo-v2"


def test_the_rerun_with_distinct_examples_is_recomputed_from_its_results():
    after, before = EvalResult.load(RERUN / "after.json"), EvalResult.load(RERUN / "before.json")
    analysis = json.loads(json.dumps(analyse(after, before)))
    assert analysis == json.loads((RERUN / "tests.json").read_text())
    # What docs/real_llm.md reports: both declared primary tests pass Holm, and
    # the gain at T=12 exceeds the gain at T=3 (which is negative).
    primary = analysis["sets"]["all tasks"]["primary"]
    assert all(test["p_holm"] < 0.05 for test in primary.values())
    gain = np.array(analysis["sets"]["all tasks"]["cells"]["diff"])[0]
    assert gain[0] < 0 < gain[-1]


def test_the_rerun_gains_success_by_walking_not_by_better_steps():
    # docs/real_llm.md: the trained model counts down one guess at a time, so
    # its decisions and its step quality fall while "recovery" (a walk ends
    # ever closer) and late success rise.
    after, before = EvalResult.load(RERUN / "after.json"), EvalResult.load(RERUN / "before.json")
    a, b = after.diagnostics, before.diagnostics
    assert a["decision_quality"] < 0.05 < b["decision_quality"]
    assert a["step_quality"]["optimal_rate"] < b["step_quality"]["optimal_rate"]
    assert a["error_recovery"][-1]["rate"] > 0.9 > b["error_recovery"][-1]["rate"]
    log = json.loads((RERUN / "train_llm.json").read_text())["log"]
    assert len(log) == 30 and log[0]["success"] == 0
