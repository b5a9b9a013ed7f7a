"""``agent-envs compare``: the difference surface A - B of two saved results."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from agent_envs.arguments import UsageError, add_out_flag, add_overwrite_flag, add_plot_flag
from agent_envs.cli.outputs import COMPARISON, check_outputs, write_outputs


def _cmd_compare(args: argparse.Namespace) -> int:
    from agent_envs.evaluation import EvalResult, compare

    # a,b,c: one result per training seed, compared at the seed level.
    names = [[name for name in files.split(",") if name] for files in (args.a, args.b)]
    for side, files, which in zip(names, (args.a, args.b), ("A", "B"), strict=True):
        if not side:  # the Python API's "a must be an EvalResult" names no argument of this command
            raise UsageError(
                f"compare: {which} names no result file (got {files!r}); give a result JSON, "
                "or a,b,c for one per training seed."
            )
    paths = check_outputs(args, COMPARISON, inputs=names[0] + names[1])
    for side, which in zip(names, ("A", "B"), strict=True):
        _refuse_repeats(side, which)
    sides = []
    for files, side in zip((args.a, args.b), names, strict=True):
        results = [EvalResult.load(name) for name in side]
        sides.append(results if len(side) > 1 or files.endswith(",") else results[0])
    difference = compare(*sides)
    if difference.a == difference.b and difference.unit == "task":
        # Same agent name: the files tell A from B.
        difference.a, difference.b = Path(args.a).stem, Path(args.b).stem
    print(difference.table())
    write_outputs(difference, paths)
    return 0


def _refuse_repeats(files: list[str], which: str) -> None:
    """Refuse one result given twice as a seed of one side: the same file, or the same bytes.

    A seed-level comparison counts each file as a training seed; one run
    repeated six times would pass for six seeds and a significant difference.
    """
    from agent_envs.files import read_input

    seen: dict[object, str] = {}
    for name in files:
        for key in (Path(name).resolve(), hashlib.sha256(read_input(name, "result")).digest()):
            if key in seen:
                raise UsageError(
                    f"compare: {which} gives {seen[key]} and {name}, which are the same "
                    f"{'file' if isinstance(key, Path) else 'result'}; each seed needs its own "
                    "run's result."
                )
            seen[key] = name


def add_compare(cmp: argparse.ArgumentParser) -> None:
    """Add ``compare``'s arguments."""
    cmp.add_argument(
        "a", help="result JSON of agent A, or a,b,c: one per training seed (seed-level stats)"
    )
    cmp.add_argument("b", help="result JSON of agent B, or one per training seed")
    add_plot_flag(cmp, "write a diverging heatmap PNG (scale -1..1) here")
    add_out_flag(cmp, "write the comparison JSON here")
    add_overwrite_flag(cmp)
    cmp.set_defaults(run=_cmd_compare, parser=cmp)
