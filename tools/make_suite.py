"""Write a benchmark suite's data (``agent_envs/suites/<version>.json``): run once per release.

A released suite never changes: this script refuses to overwrite one.  For
each env id: ``TASKS`` held-out task ids from ``START`` that build distinct
instances, none the instance of any task in the few-shot example pool; the
oracle's turns on them give the T grid: tight = their median (rounded up),
then 2x and 4x.

    python tools/make_suite.py v1
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

import gymnasium as gym

import agent_envs
from agent_envs.core import FIRST_EXAMPLE_ID, MAX_TASK_ID
from agent_envs.splits import instance_split

#: Row name -> id: one id per family (its default, or its variant with many
#: instances), and slippery ice besides, FrozenLake's second row: the one env
#: whose oracle plans for the turns left, so a budget-aware agent can differ.
IDS = {
    "GuessNumber": "agent_envs/GuessNumber-v0",
    "Sokoban": "agent_envs/Sokoban-v0",
    "FrozenLake": "agent_envs/FrozenLake-v0",
    "FrozenLake-Slippery": "agent_envs/FrozenLake-Slippery-v0",
    "Maze": "agent_envs/Maze-7x7-v0",
    "Hanoi": "agent_envs/Hanoi-4-RandomStart-v0",
    "Wordle": "agent_envs/Wordle-v0",
    "Household": "agent_envs/Household-v0",
    "WebShop": "agent_envs/WebShop-v0",
    "KnowledgeSearch": "agent_envs/KnowledgeSearch-v0",
}
TASKS, START, SAMPLES, KS = 20, 50_000, 4, (1, 2, 4)
#: Every task of the example pool: whatever few-shot examples an agent shows come from it.
POOL = tuple(range(FIRST_EXAMPLE_ID, MAX_TASK_ID))


def oracle_turns(env_id: str, task_id: int) -> int:
    """Return the oracle's turns from the start of ``task_id``."""
    env = gym.make(env_id).unwrapped
    env.reset(seed=0, options={"task_id": task_id})
    return env.oracle_turns()


def entry(family: str, env_id: str) -> dict:
    """One suite entry: held-out tasks and the T grid from their oracle turns."""
    _, tasks = instance_split(env_id, 1, TASKS, held_out_start=START, exclude=POOL)
    tight = math.ceil(statistics.median(oracle_turns(env_id, t) for t in tasks))
    return {
        "env_id": env_id,
        "family": family,
        "tasks": tasks,
        "budgets": [tight, 2 * tight, 4 * tight],
    }


def main(version: str) -> None:
    gym.register_envs(agent_envs)
    path = Path(agent_envs.__file__).parent / "suites" / f"{version}.json"
    if path.exists():
        raise SystemExit(f"{path} is released: a change is a new version")
    data = {
        "version": version,
        "samples": SAMPLES,
        "ks": list(KS),
        "entries": [entry(family, env_id) for family, env_id in IDS.items()],
    }
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1])
