"""The BudgetMix study in miniature: how the training budget regime shapes Pass@(K,T).

For each env, each budget regime and each seed, train a MaskablePPO agent with
``baselines.sb3_train`` and measure its Pass@(K,T) surface with the
agent_envs evaluator, on a T grid from below the shortest training budget to
above the longest.  The regimes are:

* ``short``: a short fixed budget (hidden from the agent);
* ``long``: a long fixed budget;
* ``mix``: BudgetMix over a spread of budgets;
* ``long+pr``: the long fixed budget plus ProcessReward (oracle-distance shaping).

Every seed trains on its own pool of ``TASKS_PER_SEED`` tasks (seed s gets
task ids ``s*N .. s*N+N-1``) and is evaluated on that pool: the question is
how the regime shapes the budget profile of what the agent learned, not
generalisation to unseen levels (which these small MLPs do not reach within
the time budget).  The seed is the unit of every interval and test: a
regime's table interval is a hierarchical bootstrap (seeds, then tasks within
each seed), and regimes are compared with ``compare`` on the lists of per-seed
results (seed s of one regime paired with seed s of the other, which trained on
the same task pool), whose seed-level test marks no cell with fewer than 5
seeds per side.

Writes into ``--out`` (default ``docs/budgetmix``): ``results.md`` (the tables
and the command), ``results.json``, per env and regime a heatmap
``<env>-<regime>.png`` and a difference plot ``<env>-<regime>-minus-short.png``
from ``agent_envs.evaluation.compare``; the per-run models and logs go to
``--work`` (default ``runs/budgetmix``), and a rerun reuses finished runs.

    python benchmarks/budgetmix_study.py              # the full study (~22 min, 2 cores)
    python benchmarks/budgetmix_study.py --quick      # plumbing check for CI (~1 min)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# ------------------------------------------------------------------ settings
TIMESTEPS = 100_000
SEEDS = (0, 1, 2, 3, 4)
TASKS_PER_SEED = 4
SAMPLES = 16  # attempts per task (n); Pass@8 needs n >= 8
KS = (1, 2, 4, 8)
WORKERS = 2
ALGO = "maskable_ppo"
PROCESS_REWARD_COEF = 0.3
REGIMES = ("short", "long", "mix", "long+pr")


@dataclass(frozen=True)
class EnvPlan:
    """The budgets and the observation encoding used for one env."""

    short: int
    long: int
    mix: tuple[int, ...]
    eval_budgets: tuple[int, ...]
    table_budgets: tuple[int, ...]
    encoding: dict[str, Any] = field(default_factory=dict)


_LAKE = {"mode": "chars", "view_only": True, "charset": "FHSG@", "max_length": 160}
_MAZE = {"mode": "chars", "view_only": True, "charset": "0123456789nsewo", "max_length": 80}
_LAKE_T = (4, 6, 8, 10, 12, 15, 20, 25, 30, 40, 60, 90, 120)
_MAZE_T = (8, 10, 15, 20, 25, 30, 40, 50, 60, 80, 120, 160)
# Oracle turns (measured over the first 200 tasks): FrozenLake-8x8 12-18, Maze-7x7 14-37.
PLANS = {
    "agent_envs/FrozenLake-8x8-v0": EnvPlan(
        15, 60, (8, 15, 30, 60), _LAKE_T, (10, 15, 20, 30, 60, 120), _LAKE
    ),
    "agent_envs/FrozenLake-8x8-Slippery-v0": EnvPlan(
        15, 60, (8, 15, 30, 60), _LAKE_T, (10, 15, 20, 30, 60, 120), _LAKE
    ),
    "agent_envs/Maze-7x7-v0": EnvPlan(
        20, 80, (10, 20, 40, 80), _MAZE_T, (15, 20, 30, 40, 80, 160), _MAZE
    ),
}
QUICK = {"timesteps": 256, "seeds": (0,), "tasks": 1, "samples": 2, "ks": (1, 2)}


# ---------------------------------------------------------------------- jobs
@dataclass(frozen=True)
class Job:
    """One training run and its evaluation."""

    env_id: str
    regime: str
    seed: int
    timesteps: int
    tasks: int
    samples: int
    ks: tuple[int, ...]
    folder: str

    def task_ids(self) -> list[int]:
        return list(range(self.seed * self.tasks, (self.seed + 1) * self.tasks))


def _config(job: Job) -> Any:
    from baselines.sb3_env import TrainConfig

    plan = PLANS[job.env_id]
    budget = plan.short if job.regime == "short" else plan.long
    quick_steps = {"n_steps": 32} if job.timesteps < 1_000 else {}
    return TrainConfig(
        env_id=job.env_id,
        algo=ALGO,
        timesteps=job.timesteps,
        budget=None if job.regime == "mix" else budget,
        budget_mix=plan.mix if job.regime == "mix" else None,
        process_reward=PROCESS_REWARD_COEF if job.regime == "long+pr" else None,
        seed=job.seed,
        n_envs=8,
        train_tasks=tuple(job.task_ids()),
        encoding=dict(plan.encoding),
        algo_kwargs=quick_steps,
        threads=1,
    )


def run_job(job: Job) -> dict[str, Any]:
    """Train and evaluate one job (skipped if its result exists); return a summary."""
    import agent_envs  # noqa: F401  (registers the ids in a spawned worker)
    from baselines.sb3_agent import read_sidecar
    from baselines.sb3_train import evaluate_model, train

    folder = Path(job.folder)
    result_path = folder / "result.json"
    started = time.perf_counter()
    reused = result_path.exists()
    if not reused:
        model_path = train(_config(job), folder)
        evaluate_model(
            model_path,
            env_id=job.env_id,
            budgets=PLANS[job.env_id].eval_budgets,
            ks=job.ks,
            tasks=job.task_ids(),
            samples=job.samples,
            deterministic=False,
            seed=job.seed,
            out=folder,
        )
    sidecar = read_sidecar(folder / "model.zip")
    return {
        "env_id": job.env_id,
        "regime": job.regime,
        "seed": job.seed,
        "folder": job.folder,
        "train_seconds": sidecar["train_seconds"],
        "train_success_rate": sidecar.get("train_success_rate"),
        "job_seconds": round(time.perf_counter() - started, 1),
        "reused": reused,
    }


# ----------------------------------------------------------------- analysis
def pooled(results: list[Any], label: str) -> Any:
    """Merge the per-seed results of one regime, with a seed-level interval.

    The surface is the mean over seeds of each seed's mean over its tasks; the
    interval resamples seeds, then tasks within each seed.
    """
    from agent_envs.evaluation import EvalResult
    from agent_envs.evaluation.pass_at_k import percentile_interval
    from agent_envs.evaluation.result import bootstrap_rng
    from agent_envs.evaluation.seed_stats import hierarchical_bootstrap, task_sampler

    first = results[0]
    counts = np.concatenate([result.success_counts for result in results])
    samplers = [task_sampler(result.per_task_values()) for result in results]
    draws = hierarchical_bootstrap(samplers, first.n_bootstrap, bootstrap_rng(0))
    low, high = percentile_interval(draws, first.confidence)
    surface = np.mean([result.per_task_values().mean(axis=0) for result in results], axis=0)
    # Each (seed, task) pair is one unit: numbered 0..N-1 in the same order in
    # every regime, so that compare() pairs them (task ids repeat across seeds).
    settings = dataclasses.replace(
        first.settings, agent_name=label, tasks=tuple(range(len(counts))), seed=0
    )
    return EvalResult(
        settings=settings,
        surface=surface,
        ci_low=low,
        ci_high=high,
        success_counts=counts,
        episodes=sum(result.episodes for result in results),
        errors=sum(result.errors for result in results),
    )


def _cell(result: Any, k: int, t: int) -> str:
    i, j = result.ks.index(k), result.budgets.index(t)
    return f"{result.surface[i, j]:.2f} [{result.ci_low[i, j]:.2f}, {result.ci_high[i, j]:.2f}]"


def markdown_tables(env_id: str, regimes: dict[str, Any], summaries: list[dict]) -> list[str]:
    """Return the markdown lines for one env: Pass@(1,T) and Pass@(8,T) per regime."""
    plan = PLANS[env_id]
    lines = [f"### {env_id}", ""]
    lines.append(
        f"Budgets: short T={plan.short}, long T={plan.long}, BudgetMix {list(plan.mix)} "
        f"(uniform); long+pr = long + ProcessReward(coef={PROCESS_REWARD_COEF})."
    )
    lines.append("")
    any_result = next(iter(regimes.values()))
    shown = [t for t in plan.table_budgets if t in any_result.budgets]
    for k in (min(any_result.ks), max(any_result.ks)):
        header = "| regime | " + " | ".join(f"T={t}" for t in shown) + " |"
        lines += [
            f"Pass@({k},T), 95% hierarchical bootstrap CI (seeds, then tasks):",
            "",
            header,
        ]
        lines.append("|---|" + "---|" * len(shown))
        for name, result in regimes.items():
            cells = " | ".join(_cell(result, k, t) for t in shown)
            lines.append(f"| {name} | {cells} |")
        lines.append("")
    lines += ["| regime | train s (mean) | training success, last 100 episodes (per seed) |"]
    lines.append("|---|---|---|")
    for name in regimes:
        rows = [s for s in summaries if s["env_id"] == env_id and s["regime"] == name]
        if not rows:
            continue
        seconds = np.mean([row["train_seconds"] for row in rows])
        rates = ", ".join(str(row["train_success_rate"]) for row in rows)
        lines.append(f"| {name} | {seconds:.0f} | {rates} |")
    lines.append("")
    return lines


def analyse(summaries: list[dict], out: Path, ks: tuple[int, ...], plots: bool) -> list[str]:
    """Pool, compare and plot; return the markdown lines of the tables."""
    from agent_envs.evaluation import EvalResult, compare, evaluate
    from baselines.simple_agents import RandomAgent

    lines: list[str] = []
    everything: dict[str, Any] = {}
    for env_id in dict.fromkeys(s["env_id"] for s in summaries):
        short_name = env_id.split("/")[-1]
        regimes: dict[str, Any] = {}
        per_seed: dict[str, list[Any]] = {}
        for regime in REGIMES:
            runs = [s for s in summaries if s["env_id"] == env_id and s["regime"] == regime]
            if runs:
                results = [EvalResult.load(Path(s["folder"]) / "result.json") for s in runs]
                per_seed[regime] = results
                regimes[regime] = pooled(results, regime)
        # The random agent on the same tasks and seeds, for scale.
        first = next(iter(regimes.values()))
        random = evaluate(
            RandomAgent(),
            env_id,
            ks=list(ks),
            budgets=first.budgets,
            tasks=first.task_ids,
            samples=first.samples,
            diagnostics=False,
            agent_name="random",
        )
        regimes["random"] = random
        lines += markdown_tables(env_id, regimes, summaries)
        everything[env_id] = {name: result.to_dict() for name, result in regimes.items()}
        if "short" in regimes:
            for name in per_seed:
                if name == "short":
                    continue
                # Seed level: seed s of both regimes trained on the same task pool.
                difference = compare(per_seed[name], per_seed["short"])
                everything[env_id][f"{name}-minus-short"] = difference.to_dict()
                if plots:
                    difference.plot(out / f"{short_name}-{name}-minus-short.png")
        if plots:
            for name, result in regimes.items():
                result.plot(out / f"{short_name}-{name}.png")
    (out / "results.json").write_text(json.dumps(everything, indent=1) + "\n")
    return lines


# --------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    """Run the study; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny plumbing check for CI")
    parser.add_argument("--envs", nargs="+", default=list(PLANS), choices=list(PLANS))
    parser.add_argument("--timesteps", type=int, default=TIMESTEPS)
    parser.add_argument("--seeds", type=int, default=len(SEEDS), help="number of seeds")
    parser.add_argument("--workers", type=int, default=WORKERS, help="parallel runs")
    parser.add_argument("--out", type=Path, default=Path("docs/budgetmix"))
    parser.add_argument("--work", type=Path, default=Path("runs/budgetmix"))
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args(argv)
    if args.timesteps < 1 or args.seeds < 1 or args.workers < 1:
        parser.error("--timesteps, --seeds and --workers must be >= 1")
    timesteps, seeds, tasks, samples, ks = (
        args.timesteps, tuple(range(args.seeds)), TASKS_PER_SEED, SAMPLES, KS
    )  # fmt: skip
    if args.quick:
        timesteps, seeds, tasks = QUICK["timesteps"], QUICK["seeds"], QUICK["tasks"]
        samples, ks = QUICK["samples"], QUICK["ks"]
    jobs = [
        Job(env_id, regime, seed, timesteps, tasks, samples, ks,
            str(args.work / env_id.split("/")[-1] / regime.replace("+", "-") / f"seed{seed}"))
        for env_id in args.envs
        for regime in REGIMES
        for seed in seeds
    ]  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    started, load_before = time.perf_counter(), os.getloadavg()
    print(f"{len(jobs)} runs on {args.workers} worker(s); load average {load_before}")
    summaries = []
    if args.workers == 1:
        for job in jobs:
            summaries.append(run_job(job))
            print(f"  done {job.env_id} {job.regime} seed {job.seed}", flush=True)
    else:
        # spawn: each worker imports torch afresh (forking a process that holds torch is fragile).
        with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
            for summary in pool.imap_unordered(run_job, jobs):
                summaries.append(summary)
                print(f"  done {summary['env_id']} {summary['regime']} seed {summary['seed']} "
                      f"({summary['job_seconds']} s)", flush=True)  # fmt: skip
    train_wall = time.perf_counter() - started
    # Workers finish in any order; tables list seeds in order.
    order = {(job.env_id, job.regime, job.seed): index for index, job in enumerate(jobs)}
    summaries.sort(key=lambda s: order[s["env_id"], s["regime"], s["seed"]])
    reused = sum(summary["reused"] for summary in summaries)
    lines = analyse(summaries, args.out, ks, plots=not args.no_plots)
    wall = time.perf_counter() - started
    command = "python benchmarks/budgetmix_study.py " + " ".join(argv or sys.argv[1:])
    header = [
        "# BudgetMix study: results",
        "",
        f"Command: `{command.strip()}`",
        "",
        f"{len(jobs)} runs ({len(args.envs)} envs x {len(REGIMES)} regimes x {len(seeds)} "
        f"seeds), {ALGO}, {timesteps} steps each, {tasks} tasks per seed, {samples} sampled "
        f"attempts per task; {args.workers} worker process(es), one torch thread each.",
        f"Wall time {wall / 60:.1f} min (training and evaluation {train_wall / 60:.1f} min); "
        f"load average at start {tuple(round(x, 2) for x in load_before)}, at end "
        f"{tuple(round(x, 2) for x in os.getloadavg())}; {os.cpu_count()} CPUs.",
        "",
    ]
    if reused:
        header[-1:] = [
            f"{reused} of {len(jobs)} runs were reused from an earlier invocation (their "
            f"results exist in {args.work}), so this wall time does not cover them.",
            "",
        ]
    (args.out / "results.md").write_text("\n".join(header + lines) + "\n")
    print("\n".join(header + lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
