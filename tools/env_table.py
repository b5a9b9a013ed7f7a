"""Print the README's environment table from the registry.

The oracle-turn range is measured over task ids ``0..N-1`` (default 200), so
the table states what the envs really generate.  Run from the repo root:
``python tools/env_table.py``.
"""

from __future__ import annotations

import argparse

import gymnasium as gym

import agent_envs


def oracle_range(env_id: str, tasks: int) -> str:
    env = gym.make(env_id).unwrapped
    turns = []
    for task_id in range(tasks):
        env.reset(seed=0, options={"task_id": task_id})
        turns.append(env.oracle_turns())
    low, high = min(turns), max(turns)
    return str(low) if low == high else f"{low}..{high}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    args = parser.parse_args()
    print("| id | what it tests | oracle turns |")
    print("|---|---|---|")
    for entries in agent_envs.FAMILIES.values():
        for env_id, (_entry, _kwargs, description) in entries.items():
            print(f"| `{env_id}` | {description} | {oracle_range(env_id, args.tasks)} |")


if __name__ == "__main__":
    main()
