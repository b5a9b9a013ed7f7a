"""The paper's experiment in miniature, with an LLM: GRPO under turn budgets vs BudgetMix.

A tiny Llama (``baselines.llm.tiny``, about 0.1 M parameters) is trained from
scratch on this machine, so the whole pipeline runs end to end: a supervised
warm start on noisy-oracle transcripts (standing in for a pretrained instruct
model), then GRPO on whole episodes (``baselines.llm.rollout``) under one of
the regimes below, then the evaluator on held-out task ids.

Regimes (the ``mix`` budgets are those of the issue's pilot):

* ``warm``: the warm start alone (no GRPO), the baseline of every comparison;
* ``short``: GRPO with a short fixed budget (T=5);
* ``long``: GRPO with a long fixed budget (T=12);
* ``mix``: GRPO with BudgetMix over {4, 6, 8, 12}, one T per group;
* ``long+pr`` (``--full`` only): the long budget plus the process reward.

``--full`` also runs every regime on Maze-7x7, where recovering from a wrong
turn matters (see ``PLANS`` for why not FrozenLake-8x8).

One warm start per env is shared by every regime and seed: it is the
"pretrained model", and the seeds vary the RL (the episodes, the sampling and
the order of tasks).  Evaluation: ``EVAL_TASKS`` held-out task ids, disjoint
from the training ids, ``EVAL_SAMPLES`` attempts each at temperature 1, the
budget hidden and the episodes run at max(T), so one run gives every T of the
grid.  Diagnostics: error recovery per T, decision quality and, where the
evaluator has it, step quality on one shared set of reference states.
Regimes are compared at the seed level (a hierarchical bootstrap over seeds,
then tasks, and a seed-level paired test) with ``agent_envs.evaluation.compare``.

Writes ``results.md`` (tables, the command, timings), ``results.json``, a
heatmap per regime and a difference plot per regime against ``warm`` into
``--out`` (default ``docs/llm_budgetmix``); models and logs go to ``--work``
(default ``runs/llm_budgetmix``), and a rerun reuses every finished run.

    python benchmarks/llm_budgetmix_study.py            # the default run (time: results.md)
    python benchmarks/llm_budgetmix_study.py --full     # adds long+pr and Maze-7x7
    python benchmarks/llm_budgetmix_study.py --quick    # plumbing check (minutes)
    python benchmarks/llm_budgetmix_study.py --seeds 6  # 6 seeds a regime (reuses finished ones)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# ------------------------------------------------------------------ settings
SEEDS = (0, 1, 2)
TRAIN_TASKS = tuple(range(64))
EVAL_TASKS = tuple(range(10_000, 10_100))
EVAL_SAMPLES = 4
KS = (1, 2, 4)
WARM_START_STEPS = 300
WARM_START_LR = 1e-2
GRPO_STEPS = 150
LEARNING_RATE = 3e-4  # the pilot's: 3e-3 collapsed within 15 steps, 1e-3 at times
K = 8  # attempts per task in a GRPO group
TASKS_PER_STEP = 4  # so 32 episodes per GRPO step
PROCESS_REWARD_COEF = 0.3
STEP_QUALITY_STATES = 2  # reference states per evaluation task
WORKERS = 2


@dataclass(frozen=True)
class EnvPlan:
    """The budgets used for one env."""

    short: int
    long: int
    mix: tuple[int, ...]
    eval_budgets: tuple[int, ...]
    context: int = 1024  # the tiny model's context: the longest episode must fit


# GuessNumber (1..100): the oracle needs 1-7 turns; a dialogue of 12 turns takes
# about 700 tokens.  Maze-7x7: the oracle needs 14-37 turns (task ids 0..199), about
# 47 tokens a turn, so 40 turns take about 2100.  (FrozenLake-8x8, the other env the
# issue names, redraws its map every turn, about 110 tokens a turn: its 12-21-turn
# oracle horizon would need a context of about 4600 tokens, too slow on CPU.)
PLANS = {
    "agent_envs/GuessNumber-v0": EnvPlan(5, 12, (4, 6, 8, 12), (4, 5, 6, 8, 12)),
    "agent_envs/Maze-7x7-v0": EnvPlan(20, 40, (20, 30, 40), (15, 20, 25, 30, 40), 2560),
}


def regimes(plan: EnvPlan, full: bool) -> dict[str, tuple[Any, float]]:
    """Return {name: (BudgetSpec or None for the warm start, process-reward coefficient)}."""
    from baselines.llm.budget_spec import BudgetSpec

    table: dict[str, tuple[Any, float]] = {
        "warm": (None, 0.0),
        "short": (BudgetSpec.fixed(plan.short), 0.0),
        "long": (BudgetSpec.fixed(plan.long), 0.0),
        "mix": (BudgetSpec(plan.mix), 0.0),
    }
    if full:
        table["long+pr"] = (BudgetSpec.fixed(plan.long), PROCESS_REWARD_COEF)
    return table


# ------------------------------------------------------------------ one run
def _setup_worker() -> None:
    import torch

    torch.set_num_threads(1)  # 2 threads on 2 shared cores swung step time 0.45 s to 20 s
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def warm_start_job(env_id: str, work: Path, steps: int, tasks: tuple[int, ...]) -> str:
    """Build the tiny model and warm-start it once per env; return its folder."""
    from baselines.llm.budget_spec import BudgetSpec
    from baselines.llm.train import LLMTrainConfig, train_llm

    _setup_worker()
    out = work / _slug(env_id) / "warm"
    if (out / "train_llm.json").exists():
        return str(out)
    plan = PLANS[env_id]
    config = LLMTrainConfig(
        env_id,
        BudgetSpec.fixed(plan.long),
        tasks=tasks,
        warm_start=steps,
        warm_start_lr=WARM_START_LR,
        steps=0,
        seed=0,
        context=plan.context,
    )
    train_llm(config, out, log=lambda line: print(f"[{_slug(env_id)} warm] {line}", flush=True))
    return str(out)


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Train one (env, regime, seed) from the warm start and evaluate it; reuse a finished run."""
    from agent_envs.evaluation import EvalResult
    from baselines.llm.budget_spec import BudgetSpec
    from baselines.llm.train import LLMTrainConfig, evaluate_model, train_llm

    _setup_worker()
    env_id, regime, seed = job["env_id"], job["regime"], job["seed"]
    run = Path(job["run"])
    result_path = run / "result.json"
    if result_path.exists():
        return {**job, "seconds": json.loads((run / "timing.json").read_text())}
    plan = PLANS[env_id]
    budget = BudgetSpec(**job["budget"]) if job["budget"] else BudgetSpec.fixed(plan.long)
    config = LLMTrainConfig(
        env_id,
        budget,
        model=job["warm"],
        tasks=tuple(job["tasks"]),
        k=K,
        tasks_per_step=TASKS_PER_STEP,
        steps=job["steps"] if job["budget"] else 0,
        learning_rate=LEARNING_RATE,
        warm_start=0,
        process_reward=job["process_reward"],
        seed=seed,
    )
    started = time.perf_counter()
    name = f"[{_slug(env_id)} {regime} seed {seed}]"
    trained = 0.0
    if job["budget"] and (run / "train_llm.json").exists():
        # Trained before and only the evaluation is missing: keep the model and its time.
        timing = run / "timing.json"
        sidecar = json.loads((run / "train_llm.json").read_text())
        trained = (
            json.loads(timing.read_text())["train"]
            if timing.exists()
            else sidecar["timings"]["grpo_seconds"]
        )
    elif job["budget"]:
        train_llm(config, run, log=lambda line: print(f"{name} {line}", flush=True))
        trained = time.perf_counter() - started
    model = run if job["budget"] else Path(job["warm"])
    started = time.perf_counter()
    result = evaluate_model(
        model,
        config,
        budgets=plan.eval_budgets,
        tasks=job["eval_tasks"],
        samples=job["samples"],
        ks=KS,
        seed=seed,
        log_path=run / "episodes.jsonl",
        step_quality=job["step_quality"],
    )
    seconds = {"train": round(trained, 1), "eval": round(time.perf_counter() - started, 1)}
    run.mkdir(parents=True, exist_ok=True)
    (run / "timing.json").write_text(json.dumps(seconds))
    result.save(result_path)
    print(
        f"{name} done: Pass@(1,T) {np.round(result.surface[0], 3).tolist()} {seconds}", flush=True
    )
    EvalResult.load(result_path)  # fail here, not in the report, if it does not round-trip
    return {**job, "seconds": seconds}


def _slug(env_id: str) -> str:
    return env_id.split("/")[-1]


# ------------------------------------------------------------------ report
def seed_surface(results: list[Any], n_bootstrap: int = 2000) -> dict[str, Any]:
    """Return a regime's mean Pass@(K,T) over seeds with a hierarchical-bootstrap interval."""
    from agent_envs.evaluation.result import bootstrap_rng
    from agent_envs.evaluation.seed_stats import hierarchical_bootstrap, task_sampler

    values = [result.per_task_values() for result in results]
    mean = np.mean([v.mean(axis=0) for v in values], axis=0)
    draws = hierarchical_bootstrap([task_sampler(v) for v in values], n_bootstrap, bootstrap_rng(0))
    low, high = np.percentile(draws, [2.5, 97.5], axis=0)
    return {"mean": mean, "low": low, "high": high}


def _cell(mean: float, low: float, high: float, signed: bool = False) -> str:
    sign = "+" if signed else ""
    return f"{mean:{sign}.3f} [{low:{sign}.2f}, {high:{sign}.2f}]"


def _difference_cells(difference: Any) -> list[str]:
    """Return the K=1 row of a compare result as ``+d [low, high]`` cells, one per T."""
    return [
        _cell(difference.diff[0, j], difference.ci_low[0, j], difference.ci_high[0, j], True)
        for j in range(len(difference.budgets))
    ]


def _recovery(result: Any, budget: int) -> tuple[int, int]:
    """Return (recovered, recoverable) errors within ``budget`` from a result's diagnostics."""
    diagnostics = result.diagnostics or {}
    per_t = diagnostics.get("error_recovery")
    if not per_t:
        return 0, 0
    index = list(result.budgets).index(budget)
    entry = per_t[index]
    return int(entry.get("recovered") or 0), int(entry.get("recoverable") or 0)


def _step_quality(group: list[Any], prefix: str) -> str:
    """Return one pooled step-quality figure of a regime, e.g. ``prefix="recovery_"``."""
    hits = states = 0.0
    for result in group:
        quality = (result.diagnostics or {}).get("step_quality") or {}
        rate, count = quality.get(f"{prefix}optimal_rate"), quality.get(f"{prefix}states") or 0
        if rate is not None and count:
            hits, states = hits + rate * count, states + count
    return f"{hits / states:.3f} (n={int(states)})" if states else "n/a"


def report(
    env_id: str, names: list[str], results: dict[str, list[Any]], out: Path, command: str, timing
) -> tuple[list[str], dict[str, Any]]:
    """Write the plots of one env and return its markdown lines and JSON summary."""
    from agent_envs.evaluation import compare
    from agent_envs.evaluation.plotting import plot_grid

    budgets = list(results[names[0]][0].budgets)
    ks = list(results[names[0]][0].ks)
    slug = _slug(env_id)
    lines = [f"## {env_id}", ""]
    summary: dict[str, Any] = {"regimes": {}, "versus_warm": {}}
    lines += [
        "### Pass@(K,T) per regime: mean over seeds "
        "[95% hierarchical bootstrap: seeds, then tasks]",
        "",
    ]
    for name in names:
        surface = seed_surface(results[name])
        summary["regimes"][name] = {key: value.tolist() for key, value in surface.items()}
        header = "| K \\ T | " + " | ".join(f"T={t}" for t in budgets) + " |"
        lines += [f"**{name}** ({len(results[name])} seeds)", "", header]
        lines.append("|" + "---|" * (len(budgets) + 1))
        for i, k in enumerate(ks):
            cells = [
                _cell(surface["mean"][i, j], surface["low"][i, j], surface["high"][i, j])
                for j in range(len(budgets))
            ]
            lines.append(f"| K={k} | " + " | ".join(cells) + " |")
        lines.append("")
        plot_grid(
            out / f"{slug}-{name}.png",
            surface["mean"],
            ks,
            budgets,
            title=f"{slug} {name}: Pass@(K,T), mean of {len(results[name])} seeds",
            vmin=0.0,
            vmax=1.0,
            cmap="viridis",
            label="Pass@(K,T)",
        )
    lines += ["### Each regime minus warm start, Pass@(1,T), seed level", ""]
    header = "| regime | " + " | ".join(f"T={t}" for t in budgets) + " | seed-level p (T=max) |"
    lines += [header, "|" + "---|" * (len(budgets) + 2)]
    for name in names:
        if name == "warm":
            continue
        difference = compare(results[name], results["warm"], seed=0)
        data = difference.to_dict()
        summary["versus_warm"][name] = data
        cells = _difference_cells(difference)
        p_text = "n/a"
        if difference.p_value is not None:
            p_text = f"{difference.p_value[0, -1]:.3f} (min {difference.min_p_value:.3f})"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {p_text} |")
        difference.plot(out / f"{slug}-{name}-minus-warm.png")
    lines += [""]
    if "mix" in names:
        lines += ["### BudgetMix minus each fixed budget, Pass@(1,T), seed level", ""]
        lines += ["| comparison | " + " | ".join(f"T={t}" for t in budgets) + " |"]
        lines += ["|" + "---|" * (len(budgets) + 1)]
        for other in ("short", "long"):
            difference = compare(results["mix"], results[other], seed=0)
            summary[f"mix_minus_{other}"] = difference.to_dict()
            cells = _difference_cells(difference)
            lines.append(f"| mix - {other} | " + " | ".join(cells) + " |")
        lines += [""]
    lines += [
        "### Diagnostics (pooled over seeds)",
        "",
        "Step quality: the optimal-action rate on one shared set of reference states "
        "(from noisy-oracle trajectories), all of them, those right after a reference "
        "mistake (recovery) and the others (on path).  Recovery per T: of the "
        "recoverable errors (valid non-optimal actions), the share after which the "
        "agent regained its pre-error oracle distance within T.",
        "",
        "| regime | invalid-action rate | decision quality | step quality | "
        "step quality, recovery states | step quality, on path | "
        + " | ".join(f"recovery T={t}" for t in budgets)
        + " |",
        "|" + "---|" * (len(budgets) + 6),
    ]
    for name in names:
        group = results[name]
        invalid = np.mean([(r.diagnostics or {}).get("invalid_action_rate") or 0.0 for r in group])
        quality = [(r.diagnostics or {}).get("decision_quality") for r in group]
        quality = [q for q in quality if isinstance(q, (int, float))]
        cells = [
            f"{invalid:.3f}",
            f"{np.mean(quality):.3f}" if quality else "n/a",
            _step_quality(group, ""),
            _step_quality(group, "recovery_"),
            _step_quality(group, "on_path_"),
        ]
        for t in budgets:
            counts = np.array([_recovery(r, t) for r in group])
            recovered, recoverable = counts.sum(axis=0) if len(counts) else (0, 0)
            rate = f"{recovered / recoverable:.2f} (n={recoverable})" if recoverable else "n/a"
            cells.append(rate)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
        # Every seed's whole result, so that EvalResult.from_dict rebuilds it.
        summary["regimes"][name]["results"] = [r.to_dict() for r in group]
    lines += [""]
    return lines, summary


# -------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="add long+pr and Maze-7x7")
    parser.add_argument("--quick", action="store_true", help="a plumbing check (minutes)")
    parser.add_argument("--out", type=Path, default=Path("docs/llm_budgetmix"))
    parser.add_argument("--work", type=Path, default=Path("runs/llm_budgetmix"))
    parser.add_argument("--workers", type=int, default=WORKERS)
    parser.add_argument(
        "--seeds",
        type=int,
        default=len(SEEDS),
        help=f"seeds per regime, 0..N-1 ({len(SEEDS)}; 6 lets the seed-level test reach p < 0.05)",
    )
    args = parser.parse_args(argv)
    command = "python benchmarks/llm_budgetmix_study.py " + " ".join(argv or sys.argv[1:])
    envs = list(PLANS) if args.full else ["agent_envs/GuessNumber-v0"]
    if args.seeds < 2:
        parser.error(f"--seeds must be at least 2 (seed-level statistics), got {args.seeds}")
    seeds = SEEDS[:2] if args.quick else tuple(range(args.seeds))
    warm_steps, grpo_steps = (20, 2) if args.quick else (WARM_START_STEPS, GRPO_STEPS)
    train_tasks = TRAIN_TASKS[:8] if args.quick else TRAIN_TASKS
    eval_tasks = EVAL_TASKS[:8] if args.quick else EVAL_TASKS
    samples = 2 if args.quick else EVAL_SAMPLES

    started = time.perf_counter()
    load_at_start = _load()
    timing: dict[str, Any] = {}
    summary: dict[str, Any] = {
        "command": command,
        "settings": {
            "seeds": list(seeds),
            "train_tasks": [train_tasks[0], train_tasks[-1]],
            "eval_tasks": [eval_tasks[0], eval_tasks[-1]],
            "eval_samples": samples,
            "warm_start_steps": warm_steps,
            "grpo_steps": grpo_steps,
            "learning_rate": LEARNING_RATE,
            "k": K,
            "tasks_per_step": TASKS_PER_STEP,
            "step_quality_states": STEP_QUALITY_STATES,
            "workers": args.workers,
        },
        "envs": {},
    }
    markdown: list[str] = []
    for env_id in envs:
        env_started = time.perf_counter()
        warm = warm_start_job(env_id, args.work, warm_steps, train_tasks)
        timing[f"{_slug(env_id)} warm start"] = round(time.perf_counter() - env_started, 1)
        table = regimes(PLANS[env_id], args.full)
        jobs = []
        for name, (budget, coef) in table.items():
            # The warm start is one model; its "seeds" are evaluation seeds, so that every
            # regime is paired seed by seed with an evaluation of the same episode seeds.
            for seed in seeds:
                jobs.append(
                    {
                        "env_id": env_id,
                        "regime": name,
                        "seed": seed,
                        "budget": None if budget is None else budget.to_json(),
                        "process_reward": coef,
                        "warm": warm,
                        "tasks": list(train_tasks),
                        "steps": grpo_steps,
                        "eval_tasks": list(eval_tasks),
                        "samples": samples,
                        "step_quality": STEP_QUALITY_STATES,
                        "run": str(args.work / _slug(env_id) / f"{name}-seed{seed}"),
                    }
                )
        # The longest jobs first, so that the two workers finish together.
        order = {"long+pr": 0, "long": 1, "mix": 2, "short": 3, "warm": 4}
        jobs.sort(key=lambda job: order[job["regime"]])
        context = multiprocessing.get_context("spawn")
        with context.Pool(args.workers, maxtasksperchild=1) as pool:
            done = pool.map(run_job, jobs, chunksize=1)
        from agent_envs.evaluation import EvalResult

        results: dict[str, list[Any]] = {name: [] for name in table}
        for job in sorted(done, key=lambda job: job["seed"]):
            results[job["regime"]].append(EvalResult.load(Path(job["run"]) / "result.json"))
            timing[f"{_slug(env_id)} {job['regime']} seed {job['seed']}"] = job["seconds"]
        timing[f"{_slug(env_id)} total"] = round(time.perf_counter() - env_started, 1)
        args.out.mkdir(parents=True, exist_ok=True)
        lines, env_summary = report(env_id, list(table), results, args.out, command, timing)
        markdown += lines
        summary["envs"][env_id] = env_summary
    total = round(time.perf_counter() - started, 1)
    timing["total"] = total
    summary["timing"] = timing
    compute = _compute_seconds(args.work, envs)
    header = [
        "# LLM BudgetMix study (tiny Llama trained from scratch, GRPO with TRL)",
        "",
        f"Command: `{command.strip()}`",
        "",
        f"Wall time of this invocation: {total / 60:.1f} min with {args.workers} worker processes, "
        f"1 torch thread each, on {os.cpu_count()} CPUs; load average at start {load_at_start}, "
        f"at end {_load()} (a rerun reuses finished runs, so it can be shorter than the runs "
        "themselves).",
        "",
        "Seconds per run, as each run measured itself (wall clock): "
        + "; ".join(f"{name} {seconds}" for name, seconds in compute.items()),
        "",
        f"Settings: seeds {list(seeds)}; warm start {warm_steps} steps (lr {WARM_START_LR}) on "
        "training task ids "
        f"{train_tasks[0]}..{train_tasks[-1]}; GRPO {grpo_steps} steps, K={K}, {TASKS_PER_STEP} "
        f"tasks a step, lr {LEARNING_RATE}; evaluation on held-out task ids "
        f"{eval_tasks[0]}..{eval_tasks[-1]}, {samples} attempts each at temperature 1, "
        "hidden budget.",
        "",
    ]
    (args.out / "results.md").write_text("\n".join(header + markdown) + "\n")
    (args.out / "results.json").write_text(json.dumps(_jsonable(summary), indent=1) + "\n")
    print(f"wrote {args.out / 'results.md'} ({total / 60:.1f} min)")
    return 0


def _load() -> str:
    """Return the 1-, 5- and 15-minute load averages: how much else shared the CPUs."""
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def _compute_seconds(work: Path, envs: list[str]) -> dict[str, Any]:
    """Return each finished run's own timings: the warm start's, then train/eval per run."""
    seconds: dict[str, Any] = {}
    for env_id in envs:
        folder = work / _slug(env_id)
        sidecar = folder / "warm" / "train_llm.json"
        if sidecar.exists():
            warm = json.loads(sidecar.read_text())["timings"]["warm_start_seconds"]
            seconds[f"{_slug(env_id)} warm start"] = warm
        for timing in sorted(folder.glob("*/timing.json")):
            seconds[f"{_slug(env_id)} {timing.parent.name}"] = json.loads(timing.read_text())
    return seconds


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value


if __name__ == "__main__":
    sys.exit(main())
