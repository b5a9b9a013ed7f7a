"""The LLM BudgetMix study's jobs: a warm start per seed, then GRPO and evaluation per run.

:func:`warm_start_job` and :func:`run_job` are the job functions handed to
:func:`studies.runner.run_jobs`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from studies.llm_budgetmix.design import (
    BETA,
    ENV_ID,
    KS,
    LEARNING_RATE,
    PLAN,
    STEP_QUALITY_SEED,
    TASKS_PER_STEP,
    WARM_START_LR,
    K,
)
from studies.runner import Job


def _setup_worker() -> None:
    import torch

    torch.set_num_threads(1)  # 2 threads on 2 shared cores swung step time 0.45 s to 20 s
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def train_config(budget: Any, tasks: list[int], **settings: Any) -> Any:
    """Return the study's ``LLMTrainConfig`` for one run."""
    from agent_envs.env_stack import BudgetRegime
    from baselines.llm.training.train import LLMTrainConfig

    return LLMTrainConfig(
        ENV_ID,
        budget or BudgetRegime.fixed(PLAN.long),
        tasks=tuple(tasks),
        k=K,
        tasks_per_step=TASKS_PER_STEP,
        learning_rate=LEARNING_RATE,
        warm_start_lr=WARM_START_LR,
        beta=BETA,
        context=PLAN.context,
        **settings,
    )


def warm_folder(work: Path, seed: int) -> Path:
    """The folder of training seed ``seed``'s warm start under ``work``.

    Not ``warm-seed{k}``: that is the ``warm`` regime's run (the warm start's
    evaluation), and a shared folder made that run look finished.
    """
    return Path(work) / f"warm-start-seed{seed}"


def warm_start_jobs(seeds: list[int], tasks: list[int], steps: int, work: Path) -> list[Job]:
    """One warm start per training seed (phase 0), so warm-start variance is in the intervals."""
    return [
        Job("warm start", seed, str(warm_folder(work, seed)), {"tasks": tasks, "steps": steps})
        for seed in seeds
    ]


def warm_start_job(job: Job) -> dict[str, Any]:
    """Build the tiny model and warm-start it with the job's training seed."""
    from baselines.llm.training.train import train_llm

    _setup_worker()
    started = time.perf_counter()
    config = train_config(
        None, job.settings["tasks"], warm_start=job.settings["steps"], steps=0, seed=job.seed
    )
    prefix = f"[warm seed {job.seed}]"
    train_llm(config, job.folder, log=lambda line: print(f"{prefix} {line}", flush=True))
    return {"seconds": round(time.perf_counter() - started, 1)}


def declare_jobs(regimes: dict, seeds: list[int], common: dict, work: Path) -> list[Job]:
    """One job per (regime, seed), seed by seed: a run stopped early leaves whole seeds.

    Every job starts from its own seed's warm start (``warm_folder`` under
    ``common["warm_root"]``); the ``warm`` regime evaluates that warm start.
    """
    order = {"long+pr": 0, "long": 1, "mix": 2, "short": 3, "warm": 4}  # the longest first
    jobs = [
        Job(
            name,
            seed,
            str(work / f"{name}-seed{seed}"),
            {
                **common,
                "warm": str(warm_folder(common["warm_root"], seed)),
                "process_reward": coef,
                "budget": None if budget is None else budget.to_json(),
            },
            phase=1,
        )
        for name, (budget, coef) in regimes.items()
        for seed in seeds
    ]
    return sorted(jobs, key=lambda job: (job.seed, order[job.regime]))


def _train(job: Job, config: Any, run: Path) -> float:
    """GRPO from the warm start (unless this run trained before it was stopped); seconds."""
    from baselines.llm.training.train import train_llm

    if (run / "train_llm.json").exists():  # trained; only the evaluation was missing
        return json.loads((run / "train_llm.json").read_text())["timings"]["grpo_seconds"]
    started = time.perf_counter()
    prefix = f"[{job.regime} seed {job.seed}]"
    train_llm(config, run, log=lambda line: print(f"{prefix} {line}", flush=True))
    return time.perf_counter() - started


def run_job(job: Job) -> dict[str, Any]:
    """Train one (regime, seed) from the warm start and evaluate it; return its seconds."""
    from agent_envs.env_stack import BudgetRegime
    from agent_envs.evaluation import EvalResult
    from baselines.llm.training.train import evaluate_model

    _setup_worker()
    s, run = job.settings, Path(job.folder)
    budget = BudgetRegime(**s["budget"]) if s["budget"] else None
    config = train_config(
        budget,
        s["tasks"],
        model=s["warm"],
        steps=s["steps"] if budget else 0,
        warm_start=0,
        process_reward=s["process_reward"],
        seed=job.seed,
    )
    trained = _train(job, config, run) if budget else 0.0
    started = time.perf_counter()
    result = evaluate_model(
        run if budget else Path(s["warm"]),
        config,
        budgets=PLAN.eval_budgets,
        tasks=s["eval_tasks"],
        samples=s["samples"],
        ks=[k for k in KS if k <= s["samples"]],
        seed=job.seed,
        log_path=run / "episodes.jsonl",
        step_quality=s["step_quality"],
        step_quality_seed=STEP_QUALITY_SEED,
    )
    seconds = {"train": round(trained, 1), "eval": round(time.perf_counter() - started, 1)}
    run.mkdir(parents=True, exist_ok=True)
    result.save(run / "result.json")
    print(
        f"[{job.regime} seed {job.seed}] Pass@(1,T) {np.round(result.surface[0], 3).tolist()} "
        f"{seconds}"
    )
    EvalResult.load(run / "result.json")  # fail here, not in the report, if it does not round-trip
    return {"seconds": seconds}
