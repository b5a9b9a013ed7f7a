"""The measured cost of the real-model study, before it is launched.

``python -m studies.real_model.cost`` trains each trained regime (short, long
and mix; seed 0, the study's settings) for ``--steps`` GRPO steps, reading
this process's CPU time (``time.process_time``: every thread, user and
system) at each step's log line, and evaluates the base model as a study run
does (held-out tasks, the T grid, step quality, transcripts) on
``--eval-tasks`` tasks.  A step's cost is the mean of the steps after the
first (the first also loads the model; that load is counted once per run).
It prints the whole study's CPU-hours and writes ``cost.json`` into
``--out``; no model is kept.  The target is 8 CPU-hours; over 12 the study
is not launched.

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

#: CPU-hours: the target of the whole study, and the limit above which it is not launched.
TARGET_HOURS, LIMIT_HOURS = 8.0, 12.0


def _settings(steps: int) -> dict[str, Any]:
    """The study's settings for one seed-0 job (what ``train_config`` reads)."""
    from baselines.llm.models import resolve_model

    train, held_out = design.split(
        design.ENV_ID, design.TRAIN_TASKS, design.EVAL_TASKS, design.FEW_SHOT
    )
    return {
        "quick": False,
        "env_id": design.ENV_ID,
        "base_model": os.fspath(resolve_model(design.MODEL)),
        "train_tasks": train,
        "eval_tasks": held_out,
        "k": design.K,
        "tasks_per_step": design.TASKS_PER_STEP,
        "steps": steps,
        "few_shot": design.FEW_SHOT,
    }


def measure_steps(regime: str, steps: int) -> dict[str, Any]:
    """Train ``regime`` for ``steps`` GRPO steps; return CPU seconds at each step's log."""
    from baselines.llm.train import train_llm
    from studies.real_model.jobs import train_config

    budget = design.regimes()[regime][0]
    config = train_config(Job(regime, 0, "", _settings(steps)), budget)
    marks: list[float] = []
    started = time.process_time()

    def log(line: str) -> None:
        print(f"[{regime}] {line}", flush=True)
        if line.startswith("step "):
            marks.append(time.process_time() - started)

    with tempfile.TemporaryDirectory() as folder:
        train_llm(config, Path(folder) / "run", log=log)
    per_step = [b - a for a, b in itertools.pairwise(marks)]
    return {"cpu_at_step_logs": marks, "per_step": per_step, "load": marks[0] - per_step[0]}


def measure_evaluation(tasks: int) -> dict[str, Any]:
    """Evaluate the base model as a study run does, on ``tasks`` held-out tasks; its CPU."""
    from baselines.llm.train import evaluate_model
    from studies.real_model.jobs import train_config

    s = _settings(0)
    started = time.process_time()
    with tempfile.TemporaryDirectory() as folder:
        result = evaluate_model(
            s["base_model"],
            train_config(Job("base", 0, "", s), None),
            budgets=design.T_GRID,
            tasks=s["eval_tasks"][:tasks],
            samples=design.EVAL_SAMPLES,
            ks=design.KS,
            log_path=Path(folder) / "episodes.jsonl",
            step_quality=design.STEP_QUALITY_STATES,
            step_quality_seed=design.STEP_QUALITY_SEED,
            transcripts=True,
        )
    return {"tasks": tasks, "cpu": time.process_time() - started, "surface": result.surface}


def estimate(steps: dict[str, dict[str, Any]], evaluation: dict[str, Any]) -> dict[str, Any]:
    """One run's and the whole study's CPU seconds, from the measured steps and evaluation."""
    per_eval = evaluation["cpu"] / evaluation["tasks"] * design.EVAL_TASKS
    runs = {"base": per_eval}
    for regime, measured in steps.items():
        step = sum(measured["per_step"]) / len(measured["per_step"])
        runs[regime] = measured["load"] + design.STEPS * step + per_eval
    seed = sum(runs.values())
    gate_extra = design.GATES["seeds"] * runs["long"] * 1.6  # all-layer LoRA: ~1.6x the update
    return {
        "cpu_per_step": {r: sum(m["per_step"]) / len(m["per_step"]) for r, m in steps.items()},
        "cpu_per_run": runs,
        "cpu_per_seed": seed,
        "cpu_hours_whole_study": design.SEEDS * seed / 3600,
        "cpu_hours_gate_all_layer_runs_rough": gate_extra / 3600,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure, estimate, print and write ``cost.json``; return 0, or 3 over the limit."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps per regime (3)")
    parser.add_argument("--eval-tasks", type=int, default=4, help="held-out tasks to time (4)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("docs/real_model_study"))
    args = parser.parse_args(argv)
    if args.steps < 2 or not 1 <= args.eval_tasks <= design.EVAL_TASKS:
        print("studies.real_model.cost: --steps >= 2 and 1 <= --eval-tasks <= 16", file=sys.stderr)
        return 2
    from studies.real_model.jobs import setup_process

    setup_process("cpu", args.threads)
    trained = [name for name, (budget, _) in design.regimes().items() if budget is not None]
    steps = {regime: measure_steps(regime, args.steps) for regime in trained}
    evaluation = measure_evaluation(args.eval_tasks)
    figures = estimate(steps, evaluation)
    record = {
        "commit": code_commit(),
        "threads": args.threads,
        "load_average": kit.load_average(),
        "measured": {"steps": steps, "evaluation": evaluation},
        "estimate": figures,
    }
    atomic_write_text(args.out / "cost.json", json.dumps(kit.jsonable(record), indent=1) + "\n")
    hours = figures["cpu_hours_whole_study"]
    print(json.dumps(kit.jsonable(record), indent=1))
    print(f"the whole study: {hours:.2f} CPU-hours (target {TARGET_HOURS}, limit {LIMIT_HOURS})")
    return 3 if hours > LIMIT_HOURS else 0


if __name__ == "__main__":
    raise SystemExit(main())
