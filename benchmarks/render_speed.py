"""Measure ``render()`` cost: ``ansi`` text against ``rgb_array`` images, per grid family.

For each id it plays a fixed stream of oracle moves (resetting to a new task
at each episode's end) and times ``render()`` alone after every step, by CPU
time (``time.process_time``), which leaves out the time spent waiting for a
core on a shared machine.  It prints microseconds per frame for both modes,
their ratio, and the frame's shape and size.

Run: ``python benchmarks/render_speed.py [--frames 2000] [--json out.json]``

``--json`` also writes the rows with the date, the load average at the start
and end and the whole run's CPU seconds (docs/rendering.md's figures are
docs/bench/render_speed.json, written this way).
"""

from __future__ import annotations

import argparse
import datetime
import os
import time

import gymnasium as gym

import agent_envs
from agent_envs.evaluation.formatting import write_json

gym.register_envs(agent_envs)

IDS = (
    "agent_envs/Sokoban-v0",
    "agent_envs/Sokoban-8x8-v0",
    "agent_envs/FrozenLake-v0",
    "agent_envs/FrozenLake-8x8-v0",
    "agent_envs/Maze-7x7-v0",
    "agent_envs/Hanoi-3-v0",
    "agent_envs/Hanoi-5-v0",
)


def per_frame(env_id: str, mode: str, frames: int) -> tuple[float, tuple[int, ...]]:
    """Return (microseconds per render, shape of the last frame or ``()`` for text)."""
    env = gym.make(env_id, render_mode=mode).unwrapped
    env.reset(seed=0, options={"task_id": 0})
    spent, task, frame = 0.0, 0, None
    for _ in range(frames):
        start = time.process_time()
        frame = env.render()
        spent += time.process_time() - start
        _, _, terminated, _, _ = env.step(env.oracle_actions()[0])
        if terminated:
            task += 1
            env.reset(seed=task, options={"task_id": task})
    return spent / frames * 1e6, getattr(frame, "shape", ())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=2000, help="frames per id and mode")
    parser.add_argument("--json", help="also write the rows and the run's conditions here")
    args = parser.parse_args()
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    load_start, cpu = os.getloadavg(), time.process_time()
    rows = []
    print(f"{'id':36} {'ansi us':>8} {'rgb us':>8} {'ratio':>6}  frame")
    for env_id in IDS:
        text, _ = per_frame(env_id, "ansi", args.frames)
        image, shape = per_frame(env_id, "rgb_array", args.frames)
        size = shape[0] * shape[1] * shape[2]
        print(f"{env_id:36} {text:8.1f} {image:8.1f} {image / text:6.1f}  {shape} {size} B")
        rows.append({"env": env_id, "ansi_us": round(text, 2), "rgb_array_us": round(image, 2),
                     "ratio": round(image / text, 1), "shape": list(shape)})  # fmt: skip
    if args.json:
        run = {"script": "benchmarks/render_speed.py", "date": date, "frames": args.frames,
               "cpu_s": round(time.process_time() - cpu, 2), "cpus": os.cpu_count(),
               "load_average_start": [round(x, 2) for x in load_start],
               "load_average_end": [round(x, 2) for x in os.getloadavg()],
               "timer": "time.process_time, per render() call", "rows": rows}  # fmt: skip
        write_json(args.json, run)


if __name__ == "__main__":
    main()
