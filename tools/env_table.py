"""Print the README's environment table from the registry.

The oracle-turn range is measured over task ids ``0..N-1`` (default
``ORACLE_TURN_TASKS``, 200, the ids ``agent-envs list`` measures too), so the
table states what the envs really generate.  Run from the repo root:
``python tools/env_table.py``.
"""

from __future__ import annotations

import argparse

import agent_envs
from agent_envs.registration import ORACLE_TURN_TASKS, oracle_turn_range


def oracle_range(env_id: str, tasks: int) -> str:
    low, high = oracle_turn_range(env_id, tasks)
    return str(low) if low == high else f"{low}..{high}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=ORACLE_TURN_TASKS)
    args = parser.parse_args()
    print("| id | what it tests | oracle turns |")
    print("|---|---|---|")
    for entries in agent_envs.FAMILIES.values():
        for env_id, (_entry, _kwargs, description) in entries.items():
            print(f"| `{env_id}` | {description} | {oracle_range(env_id, args.tasks)} |")


if __name__ == "__main__":
    main()
