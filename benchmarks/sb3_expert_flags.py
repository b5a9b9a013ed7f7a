"""Run docs/classic_rl.md's expert-flags ``train-sb3`` command and evaluate the oracle beside it.

Runs the command of docs/classic_rl.md's "Expert flags" section argument for
argument (``COMMAND``, without ``--out``), times it (wall clock and the
process's CPU time: training runs on one thread, and the default vector env is
in-process), reads the held-out Pass@(1,T) it wrote to ``result.json`` and
the size of its ``model.zip``, then evaluates the budget-aware oracle (the
budget visible to it) on the same task ids, T grid and attempts.

    python benchmarks/sb3_expert_flags.py [--json out.json]

``--json`` writes the figures with the date and the load average
(docs/classic_rl.md's figures are docs/bench/sb3_expert_flags.json, written
this way).  Not a test: it takes minutes, and its times depend on the machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from agent_envs.evaluation.formatting import write_json

#: docs/classic_rl.md's expert command, argument for argument (without ``--out``).
COMMAND = [
    "agent_envs/FrozenLake-Slippery-v0", "--algo", "maskable_ppo",
    "--budget-mix", "8,12,16,24,32", "--budget-feature", "--truncation-terminal",
    "--train-first", "1000", "--bc-episodes", "2500", "--bc-epochs", "15",
    "--net-arch", "256,256", "--timesteps", "8000",
    "--algo-kwargs", '{"learning_rate": 0.0001, "ent_coef": 0.0}',
    "--view-only", "--charset", "FHSG@", "--max-length", "60",
    "--eval-tasks", "100", "--eval-samples", "4", "--eval-k", "1", "--eval-budgets", "8,16,32",
]  # fmt: skip


def cells(result) -> dict[str, dict[str, float]]:
    """Return Pass@(1,T) with its interval per T of ``result``."""
    k = result.ks.index(1)
    return {str(t): {"pass": float(result.surface[k, j]), "low": float(result.ci_low[k, j]),
                     "high": float(result.ci_high[k, j])}
            for j, t in enumerate(result.budgets)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the command and the oracle; print the figures; write ``--json`` if given."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the figures and the run's conditions here")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    from agent_envs.evaluation import EvalResult, evaluate
    from baselines.sb3.train import MODEL
    from baselines.sb3.train import main as train_sb3
    from baselines.simple_agents import OracleAgent

    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        cpu, wall = time.process_time(), time.perf_counter()
        status = train_sb3([*COMMAND, "--out", folder])
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if status != 0:
            raise SystemExit(f"the command failed with status {status}")
        load_end = os.getloadavg()
        trained = EvalResult.load(Path(folder) / "result.json")
        model_bytes = (Path(folder) / MODEL / "model.zip").stat().st_size
    oracle = evaluate(
        OracleAgent(), COMMAND[0], ks=[1], budgets=list(trained.budgets),
        tasks=trained.task_ids, samples=trained.samples, visible_budget=True,
        diagnostics=False,
    )  # fmt: skip
    run = {
        "script": "benchmarks/sb3_expert_flags.py",
        "command": ["agent-envs", "train-sb3", *COMMAND],
        "date": date, "cpus": os.cpu_count(), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in load_end],
        "timer": "time.process_time and time.perf_counter around the train-sb3 command "
                 "(warm start, training and its own evaluation)",
        "cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "model_zip_bytes": model_bytes,
        "tasks": [min(trained.task_ids), max(trained.task_ids)], "samples": trained.samples,
        "trained": cells(trained),
        "oracle (visible budget)": cells(oracle),
    }  # fmt: skip
    print(json.dumps(run, indent=1))
    if args.json:
        write_json(args.json, run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
