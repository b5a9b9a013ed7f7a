"""Check that ``agent-envs train-sb3 ENV`` learns with its tuned defaults alone.

For each env, runs the command with no flag but ``--out`` (and ``--timesteps``
or ``--seed`` if given here, to check other sizes or seeds), times it (wall
clock and the process's CPU time: training runs on one thread, so on an idle
machine the CPU time is about the wall time),
then evaluates the saved model, the oracle and a random agent on the same
held-out tasks at T = twice the longest oracle path among them.  The target:
trained Pass@(1,T) at least half the oracle's, within 5 minutes
on 2 idle cores.  Prints a markdown table; exits 1 if an env misses.

    python benchmarks/sb3_defaults.py [--envs ID ...] [--tasks 100] [--samples 4] \
        [--seed S] [--json out.json]

``--json`` also writes every row (times, Pass@(1,T) with its interval, the
warm start's accuracy and the recent training success from the sidecar) with
the date and the load average (docs/classic_rl.md's figures are
docs/bench/sb3_defaults/seed0.json and seed1.json, written this way).

Not a test: it takes minutes, and its times depend on the machine.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
import time
from pathlib import Path

from agent_envs.evaluation.formatting import write_json

ENVS = (
    "agent_envs/FrozenLake-v0",
    "agent_envs/FrozenLake-Slippery-v0",
    "agent_envs/Sokoban-v0",
    "agent_envs/GuessNumber-v0",
    "agent_envs/Hanoi-3-RandomStart-v0",
    "agent_envs/Maze-5x5-v0",
)
#: The target: at least this share of the oracle's Pass@(1,T), within this many minutes.
SHARE, MINUTES = 0.5, 5.0


def longest_oracle_path(env_id: str, tasks: list[int]) -> tuple[int, int | None]:
    """Return the most oracle turns from the start over ``tasks``, and the env's task supply."""
    import gymnasium as gym

    env = gym.make(env_id)
    longest = 0
    for task in tasks:
        env.reset(seed=0, options={"task_id": task})
        longest = max(longest, env.unwrapped.oracle_turns())
    env.close()
    return longest, env.unwrapped.task_supply


def run_env(env_id: str, tasks: list[int], samples: int, flags: list[str]) -> dict:
    """Train with the defaults, then evaluate trained, oracle and random at T; return a row."""
    from agent_envs.evaluation import evaluate
    from baselines.sb3.agent import SB3Agent, read_sidecar
    from baselines.sb3.defaults import tuned
    from baselines.sb3.train import MODEL
    from baselines.sb3.train import main as train_sb3
    from baselines.simple_agents import OracleAgent, RandomAgent

    budget, supply = longest_oracle_path(env_id, tasks)
    budget *= 2
    with tempfile.TemporaryDirectory() as folder:
        cpu, wall = time.process_time(), time.perf_counter()
        status = train_sb3([env_id, *flags, "--out", folder])
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if status != 0:
            raise SystemExit(f"train-sb3 {env_id} failed with status {status}")
        model = Path(folder) / MODEL / "model.zip"
        sidecar = read_sidecar(model)
        config = sidecar["config"]
        greedy = tuned(env_id, config["algo"]).get("greedy", False)
        grid = {"ks": [1], "budgets": [budget], "tasks": tasks, "samples": samples,
                "diagnostics": False}  # fmt: skip
        trained = evaluate(SB3Agent(str(model), deterministic=greedy), env_id, **grid)
    if config["train_tasks"] is not None or config["train_first"] <= max(tasks):
        raise SystemExit(f"{env_id}: training tasks overlap the evaluated ones")
    oracle = evaluate(OracleAgent(), env_id, **grid)
    random = evaluate(RandomAgent(), env_id, **grid)
    return {"env": env_id, "T": budget, "wall": wall, "cpu": cpu, "trained": trained,
            "oracle": oracle, "random": random, "timesteps": config["timesteps"],
            "bc": config["bc_episodes"], "supply": supply,
            "behaviour_cloning": sidecar.get("behaviour_cloning"),
            "train_success_rate": sidecar.get("train_success_rate"),
            "load_average_end": [round(x, 2) for x in os.getloadavg()]}  # fmt: skip


def cell(result, budget: int) -> str:
    """Return ``Pass@(1,T) [low, high]`` of a result."""
    j = result.budgets.index(budget)
    return f"{result.surface[0, j]:.2f} [{result.ci_low[0, j]:.2f}, {result.ci_high[0, j]:.2f}]"


def interval(result, budget: int) -> dict:
    """Return Pass@(1,T) and its interval as a dict, for ``--json``."""
    j = result.budgets.index(budget)
    return {"pass": float(result.surface[0, j]), "low": float(result.ci_low[0, j]),
            "high": float(result.ci_high[0, j])}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run every env; print the table; return 1 if an env misses the target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", default=list(ENVS))
    parser.add_argument("--tasks", type=int, default=100, help="held-out task ids 0..N-1")
    parser.add_argument("--samples", type=int, default=4, help="attempts per task")
    parser.add_argument("--timesteps", type=int, help="override the tuned steps")
    parser.add_argument("--seed", type=int, help="train-sb3's seed (default: its own, 0)")
    parser.add_argument("--json", help="also write the rows and the run's conditions here")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    tasks = list(range(args.tasks))
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    start_load = os.getloadavg()
    rows = []
    for env_id in args.envs:
        flags = [f"--{name}={value}" for name, value in vars(args).items()
                 if name in ("timesteps", "seed") and value is not None]  # fmt: skip
        rows.append(run_env(env_id, tasks, args.samples, flags))
        print(f"done {env_id} (load average {os.getloadavg()[0]:.1f})", flush=True)
    print(f"\n{len(tasks)} held-out task ids 0-{tasks[-1]}, {args.samples} attempts each; "
          f"load average {start_load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the "
          f"end, on {os.cpu_count()} CPUs\n")  # fmt: skip
    print("| env | steps (+BC episodes) | time: wall / CPU | T | trained Pass@(1,T) | oracle "
          "| random | trained / oracle |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    missed = []
    for row in rows:
        budget = row["T"]
        share = row["trained"].pass_at(1, budget) / max(row["oracle"].pass_at(1, budget), 1e-9)
        ok = share >= SHARE and row["cpu"] <= MINUTES * 60
        if not ok:
            missed.append(row["env"])
        print(
            f"| {row['env'].split('/')[-1]} | {row['timesteps']} (+{row['bc']}) | "
            f"{row['wall']:.0f} s / {row['cpu']:.0f} s | {budget} | {cell(row['trained'], budget)} "
            f"| {cell(row['oracle'], budget)} | {cell(row['random'], budget)} | "
            f"{share:.2f} {'met' if ok else 'MISSED'} |"
        )
    for row in rows:
        supply = row["supply"]
        if supply is not None and supply <= max(tasks) + 1:
            print(f"\n{row['env'].split('/')[-1]} has only {supply} distinct tasks: its "
                  "held-out ids repeat instances that training saw.")  # fmt: skip
    print(f"\ntarget: trained >= {SHARE} x oracle, CPU time <= {MINUTES:g} min; "
          f"{'all met' if not missed else 'missed: ' + ', '.join(missed)}")  # fmt: skip
    if args.json:
        run = {"script": "benchmarks/sb3_defaults.py", "argv": sys.argv[1:], "date": date,
               "seed": 0 if args.seed is None else args.seed, "tasks": args.tasks,
               "samples": args.samples, "cpus": os.cpu_count(),
               "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
               "load_average_start": [round(x, 2) for x in start_load],
               "load_average_end": [round(x, 2) for x in os.getloadavg()],
               "timer": "time.process_time and time.perf_counter around the train-sb3 command",
               "target": {"share_of_oracle": SHARE, "cpu_minutes": MINUTES},
               "rows": [{"env": row["env"], "timesteps": row["timesteps"],
                         "bc_episodes": row["bc"], "T": row["T"],
                         "wall_s": round(row["wall"], 2), "cpu_s": round(row["cpu"], 2),
                         "trained": interval(row["trained"], row["T"]),
                         "oracle": interval(row["oracle"], row["T"]),
                         "random": interval(row["random"], row["T"]),
                         "met": row["env"] not in missed, "supply": row["supply"],
                         "behaviour_cloning": row["behaviour_cloning"],
                         "train_success_rate": row["train_success_rate"],
                         "load_average_end": row["load_average_end"]}
                        for row in rows]}  # fmt: skip
        write_json(args.json, run)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
