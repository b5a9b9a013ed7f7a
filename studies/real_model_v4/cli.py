"""The real-model study v4: ``python -m studies.real_model_v4``.

The order is fixed by code, each step refusing to run out of it:

1. ``--calibrate``: the pilot, the base model on ``GATES["calibration"]``'s
   training tasks over the whole T grid; writes ``calibration.json`` once,
   with the design's hash and the gate's verdict.
2. ``--launch --why TEXT``: records the commit and the design's hash in
   ``launch.json`` (:func:`studies.preregistration.launch`), only after a
   pilot of this very design that passed.
3. ``--pinned`` (every sitting): runs step 4 from a git worktree at the
   launched commit (:mod:`studies.real_model.pinned`'s checkout), so later
   changes to main never change a running study's code.
4. The runs: the learning gate's runs first (base and long of its seeds), its
   verdict written once to ``learning_gate.json`` (a failed gate stops the
   study), then every other (regime, seed) run, seed by seed.  Each run's
   ``job.json`` and compressed transcripts (``episodes.jsonl.gz``) land in
   ``runs/<regime>-seed<s>/``; a rerun skips finished runs.
5. ``--report``: reads the committed runs (:mod:`studies.real_model_v4.report`):
   until all of them have landed, prints the progress; then writes
   ``results.json`` and ``results.md`` (the primary tests and their verdicts,
   the secondary figures, the cost, the gates).

Every step but the pilot refuses a design whose hash differs from the
launched one (:func:`studies.preregistration.check_launched`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agent_envs.evaluation import EvalResult
from studies import report as kit
from studies.preregistration import (
    PreregistrationError,
    check_launched,
    design_hash,
    launch,
    write_once,
)
from studies.real_model_v4 import design as d
from studies.runner import Job, code_commit, run_jobs

OUT, WORK = Path("docs/real_model_study/v4"), Path("runs/real_model_v4")
#: Tasks per pilot job (the pilot is durable like the study).
PILOT_CHUNK = 4


def settings(work: Path) -> dict[str, Any]:
    """Every setting a job reads (:func:`studies.real_model.jobs.train_config`), from the design."""
    from baselines.llm.models.resolve import resolve_model
    from studies.real_model.design import split

    train, held_out = split(d.ENV_ID, d.TRAIN_TASKS, d.EVAL_TASKS, d.FEW_SHOT)
    model = os.fspath(resolve_model(d.MODEL))
    return {
        "env_id": d.ENV_ID,
        "quick": False,
        "device": "cpu",
        "threads": 1,
        "dtype": d.DTYPE,
        "few_shot": d.FEW_SHOT,
        "temperature": d.TEMPERATURE,
        "max_new_tokens": d.MAX_NEW_TOKENS,
        "lora": {"rank": d.LORA_RANK, "targets": list(d.LORA_TARGETS)},
        "lora_layers": None,
        "train_tasks": train,
        "eval_tasks": held_out,
        "base_model": model,
        "base_path": model,
        "samples": d.EVAL_SAMPLES,
        "ks": list(d.KS),
        "steps": d.STEPS,
        "k": d.K,
        "tasks_per_step": d.TASKS_PER_STEP,
        "learning_rate": d.LEARNING_RATE,
        "beta": d.BETA,
        "micro_batch": d.MICRO_BATCH,
        "collapse_invalid": d.COLLAPSE_INVALID,
        "t_grid": list(d.T_GRID),
        "step_quality": d.STEP_QUALITY_STATES,
        "step_quality_seed": d.STEP_QUALITY_SEED,
        "work": str(work),
    }


def declare_jobs(s: dict[str, Any], out: Path, work: Path) -> list[Job]:
    """Every (regime, seed) job: the learning gate's first, then the rest seed by seed."""
    from agent_envs.env_stack import BudgetRegime

    jobs = []
    for seed in range(d.SEEDS):
        for name, regime in d.REGIMES.items():
            slug = f"{name}-seed{seed}"
            budget = None
            if regime is not None:
                budget = BudgetRegime(tuple(regime["budgets"])).to_json()
            extra = regime or {"process_reward": 0.0, "reward": "outcome"}
            job_settings = {
                **s,
                "budget": budget,
                "process_reward": extra["process_reward"],
                "reward": extra["reward"],
                "run": str(work / slug),
            }
            jobs.append(Job(name, seed, str(out / "runs" / slug), job_settings))
    gate = {("base", seed) for seed in d.GATES["learning"]["seeds"]}
    gate |= {("long", seed) for seed in d.GATES["learning"]["seeds"]}
    return sorted(jobs, key=lambda job: (job.regime, job.seed) not in gate)


def run_job(job: Job) -> dict[str, Any]:
    """One run (:func:`studies.real_model.jobs.run_job`), its transcripts kept beside its record."""
    from studies.real_model.jobs import run_job as train_and_evaluate

    summary = train_and_evaluate(job)
    source = Path(job.settings["run"]) / "episodes.jsonl"
    Path(job.folder).mkdir(parents=True, exist_ok=True)
    target = Path(job.folder) / "episodes.jsonl.gz"
    with source.open("rb") as raw, gzip.GzipFile(target, "wb", mtime=0) as packed:
        shutil.copyfileobj(raw, packed)
    return {**summary, "design_sha256": design_hash(d.design())}


def _pilot(out: Path, s: dict[str, Any]) -> int:
    """Run the pilot (durable, by chunks of tasks) and write the calibration gate once."""
    from studies.real_model.jobs import pilot_job

    gate = d.GATES["calibration"]
    tasks = s["train_tasks"][: gate["tasks"]]
    pilot = {**s, "pilot_t_grid": list(d.T_GRID), "pilot_samples": gate["samples"]}
    jobs = [
        Job("pilot", first, str(out / "pilot" / f"tasks{first}"), {**pilot, "tasks": chunk})
        for first in range(0, len(tasks), PILOT_CHUNK)
        for chunk in [tasks[first : first + PILOT_CHUNK]]
    ]
    done = run_jobs(jobs, pilot_job, log=lambda line: print(line, flush=True))
    results = [EvalResult.from_dict(job["result"]) for job in done]
    counts = [row for r in results for row in (r.success_counts / r.samples).tolist()]
    per_task = {t: [row[i] for row in counts] for i, t in enumerate(d.T_GRID)}
    record = {
        "design_sha256": design_hash(d.design()),
        "tasks": len(counts),
        "samples": gate["samples"],
        "gate": d.calibration_gate(per_task),
        "invalid_rate": float(
            sum(r.diagnostics["invalid_action_rate"] for r in results) / len(results)
        ),
        "process_cpu_seconds": round(sum(job["seconds"]["process_cpu"] for job in done), 1),
        "commit": code_commit(),
    }
    write_once(out / "calibration.json", kit.jsonable(record))
    print(json.dumps(kit.jsonable(record), indent=1))
    return 0 if record["gate"]["passed"] else 3


def _calibrated(out: Path) -> None:
    """Refuse to go on without a passed pilot of this very design.

    Raises:
        PreregistrationError: no pilot, a pilot of another design, or a failed gate.
    """
    try:
        record = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PreregistrationError(f"no {out / 'calibration.json'}: run --calibrate") from None
    if record["design_sha256"] != design_hash(d.design()):
        raise PreregistrationError("the pilot ran another design: a new version folder")
    if not record["gate"]["passed"]:
        raise PreregistrationError(f"the calibration gate failed ({out / 'calibration.json'})")


def _study(out: Path, work: Path) -> int:
    """Run the learning gate's runs, its verdict, then the rest (resuming what finished)."""
    from studies.real_model.jobs import setup_process

    setup_process("cpu", 1)
    jobs = declare_jobs(settings(work), out, work)
    log = lambda line: print(line, flush=True)  # noqa: E731
    seeds = d.GATES["learning"]["seeds"]
    gate = [job for job in jobs if job.regime in ("base", "long") and job.seed in seeds]
    done = run_jobs(gate, run_job, log=log, fresh_process=True)
    runs: dict[str, dict[int, Any]] = {}
    for job in done:
        runs.setdefault(job["regime"], {})[job["seed"]] = job
    record = d.learning_gate(runs)
    write_once(out / "learning_gate.json", kit.jsonable(record))
    if not record["passed"]:
        print(f"the learning gate failed ({out / 'learning_gate.json'}): the study stops")
        return 3
    done = run_jobs([job for job in jobs if job not in gate], run_job, log=log, fresh_process=True)
    print(f"{len(done) + len(gate)} of {len(jobs)} runs finished")
    return 0


def _pinned(out: Path, work: Path) -> int:
    """Run the study from a worktree at the launched commit; return its exit status."""
    from studies.real_model.pinned import checkout

    record = check_launched(out, d.design())
    commit = record["commit"]
    for path in sorted((out / "runs").glob("*/job.json")):
        if json.loads(path.read_text()).get("commit") != commit:
            raise PreregistrationError(f"{path} was run by another commit than {commit[:12]}")
    tree = checkout(work / "checkout", commit)
    command = [sys.executable, "-m", "studies.real_model_v4", "--out", str(out), "--work"]
    print(f"running the v4 study at {commit[:12]} from {tree}", flush=True)
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([*command, str(work)], cwd=tree, env=environment).returncode


def build_parser() -> argparse.ArgumentParser:
    """Return the study's command-line parser."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    step = parser.add_mutually_exclusive_group()
    step.add_argument("--calibrate", action="store_true", help="the pilot and its gate")
    step.add_argument("--launch", action="store_true", help="record the launch (once)")
    step.add_argument("--pinned", action="store_true", help="run from the launched commit")
    step.add_argument(
        "--report", action="store_true", help="the results (the progress until every run landed)"
    )
    parser.add_argument("--why", help="--launch: what this version changes, and why")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--work", type=Path, default=WORK)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one step of the study; return its exit status (2: refused, 3: a gate failed)."""
    args = build_parser().parse_args(argv)
    out, work = args.out.resolve(), args.work.resolve()
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # the CPU path: the project never requires a GPU
    started = time.perf_counter()
    try:
        if args.calibrate:
            return _pilot(out, settings(work))
        if args.report:
            from studies.real_model_v4.report import report

            return report(out)
        _calibrated(out)
        if args.launch:
            if not args.why:
                raise PreregistrationError("--launch needs --why: what this version changes")
            record = launch(out, d.design(), args.why)
            print(f"launched v4 at {record['commit'][:12]}, design {record['design_sha256'][:12]}")
            return 0
        if args.pinned:
            return _pinned(out, work)
        check_launched(out, d.design())
        status = _study(out, work)
        print(f"this sitting: {time.perf_counter() - started:.0f} s wall")
        return status
    except PreregistrationError as error:
        print(f"studies.real_model_v4: {error}", file=sys.stderr)
        return 2
