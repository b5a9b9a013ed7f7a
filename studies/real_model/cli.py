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
from studies.runner import Job, run_jobs


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
    parser.add_argument("--out", type=Path, default=Path("docs/real_model_study"))
    parser.add_argument("--work", type=Path, default=Path("runs/real_model"))
    return parser


def split(env_id: str, train: int, held_out: int) -> tuple[list[int], list[int]]:
    """Training and held-out task ids: GuessNumber-20's by secret, else disjoint id ranges."""
    from studies.llm_budgetmix import design as llm_study

    if env_id == llm_study.ENV_ID:
        train_ids, eval_ids = llm_study.split_tasks(train, llm_study.EVAL_SECRETS)
        return train_ids, eval_ids[:held_out]
    return (
        list(range(design.TRAIN_FIRST, design.TRAIN_FIRST + train)),
        list(range(design.EVAL_FIRST, design.EVAL_FIRST + held_out)),
    )


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """Every setting one job reads, for this command line."""
    q = design.QUICK if args.quick else {}
    train, held_out = split(
        args.env, q.get("train_tasks", design.TRAIN_TASKS), q.get("eval_tasks", design.EVAL_TASKS)
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
    }


def declare_jobs(s: dict, out: Path, work: Path) -> list[Job]:
    """One job per (regime, seed), seed by seed; its record in ``out``, its model in ``work``."""
    jobs = []
    for seed in range(s["seeds"]):
        for name, (budget, coef) in design.regimes().items():
            slug = f"{name.replace('+', '-')}-seed{seed}"
            settings_ = {
                **s,
                "budget": None if budget is None else budget.to_json(),
                "process_reward": coef,
                "run": str(work / slug),
            }
            jobs.append(Job(name, seed, str(out / "runs" / slug), settings_, phase=1))
    return jobs


def calibrate(args: argparse.Namespace, s: dict) -> int:
    """The pilot: the base model's Pass@(1,T) on training tasks, against the bands."""
    from baselines.llm.budget_spec import BudgetSpec
    from baselines.llm.train import LLMTrainConfig, evaluate_model

    config = LLMTrainConfig(
        args.env,
        BudgetSpec.fixed(design.LONG),
        model=s["base_model"],
        few_shot=0 if args.quick else design.FEW_SHOT,
        temperature=design.TEMPERATURE,
        max_new_tokens=design.MAX_NEW_TOKENS,
    )
    tasks = s["train_tasks"][: design.CALIBRATION["tasks"]]
    result = evaluate_model(
        s["base_path"],
        config,
        budgets=s["t_grid"],
        tasks=tasks,
        samples=s["samples"],
        ks=[1],
        seed=0,
    )
    lines, record = report.calibration_lines(result)
    atomic_write_text(args.out / "pilot.md", "\n".join(lines) + "\n")
    atomic_write_text(
        args.out / "pilot.json",
        json.dumps(kit.jsonable({**record, "result": result.to_dict()}), indent=1) + "\n",
    )
    print("\n".join(lines))
    return 0


def _header(args: argparse.Namespace, s: dict, done: list[dict], started: float) -> list[str]:
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
    ]


def main(argv: list[str] | None = None) -> int:
    """Run the study, its quick miniature or its calibration pilot; return the exit status."""
    args = build_parser().parse_args(argv)
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # the project never requires a GPU
    s, started = settings(args), time.perf_counter()
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
    done = run_jobs(
        declare_jobs(s, args.out, args.work),
        run_job,
        args.workers,
        lambda line: print(line, flush=True),
        fresh_process=True,
    )
    runs: dict[str, list[EvalResult]] = {}
    for job in sorted(done, key=lambda job: job["seed"]):
        runs.setdefault(job["regime"], []).append(EvalResult.from_dict(job["result"]))
    lines, record = report.analyse(runs, args.out)
    record["settings"] = s
    kit.write_report(args.out, _header(args, s, done, started) + lines, record)
    print(f"wrote {args.out / 'results.md'}")
    return 0
