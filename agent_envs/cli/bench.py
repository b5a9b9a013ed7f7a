"""``agent-envs bench``: score an agent over a whole versioned suite (:mod:`agent_envs.bench`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from agent_envs.arguments import (
    UsageError,
    add_agent_flags,
    add_backend_flags,
    add_history_flag,
    add_out_flag,
    add_transcripts_flag,
    add_visible_budget_flag,
)
from agent_envs.suites import SUITES
from wrappers.errors import UserInputError

#: The bench result's file name in ``--out``.
RESULT = "bench.json"


def _cmd_bench(args: argparse.Namespace) -> int:
    from agent_envs.bench import run_bench, score_table, write_result
    from agent_envs.cli.outputs import BENCH, check_replaceable
    from agent_envs.evaluation.run_log import RunLogLocked, another_log
    from agent_envs.files import check_output_path
    from agent_envs.plugins import AgentSpec, describe_agent, make_agent, parse_agent_kwargs
    from agent_envs.redaction import remember, secret_values
    from agent_envs.suites import load_suite, select

    kwargs = parse_agent_kwargs(args.agent_kwargs)
    remember(secret_values(kwargs))
    if not args.out.strip():  # Path("") is the current folder: never write there unasked
        raise UsageError("--out is empty; give a folder such as runs/bench-v1.")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; bench writes a folder (its logs and {RESULT}).")
    check_output_path(out / RESULT, "--out")
    # bench has no --overwrite: a bench.json it did not write is never replaced.
    check_replaceable(out / RESULT, "--out", BENCH, overwrite=None)
    suite = load_suite(args.suite)
    if args.only is not None:
        suite = select(suite, [env_id.strip() for env_id in args.only.split(",") if env_id.strip()])
    name = describe_agent(args.agent, kwargs)
    local = args.backend == "local"
    make_policy = (
        (lambda: make_agent(args.agent, kwargs))
        if local
        else (lambda: AgentSpec(args.agent, kwargs))
    )
    settings = {
        "backend": args.backend,
        "progress": True,
        "visible_budget": args.visible_budget,
        "transcripts": args.transcripts,
    }
    if args.workers is not None:
        settings["workers"] = args.workers
    try:
        result = run_bench(suite, make_policy, name, out, history=args.history, **settings)
    except (UserInputError, RunLogLocked) as error:  # a run log of --out refused
        instead = f"another --out (each id's run log is in {out / 'logs'})"
        raise UsageError(another_log(str(error), instead)) from None
    print(score_table(result))
    write_result(result, out / RESULT)
    print(f"wrote {out / RESULT}")
    return 0


def add_bench(parser: argparse.ArgumentParser) -> None:
    """Add ``bench``'s arguments: the suite, the agent, the output folder and the backend."""
    parser.add_argument("suite", choices=SUITES, help=f"the suite version ({', '.join(SUITES)})")
    add_agent_flags(parser)
    add_out_flag(
        parser,
        f"a folder: each id's run log (a rerun resumes them) and {RESULT}",
        required=True,
    )
    parser.add_argument(
        "--only",
        default=None,
        metavar="IDS",
        help="comma-separated env ids: run these rows of the suite only; the result says so "
        "and its score covers them only (default: every row)",
    )
    add_history_flag(parser, window=False)
    add_transcripts_flag(parser)
    add_visible_budget_flag(parser)
    add_backend_flags(parser)
    parser.set_defaults(run=_cmd_bench, parser=parser)
