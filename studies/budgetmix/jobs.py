"""The classic BudgetMix study's jobs: a warm start or a fine-tune, then its evaluation.

:func:`run_job` is the job function :func:`studies.runner.run_jobs` is handed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from studies.budgetmix.design import (
    ALGO,
    BC_EPSILON,
    FINE_TUNE,
    GREEDY,
    PLANS,
    PROCESS_REWARD_COEF,
    REGIMES,
    STEP_QUALITY,
    STEP_QUALITY_SEED,
    TRAIN_FIRST,
    grid_of,
)
from studies.runner import Job


def train_config(job: Job) -> Any:
    """Return the ``TrainConfig`` of one job: a warm start, or a fine-tune from it."""
    from baselines.sb3.env import TrainConfig

    plan, s = PLANS[job.settings["env_id"]], job.settings
    warm = job.regime == "warm"
    budget = s["short"] if job.regime == "short" else plan.long
    quick = {"n_steps": 32} if s["timesteps"] < 1_000 else {}
    return TrainConfig(
        env_id=s["env_id"],
        algo=ALGO,
        timesteps=0 if warm else s["timesteps"],
        budget=None if job.regime in ("mix", "warm") else budget,
        # The warm start sees every budget, as a pretrained model would.
        budget_mix=plan.mix if job.regime in ("mix", "warm") else None,
        visible_budget=True,
        budget_feature=True,
        budget_scale=plan.long,  # more than `long` turns left reads as `long`: plenty
        truncation_terminal=True,
        process_reward=PROCESS_REWARD_COEF if job.regime == "long+pr" else None,
        seed=job.seed,
        n_envs=8,
        train_first=TRAIN_FIRST,
        bc_episodes=s["bc_episodes"] if warm else 0,
        bc_epsilon=BC_EPSILON,
        bc_epochs=plan.bc_epochs,
        init_from=None if warm else str(Path(s["warm_folder"]) / "model.zip"),
        encoding=dict(plan.encoding),
        algo_kwargs={**FINE_TUNE, **plan.fine_tune, **quick},
        net_arch=plan.net_arch,
        threads=1,
    )


def run_job(job: Job) -> dict[str, Any]:
    """Train and evaluate one job (the runner's job function); return its summary."""
    import agent_envs  # noqa: F401  (registers the ids in a spawned worker)
    from baselines.sb3.agent import read_sidecar
    from baselines.sb3.train import evaluate_model, train

    folder, started = Path(job.folder), time.perf_counter()
    # An unfinished job's episode log belongs to a model about to be trained again.
    (folder / "episodes.jsonl").unlink(missing_ok=True)
    model_path = train(train_config(job), folder)
    evaluate_model(
        model_path,
        env_id=job.settings["env_id"],
        budgets=job.settings["grid"],
        ks=(1,),
        tasks=job.settings["tasks"],
        samples=job.settings["samples"],
        deterministic=GREEDY,
        seed=job.seed,
        out=folder,
        step_quality=STEP_QUALITY,
        step_quality_seed=STEP_QUALITY_SEED,
    )
    sidecar = read_sidecar(model_path)
    return {
        "env_id": job.settings["env_id"],
        "train_seconds": sidecar["train_seconds"],
        "train_success_rate": sidecar.get("train_success_rate"),
        "behaviour_cloning": sidecar.get("behaviour_cloning"),
        "job_seconds": round(time.perf_counter() - started, 1),
    }


def declare_jobs(chosen: dict, seeds: int, samples: int, sizes: dict, work: Path) -> list[Job]:
    """One job per (env, regime, seed); warm starts first (phase 0), fine-tunes after."""
    jobs = []
    for env_id, (tasks, shortest) in chosen.items():
        slug = env_id.split("/")[-1]
        for regime in REGIMES:
            for seed in range(seeds):
                settings = {
                    "env_id": env_id,
                    "short": max(shortest),
                    "grid": grid_of(env_id, shortest),
                    "tasks": tuple(tasks),
                    "samples": samples,
                    "bc_episodes": sizes[env_id][0],
                    "timesteps": sizes[env_id][1],
                    "warm_folder": str(work / slug / "warm" / f"seed{seed}"),
                }
                folder = str(work / slug / regime.replace("+", "-") / f"seed{seed}")
                jobs.append(Job(regime, seed, folder, settings, phase=int(regime != "warm")))
    return jobs
