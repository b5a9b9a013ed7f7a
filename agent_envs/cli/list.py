"""``agent-envs list``: the registered env ids, by family, with their oracle-turn range.

The range is measured over task ids ``0..199`` by default
(:data:`~agent_envs.registration.ORACLE_TURN_TASKS`), the same ids as the
README's table, so the two agree.

Ids that installed env packages register (the ``agent_envs.envs`` entry-point
group) follow the project's own, one group per package.
"""

from __future__ import annotations

import argparse
import importlib

import gymnasium as gym

from agent_envs.arguments import int_arg
from agent_envs.registration import ORACLE_TURN_TASKS

#: The most tasks ``list --tasks`` may sample (each costs a reset of every env id).
MAX_LIST_TASKS = 1_000


def _oracle_range(env_id: str, tasks: int) -> str:
    from agent_envs.registration import oracle_turn_range

    span = oracle_turn_range(env_id, tasks)
    if span is None:
        return "-"
    low, high = span
    return str(low) if low == high else f"{low}-{high}"


def _summary(env_id: str) -> str:
    """Return the first line of the docstring of an env package's env class."""
    entry = gym.registry[env_id].entry_point
    if isinstance(entry, str):
        module, _, name = entry.partition(":")
        entry = getattr(importlib.import_module(module), name, None)
    doc = (getattr(entry, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else ""


def _cmd_list(args: argparse.Namespace) -> int:
    import agent_envs
    from agent_envs.registration import env_packages
    from wrappers.utils.validators import check_int

    check_int(args.tasks, "--tasks", 0, MAX_LIST_TASKS)
    families = {
        family: [(env_id, description) for env_id, (_, _, description) in entries.items()]
        for family, entries in agent_envs.FAMILIES.items()
    }
    for package, ids in env_packages().items():  # installed packages' ids, after ours
        families[f"{package} (env package)"] = [(env_id, _summary(env_id)) for env_id in ids]
    width = max((len(env_id) for rows in families.values() for env_id, _ in rows), default=20)
    print(f"  {'id'.ljust(width)}  {'turns':>7}  description")
    for family, rows in families.items():
        print(family)
        for env_id, description in rows:
            turns = _oracle_range(env_id, args.tasks) if args.tasks else "-"
            print(f"  {env_id.ljust(width)}  {turns:>7}  {description}")
    if args.tasks:
        print(f"(turns: the range of oracle_turns() at reset over tasks 0..{args.tasks - 1})")
    return 0


def add_list(listing: argparse.ArgumentParser) -> None:
    """Add ``list``'s arguments."""
    listing.add_argument(
        "--tasks",
        type=int_arg(0, MAX_LIST_TASKS),
        default=ORACLE_TURN_TASKS,
        help=f"measure the oracle-turn range over task ids 0..N-1 (default {ORACLE_TURN_TASKS}: "
        f"0..{ORACLE_TURN_TASKS - 1}, the README table's ids), at most {MAX_LIST_TASKS:,}; "
        "0 skips it",
    )
    listing.set_defaults(run=_cmd_list, parser=listing)
