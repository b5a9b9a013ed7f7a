"""The real-model study (issue 30): its design in code, and its --quick miniature end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agent_envs.evaluation import EvalResult
from studies.real_model import design

pytest.importorskip("trl")


def test_the_design_declares_what_the_issue_asks_before_any_run():
    assert design.SEEDS >= 8
    assert len(design.T_GRID) >= 4 and tuple(sorted(design.T_GRID)) == design.T_GRID
    assert design.T_GRID[0] == design.SHORT and design.T_GRID[-1] == design.LONG
    assert design.KS == (1, 2, 4, 8)
    assert set(design.regimes()) == {"base", "short", "long", "mix", "long+pr"}
    assert len(design.PRIMARY_TESTS) == 3
    low, high = design.CALIBRATION["long"]
    assert (low, high, design.CALIBRATION["short_at_most"]) == (0.2, 0.6, 0.5)
    # Every trained regime plays the same GRPO steps and episodes: one setting for all.
    budgets = [spec for spec, _ in design.regimes().values() if spec is not None]
    assert len(budgets) == 4


@pytest.fixture(scope="module")
def quick(tmp_path_factory, one_torch_thread):
    from studies.real_model.cli import main

    root = tmp_path_factory.mktemp("real_model")
    argv = ["--quick", "--out", str(root / "out"), "--work", str(root / "work")]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUDA_VISIBLE_DEVICES", "")  # what main sets for --device cpu; undone after
        assert main(argv) == 0
    return root, argv


def test_quick_runs_every_regime_and_seed_and_writes_the_three_primary_tests(quick):
    root, _ = quick
    record = json.loads((root / "out" / "results.json").read_text())
    assert set(record["results"]) == set(design.regimes())
    assert all(len(seeds) == design.QUICK["seeds"] for seeds in record["results"].values())
    tests = record["primary_tests"]
    assert list(tests) == list(design.PRIMARY_TESTS)
    for cell in tests.values():
        assert 0.0 <= cell["p"] <= cell["holm_p"] <= 1.0
        assert cell["verdict"] in {"supports", "consistent with", "does not support", "reverses"}
    assert len(tests[list(tests)[2]]["parts"]) == 2  # claim 3: mean over T and long's worst T
    report = (root / "out" / "results.md").read_text()
    assert report.index("Primary tests") < report.index("Pass@(K,T) per regime")
    # Each finished run's record is small JSON: the model's hash, the GRPO log, the evaluation.
    job = json.loads((root / "out" / "runs" / "long-seed0" / "job.json").read_text())
    assert len(job["model_sha256"]) == 64 and job["train_log"] and job["result"]["surface"]
    assert not list((root / "out").rglob("*.safetensors"))


def test_every_primary_figure_recomputes_from_results_json(quick):
    from studies.real_model.report import primary_tests

    root, _ = quick
    record = json.loads((root / "out" / "results.json").read_text())
    runs = {n: [EvalResult.from_dict(r) for r in rs] for n, rs in record["results"].items()}
    again = json.loads(json.dumps(primary_tests(runs)))
    assert again == record["primary_tests"]  # the same data, the same code: exactly


def test_a_rerun_of_quick_redoes_no_finished_run(quick, capsys):
    from studies.real_model.cli import main

    root, argv = quick
    records = sorted((root / "out" / "runs").rglob("job.json"))
    before = {path: path.stat().st_mtime_ns for path in records}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUDA_VISIBLE_DEVICES", "")
        assert main(argv) == 0
    assert {path: path.stat().st_mtime_ns for path in records} == before
    assert "phase 1: 0 job(s) to run" in capsys.readouterr().out


def test_claim_1_is_the_growth_of_long_minus_base_from_the_shortest_to_the_longest_t():
    def result(rows):
        counts = np.array(rows)
        return type("R", (), {"success_counts": counts, "samples": 4})()

    runs = {"long": [result([[1, 2, 4]])], "base": [result([[1, 1, 1]])]}
    # gain per T: 0, 0.25, 0.75; longest minus shortest: 0.75.
    assert design.PRIMARY_TESTS["claim 1: long - base grows with T"][1][0](runs, 0) == [0.75]
