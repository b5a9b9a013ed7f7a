"""What does the Ray backend buy, and what does it cost?

Run:  python benchmarks/ray_speed.py [--repeats 3] [--workers 1,2]

Episodes/s of ``evaluate`` with ``RandomAgent`` on the local backend and on
Ray with 1 and 2 workers (best wall time of ``--repeats``, interleaved so that
a change in machine load hits every backend alike), on two envs:

1. CPU-heavy: Household-Large with diagnostics on (an oracle search every
   step).  Target on a 2-core machine: Ray with 2 workers reaches >= 1.6x the
   local episodes/s.
2. Cheap: GuessNumber with diagnostics off, where per-episode work is tiny
   and Ray's overhead shows.  Target: Ray is no more than 2x slower than local.

One local Ray instance (sized to the machine) is started up front and its
start-up time is printed apart: a cluster is started once, not per
evaluation.  The timed runs include creating the actors and shipping the
policy and env factory to them; that fixed cost is printed apart too (a
2-episode run).  Every run's success counts are checked to be
equal to the local backend's.
"""

from __future__ import annotations

import argparse
import logging
import os
import time

import numpy as np

from agent_envs.evaluation import evaluate
from baselines.simple_agents import RandomAgent

# ----------------------------------------------------------------- settings
# Big enough that the actors' start-up (printed apart) is a small share of a run:
# on an idle 2-core machine 1600 heavy episodes gave 1.54x, 4000 gave 1.71x.
HEAVY = dict(
    env="agent_envs/Household-Large-v0", tasks=1000, samples=4, budget=30, diagnostics=True
)
CHEAP = dict(env="agent_envs/GuessNumber-v0", tasks=100, samples=400, budget=10, diagnostics=False)
TINY = dict(env="agent_envs/GuessNumber-v0", tasks=2, samples=1, budget=10, diagnostics=False)


def run(case: dict, backend: dict) -> tuple[float, np.ndarray]:
    """Return the wall seconds of one evaluation and its success counts."""
    start = time.perf_counter()
    result = evaluate(
        RandomAgent(),
        case["env"],
        ks=[1],
        budgets=[case["budget"]],
        tasks=case["tasks"],
        samples=case["samples"],
        diagnostics=case["diagnostics"],
        n_bootstrap=10,
        **backend,
    )
    return time.perf_counter() - start, np.asarray(result.success_counts)


def measure(name: str, case: dict, workers: list[int], repeats: int, target: str) -> None:
    backends = {"local": {}} | {
        f"ray, {n} worker(s)": {"backend": "ray", "workers": n} for n in workers
    }
    best = dict.fromkeys(backends, float("inf"))
    reference = None
    for _ in range(repeats):
        for label, backend in backends.items():
            seconds, counts = run(case, backend)
            best[label] = min(best[label], seconds)
            if reference is None:
                reference = counts
            assert np.array_equal(counts, reference), f"{label} gave other success counts"
    episodes = case["tasks"] * case["samples"]
    diagnostics = "on" if case["diagnostics"] else "off"
    print(
        f"{name}: {case['env']}, {episodes} episodes, T={case['budget']}, "
        f"diagnostics {diagnostics}, RandomAgent (best of {repeats})"
    )
    local = episodes / best["local"]
    for label, seconds in best.items():
        rate = episodes / seconds
        print(f"   {label:18s}: {rate:8.1f} episodes/s  ({rate / local:.2f}x local)")
    print(f"   target: {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", default="1,2", help="Ray worker counts to measure")
    args = parser.parse_args()
    workers = [int(part) for part in args.workers.split(",")]

    import ray

    start = time.perf_counter()
    ray.init(include_dashboard=False, logging_level=logging.WARNING)
    started = time.perf_counter() - start
    cpus = ray.cluster_resources().get("CPU", 0)
    print(f"machine: {os.cpu_count()} cores; Ray started in {started:.1f}s with {cpus:g} CPUs")
    fixed = min(run(TINY, {"backend": "ray", "workers": 2})[0] for _ in range(args.repeats))
    local = min(run(TINY, {})[0] for _ in range(args.repeats))
    print(f"fixed cost of a 2-episode run: Ray (2 actors) {fixed:.2f}s, local {local:.2f}s")
    measure("1. CPU-heavy", HEAVY, workers, args.repeats, "ray, 2 workers >= 1.6x local")
    measure("2. Cheap", CHEAP, workers, args.repeats, "ray >= 0.5x local (no more than 2x slower)")
    ray.shutdown()


if __name__ == "__main__":
    main()
