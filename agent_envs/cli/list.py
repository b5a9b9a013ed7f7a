"""``agent-envs list``: the registered env ids, by family, with their oracle-turn range."""

from __future__ import annotations

import argparse

#: The most tasks ``list --tasks`` may sample (each costs a reset of every env id).
MAX_LIST_TASKS = 1_000


def _oracle_range(env_id: str, tasks: int) -> str:
    from agent_envs.registration import oracle_turn_range

    span = oracle_turn_range(env_id, tasks)
    if span is None:
        return "-"
    low, high = span
    return str(low) if low == high else f"{low}-{high}"


def _cmd_list(args: argparse.Namespace) -> int:
    import agent_envs
    from wrappers.validators import check_int

    check_int(args.tasks, "--tasks", 0, MAX_LIST_TASKS)
    width = max((len(env_id) for env_id in agent_envs.env_ids()), default=20)
    print(f"  {'id'.ljust(width)}  {'turns':>7}  description")
    for family, entries in agent_envs.FAMILIES.items():
        print(family)
        for env_id, (_entry, _kwargs, description) in entries.items():
            turns = _oracle_range(env_id, args.tasks) if args.tasks else "-"
            print(f"  {env_id.ljust(width)}  {turns:>7}  {description}")
    if args.tasks:
        print(f"(turns: the range of oracle_turns() at reset over tasks 0..{args.tasks - 1})")
    return 0


def add_list(listing: argparse.ArgumentParser) -> None:
    """Add ``list``'s arguments."""
    listing.add_argument(
        "--tasks",
        type=int,
        default=20,
        help=f"tasks sampled for the oracle-turn range, at most {MAX_LIST_TASKS:,}; 0 to skip "
        "it (default 20)",
    )
    listing.set_defaults(run=_cmd_list, parser=listing)
