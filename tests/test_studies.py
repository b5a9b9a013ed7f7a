"""The studies package: a durable runner, and the committed results recomputed by its code."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_envs.evaluation import EvalResult
from studies.runner import RECORD, Job, code_commit, finished, run_jobs

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# A study in miniature: its job function records each call and kills the whole
# process (SIGKILL: no cleanup, no finally) on the job numbered KILL_AT.
FAKE_STUDY = """
import os, signal, sys
from pathlib import Path
from studies.runner import Job, run_jobs

work, kill_at = Path(sys.argv[1]), int(sys.argv[2])

def job_function(job):
    with open(work / "calls.log", "a") as log:
        log.write(f"{job.regime} {job.seed}\\n")
    if job.settings["number"] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    return {"value": 10 * job.seed + job.phase}

jobs = [Job(regime, seed, str(work / f"{regime}-{seed}"), {"number": 3 * phase + seed}, phase)
        for phase, regime in enumerate(("warm", "long")) for seed in range(3)]
summaries = run_jobs(jobs, job_function, log=lambda line: None)
print(sum(s["reused"] for s in summaries), "reused")
"""


def _run_fake(script: Path, work: Path, kill_at: int) -> subprocess.CompletedProcess:
    command = [sys.executable, str(script), str(work), str(kill_at)]
    # studies/ runs from the checkout (the wheel installs the library only), and a
    # script run by path has its own folder on sys.path, not the working directory.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _snapshot(paths) -> dict[Path, tuple[int, bytes]]:
    return {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in paths}


def test_a_study_killed_mid_run_redoes_no_finished_job_on_rerun(tmp_path):
    script = tmp_path / "fake_study.py"
    script.write_text(FAKE_STUDY)
    killed = _run_fake(script, tmp_path, kill_at=4)  # the second job of the second phase
    assert killed.returncode == -9, killed.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls == ["warm 0", "warm 1", "warm 2", "long 0", "long 1"]
    records = sorted(tmp_path.glob(f"*/{RECORD}"))
    assert [path.parent.name for path in records] == ["long-0", "warm-0", "warm-1", "warm-2"]
    before = _snapshot(records)
    rerun = _run_fake(script, tmp_path, kill_at=-1)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.strip() == "4 reused"
    # The rerun called the job function for the two unfinished jobs only ...
    assert (tmp_path / "calls.log").read_text().splitlines()[len(calls) :] == ["long 1", "long 2"]
    # ... and left every finished job's record as it was, byte for byte.
    assert _snapshot(records) == before
    assert json.loads((tmp_path / "long-2" / RECORD).read_text()) == {
        "regime": "long", "seed": 2, "folder": str(tmp_path / "long-2"), "value": 21,
        "commit": code_commit(),
    }  # fmt: skip


def test_the_runner_runs_phases_in_order_and_returns_summaries_in_job_order(tmp_path):
    order = []

    def job_function(job):
        order.append((job.phase, job.regime))
        return {"seconds": 1.5}

    jobs = [Job("b", 0, str(tmp_path / "b"), phase=1), Job("a", 0, str(tmp_path / "a"))]
    summaries = run_jobs(jobs, job_function, log=lambda line: None)
    assert order == [(0, "a"), (1, "b")]
    assert [s["regime"] for s in summaries] == ["b", "a"]
    assert finished(jobs[0]) == {
        "regime": "b", "seed": 0, "folder": jobs[0].folder, "seconds": 1.5, "commit": code_commit(),
    }  # fmt: skip
    # The record names the code that ran the job: this checkout's commit.
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert code_commit().split("+")[0] == head.strip()
    again = run_jobs(jobs, job_function, log=lambda line: None)
    assert order == [(0, "a"), (1, "b")] and all(s["reused"] for s in again)


def test_a_failing_job_leaves_no_record_and_the_rerun_runs_it(tmp_path):
    job = Job("long", 0, str(tmp_path / "long"))

    def broken(_job):
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):
        run_jobs([job], broken, log=lambda line: None)
    assert finished(job) is None and not list(tmp_path.rglob("*.tmp*"))
    assert run_jobs([job], lambda _job: {"ok": True}, log=lambda line: None)[0]["ok"]


# ------------------------------------------------------ the classic study, miniature
def _quick_argv(tmp_path: Path) -> list[str]:
    out, work = tmp_path / "docs", tmp_path / "runs"
    return ["--quick", "--workers", "1", "--out", str(out), "--work", str(work), "--no-plots"]


def test_the_classic_study_killed_mid_run_resumes_without_redoing_finished_runs(tmp_path):
    from studies.budgetmix.cli import main

    argv = _quick_argv(tmp_path)
    work = tmp_path / "runs"
    process = subprocess.Popen(
        [sys.executable, "-m", "studies.budgetmix", *argv],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # Wait (no time limit on the outcome: only how much finished varies) for 3 of 10.
        deadline = time.monotonic() + 1200
        while len(list(work.rglob(RECORD))) < 3 and process.poll() is None:
            assert time.monotonic() < deadline, "the quick study did not get going"
            time.sleep(0.2)
    finally:
        process.kill()
        _, err = process.communicate()
    records = sorted(work.rglob(RECORD))
    assert len(records) >= 3, err
    # A finished run's record and model stay untouched by the rerun.
    models = [path.parent / "model.zip" for path in records]
    before = _snapshot(records + models)
    assert main(argv) == 0
    assert _snapshot(records + models) == before
    assert len(list(work.rglob(RECORD))) == 10
    report = (tmp_path / "docs" / "results.md").read_text()
    assert f"{len(records)} of 10 runs were reused" in report
    # The primary metric is declared before any figure.
    assert report.index("**Primary metric") < report.index("| regime |")
    for regime in ("warm", "short", "long", "mix", "long+pr", "oracle (reference)"):
        assert f"| {regime} |" in report
    results = json.loads((tmp_path / "docs" / "results.json").read_text())
    assert set(results) == {"agent_envs/FrozenLake-Slippery-v0", "agent_envs/Maze-5x5-v0"}
    for env in results.values():
        assert set(env["primary"]) >= {"warm", "short", "long", "mix", "long+pr", "oracle"}
        assert "mix" in env["compare_with_warm"] and "bar" in env
    # The maze's short budget is the longest shortest path of its held-out tasks.
    maze = results["agent_envs/Maze-5x5-v0"]
    assert f"short T={max(maze['shortest'])}," in report


# ------------------------------------- the committed results, recomputed by the studies
def assert_same(new, stored, where="", extra=()):
    """``new`` equals ``stored`` (floats to 1e-9); keys in ``extra`` may be new."""
    if isinstance(new, dict):
        assert set(new) - set(extra) == set(stored), where
        for key in stored:
            assert_same(new[key], stored[key], f"{where}/{key}", extra)
    elif isinstance(new, list):
        assert len(new) == len(stored), where
        for i, (a, b) in enumerate(zip(new, stored, strict=True)):
            assert_same(a, b, f"{where}[{i}]", extra)
    elif isinstance(new, float) and isinstance(stored, float):
        assert math.isclose(new, stored, rel_tol=1e-9) or (math.isnan(new) and math.isnan(stored))
    else:
        assert new == stored, where


@pytest.mark.parametrize("env_id", ["FrozenLake-Slippery-v0", "Maze-5x5-v0"])
def test_the_classic_studys_report_code_gives_its_committed_figures_back(env_id):
    from studies.budgetmix.report import analyse_env

    record = json.loads((DOCS / "budgetmix" / "results.json").read_text())[f"agent_envs/{env_id}"]
    runs = {n: [EvalResult.from_dict(r) for r in rs] for n, rs in record["results"].items()}
    references = {n: EvalResult.from_dict(r) for n, r in record["references"].items()}
    _, new = analyse_env(f"agent_envs/{env_id}", runs, record["shortest"], references, None)
    new = json.loads(json.dumps(new))
    assert set(new) == set(record) - {"tasks", "shortest", "references"}
    for key in new:
        assert_same(new[key], record[key], key)


@pytest.mark.parametrize("run", ["", "full"])
def test_the_llm_studys_report_code_gives_its_committed_figures_back(run):
    from studies import report as kit
    from studies.llm_budgetmix.report import analyse

    stored = json.loads((DOCS / "llm_budgetmix" / run / "results.json").read_text())
    regimes = stored["regimes"]
    runs = {n: [EvalResult.from_dict(r) for r in g["results"]] for n, g in regimes.items()}
    references = {n: EvalResult.from_dict(r) for n, r in stored["references"].items()}
    _, new = analyse(list(runs), runs, references, None)
    new = json.loads(json.dumps(kit.jsonable(new)))
    # The 6-seed run predates claim 2's family and the reply rates of compare.
    newer = {"diagnostic_tests"} if run == "" else set()
    assert set(new) | newer == set(stored) - {"command", "settings", "seconds"} | newer
    for key in set(new) - {"training"} - newer:
        assert_same(new[key], stored[key], key, extra={"reply_rates"} if run == "" else ())


def test_each_training_seed_of_the_llm_study_trains_its_own_warm_start(tmp_path, monkeypatch):
    """The warm start's variance belongs inside the seed-level intervals."""
    import baselines.llm.training.train
    from studies.llm_budgetmix.design import PLAN, regimes
    from studies.llm_budgetmix.jobs import declare_jobs, warm_start_job, warm_start_jobs

    seeds, work = [0, 1, 2], tmp_path / "work"
    warm = warm_start_jobs(seeds, [0, 1], 5, work)
    assert [job.seed for job in warm] == seeds and {job.phase for job in warm} == {0}
    assert len({job.folder for job in warm}) == 3
    jobs = declare_jobs(regimes(PLAN), seeds, {"warm_root": str(work)}, work)
    assert {job.phase for job in jobs} == {1} and len(jobs) == 3 * len(regimes(PLAN))
    own = {job.seed: job.folder for job in warm}
    assert all(job.settings["warm"] == own[job.seed] for job in jobs)
    # Every job has a folder of its own: the runner takes a folder's record as
    # that job done (the warm regime once shared its seed's warm-start folder).
    assert not {job.folder for job in warm} & {job.folder for job in jobs}
    # Each warm start trains with its own seed (the model's init and its data order).
    trained = []
    monkeypatch.setattr(
        baselines.llm.training.train,
        "train_llm",
        lambda config, out, log: trained.append((config.seed, config.warm_start, str(out))),
    )
    monkeypatch.setattr("studies.llm_budgetmix.jobs._setup_worker", lambda: None)
    for job in warm:
        warm_start_job(job)
    assert trained == [(seed, 5, own[seed]) for seed in seeds]
