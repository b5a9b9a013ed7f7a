"""The real-model study: its design in code, its split, and its --quick miniature.

``--quick`` runs the study's own code end to end on the tiny model built from
config (a few CPU seconds, deterministic); ``results.json`` holds every
seed's whole result, and the report code recomputes every figure from it.
``--backend ray`` runs the same miniature as Ray tasks, to the same records.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from agent_envs.evaluation import EvalResult
from studies.real_model import design

pytest.importorskip("trl")


def test_the_design_declares_what_the_issue_asks_before_any_run():
    assert design.ENV_ID == "agent_envs/GuessNumber-Range-Terse-v0"
    assert design.SEEDS >= 8
    assert len(design.T_GRID) >= 4 and tuple(sorted(design.T_GRID)) == design.T_GRID
    assert design.T_GRID[0] == design.SHORT and design.T_GRID[-1] == design.LONG
    assert design.KS == (1, 2, 4, 8)
    regimes = design.regimes()
    assert set(regimes) == {"base", "short", "long", "mix"}
    assert [regimes[name][0].budgets for name in ("short", "long", "mix")] == [
        (design.SHORT,),
        (design.LONG,),
        design.T_GRID,
    ]
    assert all(coef == 0 for _, coef in regimes.values())
    assert len(design.PRIMARY_TESTS) == 3
    low, high = design.CALIBRATION["long"]
    assert (low, high, design.CALIBRATION["short_at_most"]) == (0.2, 0.6, 0.5)
    assert {design.SHORT, design.LONG} <= set(design.PILOT_T_GRID)


def test_the_split_is_distinct_instances_none_a_few_shot_examples_and_balanced():
    from agent_envs.instances import instance_keys
    from baselines.llm.prompting.few_shot import PromptStyle, example_instances

    train, held_out = design.split(
        design.ENV_ID, design.TRAIN_TASKS, design.EVAL_TASKS, design.FEW_SHOT
    )
    keys = instance_keys(design.ENV_ID, train + held_out)
    assert len(set(keys.values())) == len(train) + len(held_out) == 144
    assert not set(keys.values()) & set(example_instances(design.ENV_ID, design.FEW_SHOT))
    # The check every few-shot agent runs before training or evaluating accepts them.
    PromptStyle(few_shot=design.FEW_SHOT, env_id=design.ENV_ID).check_tasks(
        design.ENV_ID, train + held_out
    )
    assert design.split_check(design.ENV_ID, train, held_out)["p"] > 0.2


def test_an_env_too_small_for_the_split_is_refused_in_one_line(tmp_path, capsys):
    from studies.real_model.cli import main

    argv = ["--env", "agent_envs/GuessNumber-20-v0", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert "too few distinct tasks" in error and len(error.splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def quick(tmp_path_factory, one_torch_thread):
    from studies.real_model.cli import main

    root = tmp_path_factory.mktemp("real_model")
    argv = ["--quick", "--no-plots", "--out", str(root / "out"), "--work", str(root / "work")]
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
        assert cell["test"] in {"passes", "fails", "reverses", "not measured"}
    assert len(tests[list(tests)[2]]["parts"]) == 2  # claim 3: mean over T and long's worst T
    report = (root / "out" / "results.md").read_text()
    assert report.index("Primary tests") < report.index("Pass@(K,T) per regime")
    assert record["split"]["p"] > 0.05 and "Split: 8 training and 3 held-out" in report
    # Each finished run's record is small JSON: the model's hash, the GRPO log, the evaluation.
    job = json.loads((root / "out" / "runs" / "long-seed0" / "job.json").read_text())
    assert len(job["model_sha256"]) == 64 and job["train_log"] and job["result"]["surface"]
    assert len(job["commit"].split("+")[0]) == 40  # the code's commit, for the pinned check
    assert job["moves"]["moves"] == sum(e["turns"] for e in _episodes(root, "long-seed0"))
    assert set(record["moves"]) == set(design.regimes())
    assert "What the policies do" in report
    assert not list((root / "out").rglob("*.safetensors"))
    # The learning gate ran first, on the study's own base and long runs of its seeds.
    gate = json.loads((root / "out" / "gate.json").read_text())
    assert gate["seeds"] == 2 and len(gate["gain_every_layer"]) == 2
    assert gate["gain_every_layer"] == gate["gain_chosen_depth"]  # every layer is the design's
    assert not (root / "out" / "gate").exists()  # so the gate added no run
    assert "learning gate" in (root / "out" / "gate.md").read_text()


def _episodes(root, run):
    """The episode lines of one run's evaluation log."""
    lines = (root / "work" / run / "episodes.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


def test_every_interval_p_value_and_holm_p_recomputes_from_results_json(quick):
    from studies.real_model.report import analyse
    from studies.report import jsonable

    root, _ = quick
    record = json.loads((root / "out" / "results.json").read_text())
    runs = {n: [EvalResult.from_dict(r) for r in rs] for n, rs in record["results"].items()}
    _, again = analyse(runs, None)
    again = json.loads(json.dumps(jsonable(again)))
    figures = ["surfaces", "primary_tests", "compare_with_base", "diagnostic_tests", "diagnostics"]
    for key in figures:
        assert again[key] == record[key], key  # the same data, the same code: exactly
    train, held_out = record["settings"]["train_tasks"], record["settings"]["eval_tasks"]
    assert design.split_check(design.ENV_ID, train, held_out) == record["split"]


def test_a_run_is_deterministic(quick, tmp_path):
    from studies.real_model.cli import declare_jobs
    from studies.real_model.jobs import run_job

    root, _ = quick
    settings = json.loads((root / "out" / "results.json").read_text())["settings"]
    job = next(
        job
        for job in declare_jobs(settings, tmp_path / "out", tmp_path / "work")
        if (job.regime, job.seed) == ("long", 1)
    )
    again = run_job(job)
    first = json.loads((root / "out" / "runs" / "long-seed1" / "job.json").read_text())
    assert again["model_sha256"] == first["model_sha256"]
    assert again["result"]["success_counts"] == first["result"]["success_counts"]
    assert again["train_log"][0]["reward"] == first["train_log"][0]["reward"]


def _without_timings(path: Path, root: Path) -> dict:
    """A run's record, its folders under ``root`` renamed, without what says how fast it ran."""
    record = json.loads(path.read_text().replace(str(root), "ROOT"))
    del record["seconds"]
    record.get("result", {}).pop("timing", None)
    for step in record.get("train_log", []):
        del step["seconds"]
    return record


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="the [ray] extra is not installed (pip install -e '.[ray]')",
)
def test_the_quick_study_on_ray_writes_the_local_runners_records(quick, tmp_path, monkeypatch):
    import ray

    from studies.real_model.cli import main

    root, _ = quick
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.chdir(tmp_path)  # Ray puts its start folder on its workers' path
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    try:
        folders = ["--out", str(tmp_path / "out"), "--work", str(tmp_path / "work")]
        assert main(["--quick", "--no-plots", *folders, "--backend", "ray"]) == 0
    finally:
        ray.shutdown()
    local = sorted((root / "out" / "runs").glob("*/job.json"))
    assert len(local) == 9  # the base model's warm start, and 2 seeds x 4 regimes
    for path in local:
        on_ray = tmp_path / "out" / "runs" / path.parent.name / "job.json"
        # The same model, training log, evaluation and moves: only the timings differ.
        assert _without_timings(on_ray, tmp_path) == _without_timings(path, root)


def test_a_rerun_redoes_no_finished_run_and_max_runs_bounds_a_sitting(quick, tmp_path, capsys):
    from studies.real_model.cli import main

    root, argv = quick
    records = sorted((root / "out" / "runs").rglob("job.json"))
    before = {path: path.stat().st_mtime_ns for path in records}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUDA_VISIBLE_DEVICES", "")
        assert main(argv) == 0
        assert {path: path.stat().st_mtime_ns for path in records} == before
        assert "phase 1: 0 job(s) to run" in capsys.readouterr().out
        # A sitting that can afford one run: it runs the first unfinished one and stops.
        out, work = tmp_path / "out", tmp_path / "work"
        shutil.copytree(root / "out", out)
        shutil.copytree(root / "work", work)
        for name in ("long-seed1", "mix-seed1"):
            (out / "runs" / name / "job.json").unlink()
        (out / "results.json").unlink()
        short = ["--quick", "--no-plots", "--out", str(out), "--work", str(work)]
        assert main([*short, "--max-runs", "1"]) == 0
        assert (out / "runs" / "long-seed1" / "job.json").exists()
        assert not (out / "runs" / "mix-seed1" / "job.json").exists()
        assert "7 of 8 runs finished" in capsys.readouterr().out
        assert not (out / "results.json").exists()
        assert main(short) == 0
    assert (out / "results.json").exists()


def _results(per_seed_gain: list[float], recovery: list[float], quality: list[float]) -> dict:
    """Synthetic runs: long gains ``per_seed_gain`` at the longest T only, on 2 tasks."""

    def result(rows, recovery_rate, optimal_rate):
        diagnostics = {
            "error_recovery": [{"rate": recovery_rate}],
            "step_quality": {"optimal_rate": optimal_rate},
        }
        return SimpleNamespace(
            success_counts=np.array(rows, dtype=float), samples=4, diagnostics=diagnostics
        )

    base = [result([[1, 2], [1, 2]], 0.2, 0.5) for _ in per_seed_gain]
    long_ = [
        result([[1, 2 + 4 * g], [1, 2 + 4 * g]], 0.2 + r, 0.5 + q)
        for g, r, q in zip(per_seed_gain, recovery, quality, strict=True)
    ]
    mix = [result([[1, 2], [1, 2]], 0.2, 0.5) for _ in per_seed_gain]
    return {"base": base, "long": long_, "mix": mix}


def test_the_primary_tests_are_exact_sign_flip_tests_over_seeds_with_holm_over_three():
    from studies.real_model.report import primary_tests

    # 8 seeds, every one gains at long T only: claim 1's exact two-sided p is 2 / 2^8.
    runs = _results([0.25] * 8, [0.3] * 8, [0.1] * 8)
    cells = primary_tests(runs)
    claim_1, claim_2, claim_3 = cells.values()
    assert claim_1["parts"][0]["diff"] == pytest.approx(0.25)
    assert claim_1["p"] == pytest.approx(2 / 256) and claim_2["p"] == pytest.approx(2 / 256)
    assert claim_2["parts"][0]["diff"] == pytest.approx(0.3 - 0.1)
    assert claim_3["p"] == 1.0  # mix equals the base: no difference at all
    # Holm over the three: the smallest p times 3, the next times 2 (monotone).
    assert claim_1["holm_p"] == pytest.approx(3 * 2 / 256)
    assert claim_2["holm_p"] == pytest.approx(3 * 2 / 256)
    assert (claim_1["test"], claim_3["test"]) == ("passes", "fails")
    # With 3 seeds no sign-flip test reaches 0.05 (2 / 2^3 = 0.25): the issue's reason for 8.
    few = primary_tests(_results([0.25] * 3, [0.3] * 3, [0.1] * 3))
    assert next(iter(few.values()))["p"] == 0.25


def test_a_claim_no_seed_can_measure_is_not_measured_and_keeps_the_family_at_three():
    from studies.real_model.report import primary_tests

    runs = _results([0.25] * 8, [0.3] * 8, [0.1] * 8)
    for result in runs["long"] + runs["base"]:
        result.diagnostics["error_recovery"] = [{"rate": None}]  # no error made, none recovered
    cells = primary_tests(runs)
    claim_2 = cells[list(cells)[1]]
    assert (claim_2["p"], claim_2["test"], claim_2["parts"][0]["diff"]) == (
        1.0,
        "not measured",
        None,
    )
    assert next(iter(cells.values()))["holm_p"] == pytest.approx(3 * 2 / 256)


def test_claim_1_is_the_growth_of_long_minus_base_from_the_shortest_to_the_longest_t():
    def result(rows):
        counts = np.array(rows)
        return type("R", (), {"success_counts": counts, "samples": 4})()

    runs = {"long": [result([[1, 2, 4]])], "base": [result([[1, 1, 1]])]}
    # gain per T: 0, 0.25, 0.75; longest minus shortest: 0.75.
    assert design.PRIMARY_TESTS["claim 1: long - base grows with T"][1][0](runs, 0) == [0.75]


def test_the_cost_estimate_is_each_regimes_steps_plus_the_evaluation_per_seed():
    from studies.real_model import cost

    steps = {
        "short": {"per_step": [10.0, 12.0], "load": 5.0},
        "long": {"per_step": [40.0], "load": 5.0},
        "mix": {"per_step": [30.0], "load": 5.0},
    }
    evaluation = {"tasks": 4, "cpu": 40.0}  # 10 CPU s a task
    figures = cost.estimate(steps, evaluation)
    per_eval = 10.0 * design.EVAL_TASKS
    runs = {
        "base": per_eval,
        "short": 5 + design.STEPS * 11 + per_eval,
        "long": 5 + design.STEPS * 40 + per_eval,
        "mix": 5 + design.STEPS * 30 + per_eval,
    }
    assert figures["cpu_per_run"] == pytest.approx(runs)
    assert figures["cpu_hours_whole_study"] == pytest.approx(
        design.SEEDS * sum(runs.values()) / 3600
    )


def test_the_committed_pilot_recomputes_from_its_chunks_and_meets_the_bands():
    from pathlib import Path

    from studies.real_model.report import calibration_lines

    folder = Path(__file__).resolve().parents[1] / "docs" / "real_model_study"
    pilot = json.loads((folder / "pilot.json").read_text())
    chunks = [json.loads(path.read_text()) for path in (folder / "pilot").glob("*/job.json")]
    chunks.sort(key=lambda job: job["seed"])  # the seed of a pilot job is its first task's index
    results = [EvalResult.from_dict(job["result"]) for job in chunks]
    cpu = sum(job["seconds"]["process_cpu"] for job in chunks)
    lines, record = calibration_lines(results, design.ENV_ID, cpu, pilot["load_average"])
    assert json.loads(json.dumps(record)) == pilot
    assert (folder / "pilot.md").read_text() == "\n".join(lines) + "\n"
    assert record["bands_met"] and record["tasks"] == design.CALIBRATION["tasks"]
    assert record["short"] == record["surface"][design.SHORT] <= 0.5 * record["long"]
    # Training tasks only: the pilot's tasks are the split's first training ids.
    train, _ = design.split(design.ENV_ID, design.TRAIN_TASKS, design.EVAL_TASKS, design.FEW_SHOT)
    assert [t for job in chunks for t in job["result"]["settings"]["tasks"]] == train[:16]


def test_the_study_starts_only_on_a_pilot_that_meets_the_bands_at_this_design(tmp_path):
    from studies.real_model.cli import StudyStop, check_pilot

    with pytest.raises(StudyStop, match="run --calibrate first"):
        check_pilot(tmp_path)
    pilot = {"short": 0.3, "long": 0.4, "surface": {str(design.SHORT): 0.3}, "bands_met": False}
    (tmp_path / "pilot.json").write_text(json.dumps(pilot))
    with pytest.raises(StudyStop, match="does not meet the bands"):
        check_pilot(tmp_path)
    stale = {**pilot, "short": 0.1, "bands_met": True}  # read at another short T
    (tmp_path / "pilot.json").write_text(json.dumps(stale))
    with pytest.raises(StudyStop, match="does not meet the bands"):
        check_pilot(tmp_path)
    (tmp_path / "pilot.json").write_text(json.dumps({**stale, "surface": {str(design.SHORT): 0.1}}))
    check_pilot(tmp_path)


def _gain_results(gains: list[float]) -> list[SimpleNamespace]:
    """One result per seed on 2 tasks x 4 samples: ``gain`` Pass@(1, long T) over 0.25."""
    return [
        SimpleNamespace(success_counts=np.array([[0, 1 + 4 * g]] * 2, dtype=float), samples=4)
        for g in gains
    ]


@pytest.mark.parametrize(
    "every, chosen, learns, keeps",
    [
        ([0.25, 0.25], [0.25, 0.0], True, False),  # keeps a half: not enough
        ([0.25, 0.25], [0.25, 0.125], True, True),  # keeps three quarters
        ([0.0, 0.0], [0.25, 0.25], False, False),  # every layer learns nothing: no ratio
        ([0.0, 0.25], [0.25, 0.25], True, True),  # mean 0.125 >= 0.1
    ],
)
def test_the_learning_gate_asks_every_layer_to_learn_and_the_chosen_depth_to_keep_two_thirds(
    every, chosen, learns, keeps, monkeypatch
):
    from studies.real_model.gate import ALL_LAYERS, learning_gate

    monkeypatch.setattr(design, "LORA_LAYERS", 8)  # a chosen depth below every layer

    runs = {
        "base": _gain_results([0.0, 0.0]),
        "long": _gain_results(chosen),
        ALL_LAYERS: _gain_results(every),
    }
    record = learning_gate(runs)
    assert record["gain_every_layer"] == pytest.approx(every)
    assert record["gain_chosen_depth"] == pytest.approx(chosen)
    assert (record["learns"], record["keeps"]) == (learns, keeps)
    assert record["passed"] == (learns and keeps)


@pytest.mark.parametrize("gains, passed", [([0.25, 0.0], True), ([0.0, 0.125], False)])
def test_with_every_layer_chosen_the_gate_reads_the_study_long_runs_and_adds_none(
    gains, passed, monkeypatch, tmp_path
):
    from studies.real_model.gate import gate_jobs, gate_lines, learning_gate
    from studies.runner import Job

    monkeypatch.setattr(design, "LORA_LAYERS", None)
    record = learning_gate({"base": _gain_results([0.0, 0.0]), "long": _gain_results(gains)})
    assert record["gain_every_layer"] == record["gain_chosen_depth"] == pytest.approx(gains)
    assert (record["learns"], record["passed"]) == (passed, passed)
    assert record["kept"] == pytest.approx(1.0)  # the chosen depth is every layer
    assert "LoRA on every layer (the study's depth)" in "\n".join(gate_lines(record, {}))
    study = [
        Job(regime, seed, str(tmp_path / f"{regime}{seed}"), {})
        for seed in range(3)
        for regime in ("base", "short", "long")
    ]
    jobs = gate_jobs(study, {"seeds": 3}, tmp_path, tmp_path)
    assert [(job.regime, job.seed) for job in jobs] == [
        ("base", 0),
        ("base", 1),
        ("long", 0),
        ("long", 1),
    ]


def test_the_move_mix_reads_each_guess_against_the_interval_shown_before_it():
    import gymnasium as gym

    from studies.real_model.moves import classify, move_mix

    env = gym.make(design.ENV_ID)
    observation, _ = env.reset(seed=0, options={"task_id": 3})  # 24-58, secret 36
    transcript = {"observation": observation, "steps": []}
    for action in ("41", "35", "36", "36", "hello", "37", "99"):
        observation, _, _, _, info = env.step(action)
        step = {"action": action, "observation": observation, "valid": info["valid_action"]}
        transcript["steps"].append(step)
    assert observation.endswith("36-36")
    # 41 bisects 24-58; 35 is off 24-40's midpoint 32; 36 steps from 35; then a
    # repeat, two refusals (not a number; outside 24-58) and a step from 36.
    kinds = ["bisect", "other", "step", "repeat", "invalid", "step", "invalid"]
    assert classify(transcript) == kinds
    mix = move_mix([transcript, transcript])
    assert mix["moves"] == 14
    assert mix["invalid"] == pytest.approx(2 / 7) and mix["bisect"] == pytest.approx(1 / 7)
    assert sum(mix[kind] for kind in ("invalid", "repeat", "bisect", "step", "other")) == 1


def test_every_committed_run_was_played_on_the_declared_split_and_grid():
    """The study spans sittings: a run committed by one must match the design of the next."""
    from pathlib import Path

    study = Path(__file__).resolve().parents[1] / "docs" / "real_model_study"
    _, held_out = design.split(
        design.ENV_ID, design.TRAIN_TASKS, design.EVAL_TASKS, design.FEW_SHOT
    )
    records = [json.loads(path.read_text()) for path in study.glob("*/*/job.json")]
    launch = json.loads((study / "launch.json").read_text()) if records else {}
    for record in records:
        if record["regime"] == "pilot":
            continue
        # The pinned checkout's code ran it, or an earlier launch's identical code did.
        carried = "carried" in record and record["commit"] == launch.get("carried_from")
        assert record["commit"] == launch["commit"] or carried
        settings = record["result"]["settings"]
        assert settings["tasks"] == held_out and settings["budgets"] == list(design.T_GRID)
        assert (settings["samples"], settings["ks"]) == (design.EVAL_SAMPLES, list(design.KS))
        assert settings["step_quality_seed"] == design.STEP_QUALITY_SEED
        assert record["regime"] in {*design.regimes(), "long-all-layers"}
        assert 0 <= record["seed"] < design.SEEDS
        assert len(record["model_sha256"]) == 64
    assert not list(study.rglob("*.safetensors"))


def test_the_study_runs_from_a_worktree_pinned_at_its_launch_commit(tmp_path, monkeypatch):
    import subprocess

    from studies.real_model import pinned

    def git(*args, cwd):
        identity = ["-c", "user.name=t", "-c", "user.email=t@example.org"]
        return subprocess.run(
            ["git", *identity, *args], cwd=cwd, check=True, capture_output=True, text=True
        ).stdout.strip()

    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "code.py").write_text("first\n")
    git("add", "code.py", cwd=repo)
    git("commit", "-qm", "first", cwd=repo)
    monkeypatch.chdir(repo)
    out = repo / "study"
    with pytest.raises(pinned.PinError, match="--launch"):
        pinned.pinned_commit(out, launch=False)
    (repo / "code.py").write_text("uncommitted\n")
    with pytest.raises(pinned.PinError, match="commit your changes first"):
        pinned.pinned_commit(out, launch=True)
    git("checkout", "code.py", cwd=repo)
    commit = pinned.pinned_commit(out, launch=True)
    assert commit == git("rev-parse", "HEAD", cwd=repo)
    with pytest.raises(pinned.PinError, match="launched already"):
        pinned.pinned_commit(out, launch=True)

    # Main moves on; the study's checkout stays at the launch commit, sitting after sitting.
    (repo / "code.py").write_text("second\n")
    git("commit", "-qam", "second", cwd=repo)
    tree = pinned.checkout(tmp_path / "work" / "checkout", pinned.pinned_commit(out, False))
    assert (tree / "code.py").read_text() == "first\n"
    assert pinned.checkout(tree, commit) == tree
    with pytest.raises(pinned.PinError, match="not the study's"):
        pinned.checkout(tree, git("rev-parse", "HEAD", cwd=repo))
    (tree / "code.py").write_text("edited in the checkout\n")
    with pytest.raises(pinned.PinError, match="local changes"):
        pinned.checkout(tree, commit)

    record = out / "runs" / "long-seed0" / "job.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"commit": commit}))
    pinned.check_records(out, commit)
    record.write_text(json.dumps({"commit": "0" * 40}))
    with pytest.raises(pinned.PinError, match="was run by 0000"):
        pinned.check_records(out, commit)

    # A run of an earlier launch, carried: accepted from that commit only, with the note.
    earlier = {"commit": "0" * 40, "regime": "long-all-layers", "folder": "gate/x", "seed": 1}
    source = out / "v2" / "job.json"
    source.parent.mkdir()
    source.write_text(json.dumps(earlier))
    record.unlink()
    pinned.carry(source, record, "long")
    carried = json.loads(record.read_text())
    assert carried["regime"] == "long" and carried["seed"] == 1
    assert carried["carried"]["regime"] == "long-all-layers"
    pinned.check_records(out, commit, carried_from="0" * 40)
    with pytest.raises(pinned.PinError, match="was run by 0000"):
        pinned.check_records(out, commit, carried_from="1" * 40)
    record.write_text(json.dumps(earlier))  # the same commit, but not carried
    with pytest.raises(pinned.PinError, match="was run by 0000"):
        pinned.check_records(out, commit, carried_from="0" * 40)
