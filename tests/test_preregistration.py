"""Pre-registration enforced by code (studies.preregistration) and the v4 study's design.

Each refusal has its test: a second launch, a launch from a changed checkout,
a run or resume against a changed design, a gate rewritten with another
verdict, a launch without a passed pilot of the same design, a pinned
sitting over a record of another commit.  The v4 statistics are checked on
synthetic records whose answers are known.
"""

from __future__ import annotations

import copy
import json
import subprocess

import numpy as np
import pytest

from studies import preregistration as prereg
from studies.real_model_v4 import cli as v4
from studies.real_model_v4 import design as d


def _git_repo(path):
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for key, value in (("user.email", "t@example.org"), ("user.name", "t")):
        subprocess.run(["git", "-C", str(path), "config", key, value], check=True)
    (path / "f.txt").write_text("one\n")
    subprocess.run(["git", "-C", str(path), "add", "f.txt"], check=True)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "one"], check=True)


# ------------------------------------------------------------ the design hash
def test_the_hash_covers_every_threshold_and_every_statistics_source():
    design = d.design()
    assert prereg.design_hash(design) == prereg.design_hash(copy.deepcopy(design))
    changed = copy.deepcopy(design)
    changed["gates"]["calibration"]["long_between"][0] = 0.05
    assert prereg.design_hash(changed) != prereg.design_hash(design)
    # A statistic is hashed by its source: another function gives another record.
    assert prereg.function_record(d.claim_1) != prereg.function_record(d.claim_2)
    assert design["primary"][next(iter(d.PRIMARY))]["statistic"]["function"] == (
        "studies.real_model_v4.design:claim_1"
    )
    json.dumps(design, allow_nan=False)  # one JSON object, nothing else


def test_launch_records_commit_and_hash_once_and_refuses_a_second(tmp_path, monkeypatch):
    _git_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "v"
    record = prereg.launch(out, {"t": [1, 2]}, why="first")
    saved = json.loads((out / prereg.LAUNCH).read_text())
    assert saved == record
    assert saved["design_sha256"] == prereg.design_hash({"t": [1, 2]})
    assert len(saved["commit"]) == 40 and saved["why"] == "first"
    with pytest.raises(prereg.PreregistrationError, match="launched once"):
        prereg.launch(out, {"t": [1, 2]})


def test_launch_refuses_a_checkout_with_changes(tmp_path, monkeypatch):
    _git_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.txt").write_text("changed\n")
    with pytest.raises(prereg.PreregistrationError, match="commit your changes"):
        prereg.launch(tmp_path / "v", {"t": 1})
    assert not (tmp_path / "v" / prereg.LAUNCH).exists()


def test_a_changed_design_is_refused_and_its_fields_named(tmp_path, monkeypatch):
    _git_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    design = {"gates": {"min_gain": 0.1}, "seeds": 8}
    prereg.launch(tmp_path / "v", design)
    assert prereg.check_launched(tmp_path / "v", design)["design_sha256"]
    with pytest.raises(prereg.PreregistrationError, match=r"\(gates\.min_gain\)"):
        prereg.check_launched(tmp_path / "v", {"gates": {"min_gain": 0.05}, "seeds": 8})
    with pytest.raises(prereg.PreregistrationError, match=r"no .*launch\.json"):
        prereg.check_launched(tmp_path / "other", design)


def test_a_gate_is_written_once(tmp_path):
    path = tmp_path / "gate.json"
    prereg.write_once(path, {"passed": False, "gain": 0.02})
    prereg.write_once(path, {"passed": False, "gain": 0.02})  # a resumed study: the same
    with pytest.raises(prereg.PreregistrationError, match="written once"):
        prereg.write_once(path, {"passed": True, "gain": 0.02})
    assert json.loads(path.read_text())["passed"] is False


# --------------------------------------------------------- the v4 runner's order
def test_v4_refuses_to_launch_or_run_without_a_passed_pilot_of_this_design(tmp_path, capsys):
    out = tmp_path / "v4"
    assert v4.main(["--launch", "--why", "x", "--out", str(out)]) == 2
    assert "run --calibrate" in capsys.readouterr().err
    out.mkdir()
    record = {"design_sha256": "0" * 64, "gate": {"passed": True}}
    (out / "calibration.json").write_text(json.dumps(record))
    assert v4.main(["--out", str(out)]) == 2
    assert "the pilot ran another design" in capsys.readouterr().err
    record = {"design_sha256": prereg.design_hash(d.design()), "gate": {"passed": False}}
    (out / "calibration.json").write_text(json.dumps(record))
    assert v4.main(["--pinned", "--out", str(out)]) == 2
    assert "the calibration gate failed" in capsys.readouterr().err


def test_v4_refuses_to_run_a_design_other_than_the_launched_one(tmp_path, capsys):
    out = tmp_path / "v4"
    out.mkdir()
    hashed = prereg.design_hash(d.design())
    (out / "calibration.json").write_text(
        json.dumps({"design_sha256": hashed, "gate": {"passed": True}})
    )
    launched = copy.deepcopy(d.design())
    launched["margin"] = 0.1  # the launch held another margin
    record = {"commit": "a" * 40, "design_sha256": prereg.design_hash(launched), "design": launched}
    (out / prereg.LAUNCH).write_text(json.dumps(record))
    assert v4.main(["--out", str(out)]) == 2
    assert "(margin)" in capsys.readouterr().err
    assert v4.main(["--pinned", "--out", str(out)]) == 2


def test_v4_pinned_refuses_a_run_record_of_another_commit(tmp_path, capsys):
    out = tmp_path / "v4"
    (out / "runs" / "base-seed0").mkdir(parents=True)
    design = d.design()
    hashed = prereg.design_hash(design)
    (out / "calibration.json").write_text(
        json.dumps({"design_sha256": hashed, "gate": {"passed": True}})
    )
    record = {"commit": "a" * 40, "design_sha256": hashed, "design": design}
    (out / prereg.LAUNCH).write_text(json.dumps(record))
    (out / "runs" / "base-seed0" / "job.json").write_text(json.dumps({"commit": "b" * 40}))
    assert v4.main(["--pinned", "--out", str(out), "--work", str(tmp_path / "w")]) == 2
    assert "run by another commit" in capsys.readouterr().err


def test_v4_jobs_put_the_learning_gate_first_then_seed_by_seed(tmp_path):
    settings = {"t_grid": [3, 20]}
    jobs = v4.declare_jobs(settings, tmp_path / "out", tmp_path / "work")
    assert len(jobs) == d.SEEDS * len(d.REGIMES)
    assert [(j.regime, j.seed) for j in jobs[:4]] == [
        ("base", 0),
        ("long", 0),
        ("base", 1),
        ("long", 1),
    ]
    rest = [(j.regime, j.seed) for j in jobs[4:]]
    assert rest[:4] == [("short", 0), ("mix", 0), ("long-pr", 0), ("validity", 0)]
    by_name = {(j.regime, j.seed): j.settings for j in jobs}
    assert by_name[("validity", 3)]["reward"] == "validity"
    assert by_name[("long-pr", 3)]["process_reward"] == d.PROCESS_REWARD
    assert by_name[("mix", 0)]["budget"]["budgets"] == list(d.MIX)
    assert by_name[("base", 0)]["budget"] is None


# --------------------------------------------------------------- the statistics
def test_sign_flip_p_is_exact():
    eight = np.ones(8)
    assert d.sign_flip_p(eight, "greater") == 1 / 256
    assert d.sign_flip_p(eight, "two-sided") == 2 / 256
    assert d.sign_flip_p(-eight, "greater") == 1.0
    # Two of eight seeds negative: the one-sided tail holds the sign vectors with a mean
    # at least as large, 1 (all plus) + 8 (one flip of the others' ...) counted exactly.
    values = np.array([1, 1, 1, 1, 1, 1, -1, -1.0])
    signs = np.array(np.meshgrid(*[[1, -1]] * 8)).reshape(8, -1).T
    assert d.sign_flip_p(values, "greater") == np.mean(signs @ values >= values.sum() - 1e-12)
    with pytest.raises(ValueError, match="alternative"):
        d.sign_flip_p(values, "less")
    with pytest.raises(ValueError, match="finite"):
        d.sign_flip_p(np.array([np.nan, 1.0]), "greater")


def test_an_intersection_union_test_takes_its_largest_p():
    values = np.column_stack([np.ones(8), np.array([1, 1, 1, 1, 1, 1, 1, -1.0])])
    assert d.primary_p(values, "greater") == d.sign_flip_p(values[:, 1], "greater") > 1 / 256


def test_holm_and_the_one_verdict_rule():
    assert d.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert d.verdict(0.2, 0.01, 1) == "supported"
    assert d.verdict(-0.2, 0.01, 1) == "contradicted"
    assert d.verdict(0.2, 0.06, 1) == "not supported"
    assert d.verdict(0.2, 0.01, 0) == "higher"
    assert d.verdict(-0.2, 0.01, 0) == "lower"
    assert d.verdict(0.2, 0.5, 0) == "no difference shown"


def _record(pass1_by_t, samples=8, step_quality=None, bisect=0.0):
    """A run record whose every held-out task has the given Pass@(1,T) (4 tasks)."""
    budgets = list(d.T_GRID)
    counts = [[round(pass1_by_t[t] * samples) for t in budgets]] * 4
    return {
        "result": {
            "settings": {"budgets": budgets, "samples": samples},
            "success_counts": counts,
            "diagnostics": {"step_quality": step_quality or {}},
        },
        "moves": {"bisect": bisect},
    }


def _flat(value):
    return {t: value for t in d.T_GRID}


def test_claim_1_is_the_growth_of_long_s_share_of_the_room():
    oracle = {t: 1.0 for t in d.T_GRID}
    base = _record(_flat(0.0))
    # Long gains 2/8 of a room of 1 at T=5 and 6/8 at T=20: the share grows by 0.5.
    long_ = _record({**_flat(0.0), 5: 0.25, 20: 0.75})
    values = d.claim_1({"long": [long_] * 3, "base": [base] * 3}, oracle)
    assert values == pytest.approx([0.5] * 3)
    # The room is floored: a base at the oracle's level cannot divide by zero.
    full = _record(_flat(1.0))
    assert np.isfinite(d.claim_1({"long": [full], "base": [full]}, oracle)).all()


def test_claim_2_compares_off_path_and_on_path_gains_against_the_validity_control():
    def quality(recovery, on_path):
        return {"recovery_optimal_rate": recovery, "on_path_optimal_rate": on_path}

    long_ = _record(_flat(0.5), step_quality=quality(0.6, 0.4))
    control = _record(_flat(0.5), step_quality=quality(0.2, 0.3))
    # Off path +0.4, on path +0.1: the statistic is +0.3.
    assert d.claim_2({"long": [long_], "validity": [control]}, {}) == pytest.approx([0.3])


def test_claim_3_is_non_inferiority_to_the_better_of_short_and_long_at_every_t():
    short = _record({**_flat(0.5), 3: 0.75})
    long_ = _record({**_flat(0.625), 3: 0.25})
    mix = _record({**_flat(0.625), 3: 0.75})
    values = d.claim_3({"mix": [mix] * 2, "short": [short] * 2, "long": [long_] * 2}, {})
    assert values.shape == (2, len(d.T_GRID))
    # At T=3 the better is short (0.75), elsewhere long (0.625): mix ties both, + the margin.
    assert values == pytest.approx(np.full((2, len(d.T_GRID)), d.MARGIN))
    worse = _record({**_flat(0.5), 3: 0.75})
    lower = d.claim_3({"mix": [worse] * 2, "short": [short] * 2, "long": [long_] * 2}, {})
    assert lower[:, 1] == pytest.approx([0.5 - 0.625 + d.MARGIN] * 2)


def test_process_tests_read_bisection_and_the_mean_surface():
    pr = _record(_flat(0.5), bisect=0.3)
    long_ = _record(_flat(0.25), bisect=0.1)
    runs = {"long-pr": [pr], "long": [long_]}
    assert d.process_bisection(runs, {}) == pytest.approx([0.2])
    assert d.process_pass(runs, {}) == pytest.approx([0.25])


def test_primary_results_apply_holm_over_the_five_and_one_verdict_each():
    oracle = {t: 1.0 for t in d.T_GRID}

    def quality(recovery, on_path):
        return {"recovery_optimal_rate": recovery, "on_path_optimal_rate": on_path}

    base = _record(_flat(0.0), step_quality=quality(0.1, 0.1))
    long_ = _record({**_flat(0.5), 5: 0.125}, step_quality=quality(0.5, 0.2), bisect=0.1)
    runs = {
        "base": [base] * 8,
        "long": [long_] * 8,
        "short": [long_] * 8,
        "mix": [long_] * 8,
        "long-pr": [long_] * 8,
        "validity": [base] * 8,
    }
    cells = d.primary_results(runs, oracle)
    assert list(cells) == list(d.PRIMARY)
    first = cells[next(iter(d.PRIMARY))]
    # Eight identical positive seeds: p = 2/256 two-sided, Holm x5 at the smallest.
    assert first["p"] == 2 / 256 and first["verdict"] == "supported"
    assert min(c["holm_p"] for c in cells.values()) == pytest.approx(5 / 256)
    process = cells["process supervision: long-pr - long, bisecting moves"]
    assert process["p"] == 1.0 and process["verdict"] == "no difference shown"


def test_the_calibration_gate_checks_band_binding_and_signal():
    lows = [0.0] * 16 + [0.5] * 16  # half the tasks never solved at the short T
    per_task = {t: [0.0] * 32 for t in d.T_GRID}
    per_task[d.SHORT] = [p / 4 for p in lows]
    per_task[d.LONG] = lows
    gate = d.calibration_gate(per_task)
    assert gate["pass1"][d.LONG] == 0.25
    expected = np.mean([1 - p**8 - (1 - p) ** 8 for p in per_task[d.SHORT]])
    assert gate["mixed_groups"][d.SHORT] == pytest.approx(expected)
    assert gate["checks"]["long in band"] and gate["checks"]["short binds"]
    assert gate["passed"] == (expected >= 0.25 and gate["mixed_groups"][d.LONG] >= 0.25)
    per_task[d.LONG] = [0.9] * 32
    assert not d.calibration_gate(per_task)["checks"]["long in band"]


def test_the_learning_gate_reads_long_s_gain_at_the_long_t():
    base = _record(_flat(0.125))
    gained = _record(_flat(0.25))
    runs = {"long": {0: gained, 1: gained}, "base": {0: base, 1: base}}
    gate = d.learning_gate(runs)
    assert gate["gain"] == pytest.approx(0.125) and gate["passed"]
    runs["long"] = {0: base, 1: base}
    assert not d.learning_gate(runs)["passed"]
