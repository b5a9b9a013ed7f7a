"""``agent-envs bench``: score an agent over a whole versioned suite (:mod:`agent_envs.bench`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from agent_envs.arguments import UsageError, int_arg
from agent_envs.suites import SUITES
from wrappers.errors import UserInputError
from wrappers.utils.validators import MAX_COUNT

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
    from agent_envs.plugins import agent_names

    parser.add_argument("suite", choices=SUITES, help=f"the suite version ({', '.join(SUITES)})")
    parser.add_argument(
        "--agent",
        default="random",
        help=f"one of {', '.join(agent_names())}, or module:Class (default random)",
    )
    parser.add_argument(
        "--agent-kwargs",
        default=None,
        help="JSON keyword arguments for the agent; secrets are never shown or stored "
        "(default: none)",
    )
    parser.add_argument(
        "--out",
        required=True,
        help=f"a folder: each id's run log (a rerun resumes them) and {RESULT} (required)",
    )
    parser.add_argument(
        "--only",
        default=None,
        metavar="IDS",
        help="comma-separated env ids: run these rows of the suite only; the result says so "
        "and its score covers them only (default: every row)",
    )
    parser.add_argument(
        "--history",
        choices=("raw", "action"),
        default=None,
        help="give the agent the dialogue in info['messages'], keeping each whole reply (raw, "
        "the format train-llm trains on) or its action; an LLM agent needs it (default: none)",
    )
    parser.add_argument(
        "--transcripts",
        action="store_true",
        help="keep every observation and reply in the run logs, for the report's transcript "
        "browser (default: off)",
    )
    parser.add_argument(
        "--visible-budget",
        action="store_true",
        help="show the turns left in every observation; each T then runs on its own, and a "
        "budget-aware agent (the oracle of a budget-aware env) plans for it (default: hidden)",
    )
    parser.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="play episodes here or on Ray actors (needs [ray]) (default local)",
    )
    parser.add_argument(
        "--workers",
        type=int_arg(1, MAX_COUNT),
        default=None,
        help="Ray actors (default: one per cluster CPU)",
    )
    parser.set_defaults(run=_cmd_bench, parser=parser)
