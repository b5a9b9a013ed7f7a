"""The measured cost of a real-model study version, before it is launched.

``python -m studies.real_model.cost [--version v4] [--dtype bfloat16]``
trains each trained regime (seed 0, the version's settings) for ``--steps``
GRPO steps, reading this process's CPU time (``time.process_time``: every
thread, user and system) at each step's log line, and evaluates the base
model as a study run does (held-out tasks, the T grid, step quality,
transcripts) on ``--eval-tasks`` tasks.  A step's cost is the mean of the
steps after the first (the first also loads the model; that load is counted
once per run).  It prints the whole study's CPU-hours and writes
``cost.json`` (``cost-<version>-<dtype>.json`` for another version or dtype)
into ``--out``; no model is kept.  The version's target and limit
(:data:`HOURS`) decide: over the limit, the study is not launched.

Run it on one thread, beside other work if need be: CPU seconds, not wall
time, are the figures that carry over to another machine's load.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_envs.files import atomic_write_text
from studies import report as kit
from studies.real_model import design
from studies.runner import Job, code_commit

#: CPU-hours per version: the target of the whole study, and the limit above which it
#: is not launched.
HOURS = {"v3": (8.0, 12.0), "v4": (14.0, 18.0)}
TARGET_HOURS, LIMIT_HOURS = HOURS["v3"]


def _settings(steps: int) -> dict[str, Any]:
    """The v3 study's settings for one seed-0 job (what ``train_config`` reads)."""
    from baselines.llm.models.resolve import resolve_model

    train, held_out = design.split(
        design.ENV_ID, design.TRAIN_TASKS, design.EVAL_TASKS, design.FEW_SHOT
    )
    return {
        "quick": False,
        "env_id": design.ENV_ID,
        "base_model": os.fspath(resolve_model(design.MODEL)),
        "base_path": os.fspath(resolve_model(design.MODEL)),
        "train_tasks": train,
        "eval_tasks": held_out,
        "k": design.K,
        "tasks_per_step": design.TASKS_PER_STEP,
        "steps": steps,
        "few_shot": design.FEW_SHOT,
        "samples": design.EVAL_SAMPLES,
        "t_grid": design.T_GRID,
        "step_quality": design.STEP_QUALITY_STATES,
    }


def plan(version: str, dtype: str) -> dict[str, Any]:
    """One version's seed-0 job per regime (``None``: the base), its steps, seeds and tasks."""
    if version == "v3":
        s = {**_settings(design.STEPS), "dtype": dtype}
        jobs = {}
        for name, (budget, coef) in design.regimes().items():
            budget_json = None if budget is None else budget.to_json()
            jobs[name] = Job(name, 0, "", {**s, "budget": budget_json, "process_reward": coef})
        return {"jobs": jobs, "steps": design.STEPS, "seeds": design.SEEDS}
    from studies.real_model_v4 import cli as v4
    from studies.real_model_v4 import design as v4_design

    s = {**v4.settings(Path(tempfile.gettempdir())), "dtype": dtype}
    jobs = {job.regime: job for job in v4.declare_jobs(s, Path(), Path()) if job.seed == 0}
    return {"jobs": jobs, "steps": v4_design.STEPS, "seeds": v4_design.SEEDS}


def measure_steps(job: Job, steps: int) -> dict[str, Any]:
    """Train ``job``'s regime for ``steps`` GRPO steps; return CPU seconds at each step's log."""
    from agent_envs.env_stack import BudgetRegime
    from baselines.llm.training.train import train_llm
    from studies.real_model.jobs import train_config

    job = Job(job.regime, 0, "", {**job.settings, "steps": steps})
    config = train_config(job, BudgetRegime(**job.settings["budget"]))
    marks: list[float] = []
    started = time.process_time()

    def log(line: str) -> None:
        print(f"[{job.regime}] {line}", flush=True)
        if line.startswith("step "):
            marks.append(time.process_time() - started)

    with tempfile.TemporaryDirectory() as folder:
        train_llm(config, Path(folder) / "run", log=log)
    per_step = [b - a for a, b in itertools.pairwise(marks)]
    return {"cpu_at_step_logs": marks, "per_step": per_step, "load": marks[0] - per_step[0]}


def measure_evaluation(job: Job, tasks: int) -> dict[str, Any]:
    """Evaluate the base model as a study run does, on ``tasks`` held-out tasks; its CPU."""
    from baselines.llm.training.train import evaluate_model
    from studies.real_model.jobs import train_config

    s = job.settings
    started = time.process_time()
    with tempfile.TemporaryDirectory() as folder:
        result = evaluate_model(
            s["base_path"],
            train_config(job, None),
            budgets=s["t_grid"],
            tasks=s["eval_tasks"][:tasks],
            samples=s["samples"],
            ks=s.get("ks", design.KS),
            log_path=Path(folder) / "episodes.jsonl",
            step_quality=s["step_quality"],
            step_quality_seed=s.get("step_quality_seed", design.STEP_QUALITY_SEED),
            transcripts=True,
        )
    return {"tasks": tasks, "cpu": time.process_time() - started, "surface": result.surface}


def estimate(
    steps: dict[str, dict[str, Any]],
    evaluation: dict[str, Any],
    run_steps: int = design.STEPS,
    eval_tasks: int = design.EVAL_TASKS,
    seeds: int = design.SEEDS,
) -> dict[str, Any]:
    """One run's and the whole study's CPU seconds, from the measured steps and evaluation."""
    per_eval = evaluation["cpu"] / evaluation["tasks"] * eval_tasks
    runs = {"base": per_eval}
    for regime, measured in steps.items():
        step = sum(measured["per_step"]) / len(measured["per_step"])
        runs[regime] = measured["load"] + run_steps * step + per_eval
    seed = sum(runs.values())
    return {
        "cpu_per_step": {r: sum(m["per_step"]) / len(m["per_step"]) for r, m in steps.items()},
        "cpu_per_run": runs,
        "cpu_per_seed": seed,
        "cpu_hours_whole_study": seeds * seed / 3600,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure, estimate, print and write the cost record; return 0, or 3 over the limit."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--version", choices=tuple(HOURS), default="v3")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps per regime (3)")
    parser.add_argument("--eval-tasks", type=int, default=4, help="held-out tasks to time (4)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("docs/real_model_study"))
    args = parser.parse_args(argv)
    from studies.real_model.jobs import setup_process

    setup_process("cpu", args.threads)
    version = plan(args.version, args.dtype)
    jobs = version["jobs"]
    held_out = len(jobs["base"].settings["eval_tasks"])
    if args.steps < 2 or not 1 <= args.eval_tasks <= held_out:
        print(
            f"studies.real_model.cost: --steps >= 2 and 1 <= --eval-tasks <= {held_out}",
            file=sys.stderr,
        )
        return 2
    trained = [name for name, job in jobs.items() if job.settings["budget"] is not None]
    steps = {regime: measure_steps(jobs[regime], args.steps) for regime in trained}
    evaluation = measure_evaluation(jobs["base"], args.eval_tasks)
    figures = estimate(steps, evaluation, version["steps"], held_out, version["seeds"])
    target, limit = HOURS[args.version]
    record = {
        "version": args.version,
        "dtype": args.dtype,
        "commit": code_commit(),
        "threads": args.threads,
        "load_average": kit.load_average(),
        "measured": {"steps": steps, "evaluation": evaluation},
        "estimate": figures,
        "target_hours": target,
        "limit_hours": limit,
    }
    name = (
        "cost.json"
        if (args.version, args.dtype) == ("v3", "float32")
        else (f"cost-{args.version}-{args.dtype}.json")
    )
    atomic_write_text(args.out / name, json.dumps(kit.jsonable(record), indent=1) + "\n")
    hours = figures["cpu_hours_whole_study"]
    print(json.dumps(kit.jsonable(record), indent=1))
    print(f"the whole study: {hours:.2f} CPU-hours (target {target}, limit {limit})")
    return 3 if hours > limit else 0


if __name__ == "__main__":
    raise SystemExit(main())
