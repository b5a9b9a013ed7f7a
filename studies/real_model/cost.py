"""The measured cost of one real-model (regime, seed) run, and of the whole study.

``python -m studies.real_model.cost --steps 2`` trains the study's long
regime (seed 0, the study's settings: SmolLM2 with LoRA, few-shot examples,
K episodes on TASKS_PER_STEP training tasks a step at T=LONG) for ``--steps``
GRPO steps and reads this process's CPU time (``time.process_time``: every
thread, user and system) at each step's log line.  The first step also pays
for loading the model, so a step's cost is the mean of the later steps.  The
evaluation's cost per episode comes from the calibration pilot
(``pilot.json``: the base model's episodes at T=LONG, the same length as a
held-out episode).  It prints the figures and writes ``cost.json`` into
``--out``; no model is kept.

Run it with ``nice`` on 1 thread beside other work; CPU seconds, not wall
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
from studies.runner import Job

#: CPU seconds per step-quality state for SmolLM2, measured by
#: ``benchmarks/llm_step_quality_cost.py`` (docs/evaluation.md, "Cost").
STEP_QUALITY_CPU_PER_STATE = 1.53


def measure_steps(steps: int, threads: int) -> dict[str, Any]:
    """Train the long regime for ``steps`` GRPO steps; return CPU seconds at each step's log."""
    from baselines.llm.models import resolve_model
    from baselines.llm.train import train_llm
    from studies.real_model.jobs import setup_process, train_config

    setup_process("cpu", threads)
    train, _ = design.split(design.ENV_ID, design.TRAIN_TASKS, design.EVAL_TASKS, design.FEW_SHOT)
    model = os.fspath(resolve_model(design.MODEL))
    settings = {
        "quick": False,
        "env_id": design.ENV_ID,
        "base_model": model,
        "train_tasks": train,
        "k": design.K,
        "tasks_per_step": design.TASKS_PER_STEP,
        "steps": steps,
        "few_shot": design.FEW_SHOT,
    }
    long_ = design.regimes()["long"][0]
    config = train_config(Job("long", 0, "", settings), long_)
    marks: list[float] = []
    started = time.process_time()

    def log(line: str) -> None:
        print(line, flush=True)
        if line.startswith("step "):
            marks.append(time.process_time() - started)

    with tempfile.TemporaryDirectory() as folder:
        train_llm(config, Path(folder) / "run", log=log)
    total = time.process_time() - started
    per_step = [b - a for a, b in itertools.pairwise(marks)]
    return {"steps": steps, "cpu_at_step_logs": marks, "cpu_total": total, "per_step": per_step}


def estimate(measured: dict[str, Any], pilot: dict[str, Any]) -> dict[str, Any]:
    """One run's and the whole study's CPU seconds, from the measured step and the pilot."""
    step = sum(measured["per_step"]) / len(measured["per_step"])
    episodes = pilot["tasks"] * pilot["samples"]
    per_episode = pilot["process_cpu_seconds"] / episodes
    evaluation = design.EVAL_TASKS * design.EVAL_SAMPLES * per_episode
    quality = design.EVAL_TASKS * design.STEP_QUALITY_STATES * STEP_QUALITY_CPU_PER_STATE
    trained = design.STEPS * step + evaluation + quality
    base = evaluation + quality
    regimes = len(design.regimes()) - 1
    whole = design.SEEDS * (base + regimes * trained)
    cut = design.SEEDS * (base + (regimes - 1) * trained)  # long+pr cut first
    return {
        "cpu_per_grpo_step": step,
        "cpu_per_eval_episode": per_episode,
        "cpu_per_trained_run": trained,
        "cpu_per_base_run": base,
        "cpu_hours_whole_study": whole / 3600,
        "cpu_hours_without_long_pr": cut / 3600,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure, estimate, print and write ``cost.json``; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps to measure (2)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("docs/real_model_study"))
    args = parser.parse_args(argv)
    if args.steps < 2:
        print("studies.real_model.cost: --steps must be at least 2", file=sys.stderr)
        return 2
    measured = measure_steps(args.steps, args.threads)
    record = {"measured": measured, "threads": args.threads, "load_average": kit.load_average()}
    try:
        pilot = json.loads((args.out / "pilot.json").read_text())
    except FileNotFoundError:  # the steps are measured all the same; estimate after the pilot
        print(f"no {args.out / 'pilot.json'}: run --calibrate for the estimate", file=sys.stderr)
    else:
        record["estimate"] = estimate(measured, pilot)
    atomic_write_text(args.out / "cost.json", json.dumps(kit.jsonable(record), indent=1) + "\n")
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
