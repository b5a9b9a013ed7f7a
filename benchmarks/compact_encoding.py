"""CPU seconds of 4,096 MaskablePPO steps on the docs' ActionMasker stack: compact vs whole text.

The stack is docs/integrations.md's ``ActionMasker(EncodeObservation(DiscreteActions(
TurnBudget(gym.make(ENV_ID), 8))), ...)`` on FrozenLake-v0.  ``EncodeObservation``'s
default is the env's ``compact_view()`` (217 one-hot inputs); ``whole_text=True``
is the former default (25,088).  MaskablePPO runs with its default settings on
one torch thread; the figure is the process's CPU time (``time.process_time``),
which shared load inflates far less than wall time.

    python benchmarks/compact_encoding.py [--steps 4096] [--env agent_envs/FrozenLake-v0] \
        [--json out.json]

``--json`` also writes the rows with the date and the load average at the
start and end (docs/integrations.md's figures are docs/bench/compact_encoding.json,
written this way).

Not a test: it takes minutes, and its times depend on the machine.
"""

from __future__ import annotations

import argparse
import datetime
import os
import time

from agent_envs.evaluation.formatting import write_json


def measure(env_id: str, steps: int, whole_text: bool) -> tuple[int, float, float]:
    """Return (inputs to the network, CPU seconds, wall seconds) of ``steps`` training steps."""
    import gymnasium as gym
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.wrappers import ActionMasker

    import agent_envs  # noqa: F401  (registers the ids)
    from wrappers import DiscreteActions, EncodeObservation, TurnBudget

    encoded = EncodeObservation(
        DiscreteActions(TurnBudget(gym.make(env_id), 8)), whole_text=whole_text
    )
    env = ActionMasker(encoded, lambda e: e.action_masks())
    model = MaskablePPO("MlpPolicy", env, seed=0, device="cpu")
    inputs = int(model.policy.features_extractor.features_dim)
    cpu, wall = time.process_time(), time.perf_counter()
    model.learn(steps)
    return inputs, time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4096)
    parser.add_argument("--env", default="agent_envs/FrozenLake-v0")
    parser.add_argument("--json", help="also write the rows and the run's conditions here")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    load_start = os.getloadavg()
    print(f"load average at start: {load_start[0]:.2f}")
    print("| encoding | inputs | CPU s | wall s |\n|---|---|---|---|")
    rows = []
    for whole_text in (False, True):
        inputs, cpu, wall = measure(args.env, args.steps, whole_text)
        name = "whole text (whole_text=True)" if whole_text else "compact_view() (default)"
        print(f"| {name} | {inputs:,} | {cpu:.1f} | {wall:.1f} |", flush=True)
        rows.append({"encoding": "whole_text" if whole_text else "compact", "inputs": inputs,
                     "cpu_s": round(cpu, 2), "wall_s": round(wall, 2)})  # fmt: skip
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if args.json:
        run = {"script": "benchmarks/compact_encoding.py", "date": date, "env": args.env,
               "steps": args.steps, "torch_threads": torch.get_num_threads(),
               "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "cpus": os.cpu_count(),
               "load_average_start": [round(x, 2) for x in load_start],
               "load_average_end": [round(x, 2) for x in os.getloadavg()],
               "timer": "time.process_time around model.learn", "rows": rows}  # fmt: skip
        write_json(args.json, run)


if __name__ == "__main__":
    main()
