"""The BudgetMix study on SmolLM2-135M-Instruct: ``python -m studies.real_model``.

The order is the design's: ``--calibrate`` writes the pilot (the base model
on training tasks against the bands); the study itself starts only on a
pilot whose bands are met, runs the learning gate's jobs first
(:mod:`studies.real_model.gate`), writes ``gate.json`` and stops there if the
gate fails; then it runs every other (regime, seed) run and, once all have
finished, the report.  Run it from a pinned checkout
(:mod:`studies.real_model.pinned`).  ``--quick`` runs the same code on the
tiny model built from config (a CI check of minutes; its gate is written, not
enforced); ``--device cuda`` is the GPU path, which is untested until a GPU
run exists: training then runs where TRL puts it (the GPU), while evaluation
stays on the CPU, as ``train-llm``'s does.
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
from studies.real_model.gate import gate_jobs, gate_lines, learning_gate
from studies.real_model.jobs import run_job, setup_process, warm_start_job
from studies.runner import Job, add_backend_arguments, backend_of, finished, run_jobs


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
    add_backend_arguments(parser)
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
        from baselines.llm.models.resolve import resolve_model

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

    log = lambda line: print(line, flush=True)  # noqa: E731
    done = run_jobs(pilot_jobs(s, args.out), pilot_job, log=log, **backend_of(args))
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


class StudyStop(Exception):
    """The study cannot go on: a gate not passed, or no pilot; the message says which."""


def check_pilot(out: Path) -> None:
    """Refuse to start the study without a pilot whose bands are met at this design.

    Raises:
        StudyStop: no pilot, or its bands are not met.
    """
    try:
        pilot = json.loads((out / "pilot.json").read_text())
    except FileNotFoundError:
        raise StudyStop(f"no {out / 'pilot.json'}: run --calibrate first") from None
    if pilot["short"] != pilot["surface"][str(design.SHORT)] or not pilot["bands_met"]:
        raise StudyStop(f"the pilot ({out / 'pilot.md'}) does not meet the bands at this design")


def run_gate(args: argparse.Namespace, jobs: list[Job], log: Any) -> None:
    """Run the learning gate's jobs; write ``gate.json`` and ``gate.md`` once all have finished.

    Raises:
        StudyStop: the gate failed (not under ``--quick``).
    """
    done = run_jobs(jobs, run_job, args.workers, log, fresh_process=True, **backend_of(args))
    if len(done) < len(jobs):
        return
    runs: dict[str, list[EvalResult]] = {}
    for job in done:
        runs.setdefault(job["regime"], []).append(EvalResult.from_dict(job["result"]))
    record = learning_gate(runs)
    cpu = {f"{job['regime']} seed {job['seed']}": job["seconds"]["process_cpu"] for job in done}
    record["process_cpu_seconds"] = cpu
    atomic_write_text(args.out / "gate.md", "\n".join(gate_lines(record, cpu)))
    atomic_write_text(args.out / "gate.json", json.dumps(kit.jsonable(record), indent=1) + "\n")
    if not record["passed"] and not args.quick:
        raise StudyStop(f"the learning gate failed ({args.out / 'gate.md'}): change the design")


def _sitting(jobs: list[Job], limit: int | None) -> list[Job]:
    """The jobs a sitting runs: every finished one, and at most ``limit`` unfinished ones."""
    if limit is None:
        return jobs
    pending = [job for job in jobs if finished(job) is None][:limit]
    return [job for job in jobs if finished(job) is not None or job in pending]


def main(argv: list[str] | None = None) -> int:
    """Run the study, its quick miniature or its calibration pilot; return the exit status."""
    args = build_parser().parse_args(argv)
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # the project never requires a GPU
    try:
        s, started = settings(args), time.perf_counter()
        if not (args.calibrate or args.quick):
            check_pilot(args.out)
    except (ValueError, StudyStop) as error:  # an env too small for the split, say
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
        run_jobs([base], warm_start_job, **backend_of(args))
    if args.calibrate:
        return calibrate(args, s)
    setup_process(args.device, s["threads"])
    study = declare_jobs(s, args.out, args.work)
    gate = gate_jobs(study, s, args.out, args.work)
    log = lambda line: print(line, flush=True)  # noqa: E731
    sitting = _sitting(gate + [job for job in study if job not in gate], args.max_runs)
    try:
        run_gate(args, [job for job in gate if job in sitting], log)
    except StudyStop as error:
        print(f"studies.real_model: {error}", file=sys.stderr)
        return 3
    if any(finished(job) is None for job in gate):
        print("the learning gate has not finished; the same command continues it")
        return 0
    to_run = [job for job in study if job in sitting]
    done = run_jobs(to_run, run_job, args.workers, log, fresh_process=True, **backend_of(args))
    if len(done) < len(study):
        print(f"{len(done)} of {len(study)} runs finished; the same command continues the study")
        return 0
    runs: dict[str, list[EvalResult]] = {}
    for job in sorted(done, key=lambda job: job["seed"]):
        runs.setdefault(job["regime"], []).append(EvalResult.from_dict(job["result"]))
    lines, record = report.analyse(runs, None if args.no_plots else args.out)
    record["moves"] = report.move_table(done)
    lines += report.move_lines(record["moves"])
    record["settings"] = s
    record["split"] = design.split_check(args.env, s["train_tasks"], s["eval_tasks"])
    kit.write_report(args.out, _header(args, s, done, started, record["split"]) + lines, record)
    print(f"wrote {args.out / 'results.md'}")
    return 0
