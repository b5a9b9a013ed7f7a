"""The BudgetMix study on SmolLM2-135M-Instruct: ``python -m studies.real_model``.

``--quick`` runs the same code on the tiny model built from config (a CI
check of minutes); ``--calibrate`` writes the pilot (the base model on
training tasks against the bands); ``--device cuda`` is the GPU path, which
is untested until a GPU run exists: training then runs where TRL puts it
(the GPU), while evaluation stays on the CPU, as ``train-llm``'s does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from agent_envs.evaluation import EvalResult
from agent_envs.files import atomic_write_text
from studies import report as kit
from studies.real_model import design, report
from studies.real_model.jobs import run_job, setup_process, warm_start_job
from studies.runner import Job, finished, run_jobs


def build_parser() -> argparse.ArgumentParser:
    """Return the study's command-line parser."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the tiny model, miniature sizes")
    parser.add_argument("--calibrate", action="store_true", help="the pilot: base model only")
    parser.add_argument("--env", default=design.ENV_ID, help=f"env id ({design.ENV_ID})")
    parser.add_argument("--seeds", type=int, default=design.SEEDS, help="training seeds")
    parser.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu", help="cuda: the GPU path (untested)"
    )
    parser.add_argument("--workers", type=int, default=design.WORKERS, help="parallel runs")
    parser.add_argument(
        "--threads", type=int, help=f"torch threads a run ({design.THREADS}; --quick: 1)"
    )
    parser.add_argument(
        "--pilot-tasks",
        type=int,
        help=f"--calibrate: training tasks ({design.CALIBRATION['tasks']}; --quick: all)",
    )
    parser.add_argument(
        "--max-runs", type=int, help="run at most this many unfinished runs, then stop"
    )
    parser.add_argument("--no-plots", action="store_true", help="no surface plots")
    parser.add_argument("--out", type=Path, default=Path("docs/real_model_study"))
    parser.add_argument("--work", type=Path, default=Path("runs/real_model"))
    return parser


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """Every setting one job reads, for this command line."""
    q = design.QUICK if args.quick else {}
    few_shot = 0 if args.quick else design.FEW_SHOT
    train, held_out = design.split(
        args.env,
        q.get("train_tasks", design.TRAIN_TASKS),
        q.get("eval_tasks", design.EVAL_TASKS),
        few_shot,
    )
    if not args.quick:
        from baselines.llm.models import resolve_model

        base_model = base_path = os.fspath(resolve_model(design.MODEL))
    else:
        base_model = base_path = str(args.work / "base")
    return {
        "env_id": args.env,
        "quick": args.quick,
        "device": args.device,
        # Two threads of the tiny model wait on each other: one is ten times cheaper.
        "threads": args.threads or (1 if args.quick else design.THREADS),
        "few_shot": few_shot,
        "train_tasks": train,
        "eval_tasks": held_out,
        "base_model": base_model,
        "base_path": base_path,
        "samples": q.get("samples", design.EVAL_SAMPLES),
        "steps": q.get("steps", design.STEPS),
        "k": q.get("k", design.K),
        "tasks_per_step": q.get("tasks_per_step", design.TASKS_PER_STEP),
        "t_grid": q.get("t_grid", design.T_GRID),
        "step_quality": q.get("step_quality", design.STEP_QUALITY_STATES),
        "seeds": q.get("seeds", args.seeds),
        "pilot_tasks": args.pilot_tasks or q.get("train_tasks", design.CALIBRATION["tasks"]),
        "pilot_samples": q.get("samples", design.CALIBRATION["samples"]),
    }


def declare_jobs(s: dict, out: Path, work: Path) -> list[Job]:
    """One job per (regime, seed), seed by seed; its record in ``out``, its model in ``work``."""
    jobs = []
    for seed in range(s["seeds"]):
        for name, (budget, coef) in design.regimes(s["t_grid"]).items():
            slug = f"{name.replace('+', '-')}-seed{seed}"
            settings_ = {
                **s,
                "budget": None if budget is None else budget.to_json(),
                "process_reward": coef,
                "run": str(work / slug),
            }
            jobs.append(Job(name, seed, str(out / "runs" / slug), settings_, phase=1))
    return jobs


def pilot_jobs(s: dict, out: Path) -> list[Job]:
    """The pilot's jobs: the base model on ``CALIBRATION["chunk"]`` training tasks each."""
    tasks, chunk = s["train_tasks"][: s["pilot_tasks"]], design.CALIBRATION["chunk"]
    folder = out / "pilot"
    return [
        Job("pilot", first, str(folder / f"tasks{first}"), {**s, "tasks": tasks[first:][:chunk]})
        for first in range(0, len(tasks), chunk)
    ]


def calibrate(args: argparse.Namespace, s: dict) -> int:
    """The pilot: the base model's Pass@(1,T) on training tasks, against the bands.

    Durable like the study: each chunk of tasks writes its ``job.json`` and a
    rerun skips finished chunks.
    """
    from studies.real_model.jobs import pilot_job

    done = run_jobs(pilot_jobs(s, args.out), pilot_job, log=lambda line: print(line, flush=True))
    results = [EvalResult.from_dict(job["result"]) for job in done]
    cpu = sum(job["seconds"]["process_cpu"] for job in done)
    lines, record = report.calibration_lines(results, args.env, cpu, kit.load_average())
    atomic_write_text(args.out / "pilot.md", "\n".join(lines) + "\n")
    atomic_write_text(args.out / "pilot.json", json.dumps(kit.jsonable(record), indent=1) + "\n")
    print("\n".join(lines))
    return 0


def _header(
    args: argparse.Namespace, s: dict, done: list[dict], started: float, balance: dict
) -> list[str]:
    cpu = [job["seconds"]["process_cpu"] for job in done]
    return [
        f"# The BudgetMix study on {'the tiny model (--quick)' if args.quick else design.MODEL}",
        "",
        f"Command: `python -m studies.real_model {' '.join(sys.argv[1:])}`",
        "",
        f"{len(done)} runs ({s['seeds']} seeds x {len(design.regimes())} regimes) on "
        f"{args.env}; CPU seconds per run: mean {sum(cpu) / len(cpu):.0f}, total "
        f"{sum(cpu):.0f} (process time, {s['threads']} torch threads; the runs finished in "
        f"this sitting took {time.perf_counter() - started:.0f} s wall, load "
        f"{kit.load_average()}).",
        "",
        f"Split: {len(s['train_tasks'])} training and {len(s['eval_tasks'])} held-out tasks, "
        f"distinct instances, none a few-shot example's; oracle turns {balance['mean_a']:.2f} "
        f"and {balance['mean_b']:.2f} (permutation p {balance['p']:.3f}).",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    """Run the study, its quick miniature or its calibration pilot; return the exit status."""
    args = build_parser().parse_args(argv)
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # the project never requires a GPU
    try:
        s, started = settings(args), time.perf_counter()
    except ValueError as error:  # an env too small for the split, say
        print(f"studies.real_model: {error}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    if args.quick:
        base = Job(
            "base model",
            0,
            str(args.out / "runs" / "base-model"),
            {**s, "run": s["base_path"], "warm_start": design.QUICK["warm_start"]},
        )
        run_jobs([base], warm_start_job)
    if args.calibrate:
        return calibrate(args, s)
    setup_process(args.device, s["threads"])
    jobs = declare_jobs(s, args.out, args.work)
    if args.max_runs is not None:  # a sitting's share: the first unfinished runs only
        pending = [job for job in jobs if finished(job) is None][: args.max_runs]
        jobs = [job for job in jobs if finished(job) is not None or job in pending]
    done = run_jobs(
        jobs, run_job, args.workers, lambda line: print(line, flush=True), fresh_process=True
    )
    total = len(declare_jobs(s, args.out, args.work))
    if len(done) < total:
        print(f"{len(done)} of {total} runs finished; the same command continues the study")
        return 0
    runs: dict[str, list[EvalResult]] = {}
    for job in sorted(done, key=lambda job: job["seed"]):
        runs.setdefault(job["regime"], []).append(EvalResult.from_dict(job["result"]))
    lines, record = report.analyse(runs, None if args.no_plots else args.out)
    record["settings"] = s
    record["split"] = design.split_check(args.env, s["train_tasks"], s["eval_tasks"])
    kit.write_report(args.out, _header(args, s, done, started, record["split"]) + lines, record)
    print(f"wrote {args.out / 'results.md'}")
    return 0
