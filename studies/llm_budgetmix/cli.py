"""The paper's experiment in miniature, with an LLM: GRPO under turn budgets vs BudgetMix (v3).

``python -m studies.llm_budgetmix``: warm-start once per training seed, run every (regime, seed)
job through :func:`studies.runner.run_jobs`, write the report.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.evaluation import EvalResult
from agent_envs.files import atomic_write_text
from studies import report as kit
from studies.llm_budgetmix import report
from studies.llm_budgetmix.design import (
    BETA,
    ENV_ID,
    EVAL_SAMPLES,
    EVAL_SECRETS,
    FULL_SEEDS,
    GRPO_STEPS,
    LEARNING_RATE,
    PLAN,
    PRIMARY,
    PRIMARY_TESTS,
    SEEDS,
    STEP_QUALITY_SEED,
    STEP_QUALITY_STATES,
    TASKS_PER_STEP,
    TRAIN_TASKS,
    WARM_START_LR,
    WARM_START_STEPS,
    WORKERS,
    K,
    regimes,
    split_tasks,
)
from studies.llm_budgetmix.jobs import declare_jobs, run_job, warm_start_job, warm_start_jobs
from studies.runner import Job, add_backend_arguments, backend_of, run_jobs


def build_parser() -> argparse.ArgumentParser:
    """Return the study's command-line parser."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a plumbing check (minutes)")
    parser.add_argument("--calibrate", action="store_true", help="warm start + GRPO probes")
    parser.add_argument("--probe-steps", type=int, default=8, help="GRPO steps of a probe (8)")
    parser.add_argument(
        "--full", action="store_true", help=f"{FULL_SEEDS} seeds, into docs/llm_budgetmix/full"
    )
    parser.add_argument("--out", type=Path, default=None, help="(docs/llm_budgetmix)")
    parser.add_argument("--work", type=Path, default=Path("runs/llm_budgetmix"))
    parser.add_argument("--workers", type=int, default=WORKERS)
    add_backend_arguments(parser)
    parser.add_argument("--seeds", type=int, default=None, help=f"seeds per regime ({SEEDS})")
    parser.add_argument("--steps", type=int, default=GRPO_STEPS, help=f"GRPO steps ({GRPO_STEPS})")
    return parser


def _run(jobs: list[Job], args: argparse.Namespace) -> list[dict]:
    """Run the (regime, seed) jobs, one fresh process each (the model's memory goes back)."""
    log = lambda line: print(line, flush=True)  # noqa: E731
    return run_jobs(jobs, run_job, args.workers, log, True, **backend_of(args))


def calibrate(args: argparse.Namespace, common: dict) -> int:
    """Measure the warm start and the references, then a few GRPO steps per regime."""
    started = time.perf_counter()
    probe = args.work / "probe"
    jobs = declare_jobs(regimes(PLAN), [0], {**common, "steps": args.probe_steps}, probe)
    _run(jobs, args)
    references = report.reference_results(common["eval_tasks"], common["samples"])
    lines = [
        f"# Calibration ({ENV_ID}, {time.perf_counter() - started:.0f} s, load "
        f"{kit.load_average()})",
        "",
        f"Pass@(1,T) on the held-out tasks (T = {list(PLAN.eval_budgets)}):",
        "",
    ]
    for job in jobs:
        result = EvalResult.load(Path(job.folder) / "result.json")
        steps = args.probe_steps if job.settings["budget"] else 0
        lines.append(
            f"- {job.regime} after {steps} GRPO steps: {np.round(result.surface[0], 3).tolist()}"
        )
    for name, result in references.items():
        lines.append(f"- {name}: {np.round(result.surface[0], 3).tolist()}")
    folder = lambda name, seed: probe / f"{name}-seed{seed}"  # noqa: E731
    lines += ["", *kit.grpo_training_table(list(regimes(PLAN)), folder, [0], {})]
    atomic_write_text(args.out / "calibration.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """Return this run's seeds, step counts, training and evaluation ids and attempts."""
    if args.seeds is None:
        args.seeds = FULL_SEEDS if args.full else SEEDS
    if args.out is None:
        args.out = Path("docs/llm_budgetmix") / ("full" if args.full else "")
    train_tasks, eval_tasks = split_tasks(8 if args.quick else TRAIN_TASKS, EVAL_SECRETS)
    return {
        "seeds": [0, 1] if args.quick else list(range(args.seeds)),
        "eval_tasks": eval_tasks[:4] if args.quick else eval_tasks,
        "train_tasks": train_tasks,
        "eval_secrets": list(EVAL_SECRETS),
        "samples": 2 if args.quick else EVAL_SAMPLES,
        "warm_steps": 20 if args.quick else WARM_START_STEPS,
        "grpo_steps": 2 if args.quick else args.steps,
        "k": K,
        "beta": BETA,
        "primary": PRIMARY,
        "primary_tests": [list(t) for t in PRIMARY_TESTS],
    }


def _header(args: argparse.Namespace, s: dict, run: dict, done: list[dict]) -> list[str]:
    """The report's opening: command, time and load, seconds per run, settings."""
    return [
        "# LLM BudgetMix study v3 (tiny Llama trained from scratch, GRPO with TRL)",
        "",
        f"Command: `{run['command'].strip()}`",
        "",
        f"Wall time: {run['total'] / 60:.1f} min {kit.ran_on(args.backend, args.workers)}, 1 torch "
        f"thread each, on {os.cpu_count()} CPUs; load average at start {run['load']}, at end "
        f"{kit.load_average()} (a rerun skips finished runs).  Warm starts (one per seed) "
        f"{run['warm']} s.",
        "",
        "Seconds per run (train, eval): "
        + "; ".join(f"{job['regime']} seed {job['seed']} {job['seconds']}" for job in done),
        "",
        f"Settings: {ENV_ID} (20 distinct tasks); held-out secrets {s['eval_secrets']} "
        f"(evaluation ids {s['eval_tasks']}), training ids {s['train_tasks'][0]}.."
        f"{s['train_tasks'][-1]} ({len(s['train_tasks'])} ids, the other 10 secrets); seeds "
        f"{s['seeds']}; warm start {s['warm_steps']} steps (lr {WARM_START_LR}); GRPO "
        f"{s['grpo_steps']} steps, K={K}, {TASKS_PER_STEP} tasks a step, lr {LEARNING_RATE}, "
        f"beta {BETA}, collapse guard at 50% invalid replies over 5 steps; evaluation "
        f"{s['samples']} attempts per task at temperature 1, hidden budget; step quality on "
        f"{STEP_QUALITY_STATES} reference states per task (seed {STEP_QUALITY_SEED}).",
        "",
    ]


def study(args: argparse.Namespace, s: dict, common: dict, run: dict) -> int:
    """Run every (regime, seed) job, then write ``results.md`` and ``results.json``."""
    names = list(regimes(PLAN))
    done = _run(declare_jobs(regimes(PLAN), s["seeds"], common, args.work), args)
    results: dict[str, list[Any]] = {name: [] for name in names}
    for job in sorted(done, key=lambda job: job["seed"]):
        results[job["regime"]].append(EvalResult.load(Path(job["folder"]) / "result.json"))
    references = report.reference_results(s["eval_tasks"], s["samples"])
    markdown, summary = report.analyse(names, results, references, args.out)
    folder = lambda name, seed: args.work / f"{name}-seed{seed}"  # noqa: E731
    markdown += kit.grpo_training_table(names, folder, s["seeds"], summary["training"])
    run["total"] = round(time.perf_counter() - run["started"], 1)
    settings = {key: value for key, value in s.items() if key != "warm_steps"}
    summary.update(command=run["command"], settings=settings, seconds=run["total"])
    kit.write_report(args.out, _header(args, s, run, done) + markdown, summary)
    print(f"wrote {args.out / 'results.md'} ({run['total'] / 60:.1f} min)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the study (or its calibration); return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if (args.seeds or 2) < 2:
        parser.error(f"--seeds must be at least 2 (seed-level statistics), got {args.seeds}")
    s = _settings(args)
    run = {
        "command": "python -m studies.llm_budgetmix " + " ".join(argv or sys.argv[1:]),
        "started": time.perf_counter(),
        "load": kit.load_average(),
    }
    # One warm start per training seed (the calibration probes seed 0's), in parallel.
    seeds = [0] if args.calibrate else s["seeds"]
    warm = warm_start_jobs(seeds, s["train_tasks"], s["warm_steps"], args.work)
    warmed = run_jobs(warm, warm_start_job, args.workers, **backend_of(args))
    run["warm"] = [job["seconds"] for job in warmed]
    common = {
        "warm_root": str(args.work),
        "tasks": s["train_tasks"],
        "steps": s["grpo_steps"],
        "eval_tasks": s["eval_tasks"],
        "samples": s["samples"],
        "step_quality": 2 if args.quick else STEP_QUALITY_STATES,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    return calibrate(args, common) if args.calibrate else study(args, s, common, run)
