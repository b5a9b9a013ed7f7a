"""``agent-envs eval``: measure an agent's Pass@(K,T) surface from the command line."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from agent_envs.arguments import (
    add_agent_flags,
    add_backend_flags,
    add_eval_arguments,
    add_history_flag,
    add_log_flag,
    add_out_flag,
    add_overwrite_flag,
    add_plot_flag,
    add_seed_flag,
    add_transcripts_flag,
    add_visible_budget_flag,
    int_arg,
    number_arg,
)
from agent_envs.cli.outputs import RESULT, check_outputs, write_outputs
from wrappers.utils.validators import MAX_COUNT


def _with_history(env_id: str, window: int, *, record: str = "action") -> tuple[Any, str]:
    """Return the env with ``info["messages"]`` holding the dialogue, and its id.

    The recipe's ``ChatHistory`` goes outside the budget, as in the stack GRPO
    training plays (:func:`agent_envs.env_stack.make_stack`): ``record="raw"``
    keeps an LLM's whole replies, the format a model trained with
    ``train-llm`` was trained on.  The evaluator adds the budget (its T grid
    and visibility).
    """
    from agent_envs.env_stack import StackOptions, StackRecipe
    from agent_envs.evaluation.stack import resolve_env

    options = StackOptions(history=True, window=window or None, record=record)
    return resolve_env(StackRecipe(env_id, options), None)


def _cmd_eval(args: argparse.Namespace) -> int:
    from agent_envs.plugins import parse_agent_kwargs
    from agent_envs.redaction import remember, secret_values

    kwargs = parse_agent_kwargs(args.agent_kwargs)
    # From here on, whatever is printed or stored (by the agent, a library, the
    # run log) has these values masked; main() masks error messages too.
    remember(secret_values(kwargs))
    return _run_eval(args, kwargs)


def _settings(args: argparse.Namespace, agent_name: str) -> Any:
    """Build the run's one EvalSettings from the parsed flags (their dests are its fields)."""
    from agent_envs.evaluation import EvalSettings

    grids = ("ks", "budgets", "samples", "tasks")
    same = {
        field.name: getattr(args, field.name)
        for field in dataclasses.fields(EvalSettings)
        if field.name not in grids and hasattr(args, field.name)
    }
    same["log_path"] = args.log
    # A bar on a terminal, a record every 30 s where stderr is a file: never silent.
    same["progress"] = True if args.progress is None else args.progress
    return args.flags.settings(args, **same, agent_name=agent_name)


def _run_eval(args: argparse.Namespace, kwargs: dict[str, Any]) -> int:
    from agent_envs.evaluation import RunAborted, evaluate
    from agent_envs.plugins import AgentSpec, describe_agent, make_agent

    paths = check_outputs(args, RESULT)
    settings = _settings(args, describe_agent(args.agent, kwargs))
    # On Ray each worker builds its own agent from the spec; locally one is built here.
    local = settings.backend == "local"
    agent = make_agent(args.agent, kwargs) if local else AgentSpec(args.agent, kwargs)
    env: Any = args.env_id
    if args.history is not None:
        env, env_name = _with_history(args.env_id, args.history, record=args.history_record)
        settings = settings.resolved(env_name=env_name)
    result = evaluate(agent, env, settings)
    if result.episodes and result.errors == result.episodes:
        # Nothing was measured: a table of zeros and a result file would pass
        # for a measurement.  The log keeps the episodes; --retry-errors redoes them.
        rerun = " with the same --log and --retry-errors" if args.log else ""
        raise RunAborted(
            f"every episode failed, so nothing was measured and nothing written: "
            f"{result.error_summary()}. Fix the agent or its server and rerun{rerun}."
        )
    print(result.table())
    write_outputs(result, paths)
    return 0


def add_eval(ev: argparse.ArgumentParser) -> None:
    """Add ``eval``'s arguments: the agent, the grids (shared with the training commands), ..."""
    from agent_envs.evaluation.settings import MAX_EPISODES, MAX_STEP_QUALITY

    ev.add_argument("env_id", help="a registered id, e.g. agent_envs/Sokoban-v0")
    add_agent_flags(ev)
    flags = add_eval_arguments(ev, note=f"at most {MAX_EPISODES:,} episodes a run")
    add_seed_flag(ev, "base seed, an int >= 0")
    _add_eval_outputs(ev)
    add_visible_budget_flag(ev)
    ev.add_argument(
        "--diagnostics",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="oracle diagnostics, which cost oracle calls (default: on)",
    )
    add_history_flag(ev, window=True)
    ev.add_argument(
        "--history-record",
        choices=("action", "raw"),
        default="action",
        help="what the history keeps of each reply: the parsed action (default) or the whole "
        "raw reply (the format train-llm trains on)",
    )
    ev.add_argument(
        "--step-quality",
        type=int_arg(0, MAX_STEP_QUALITY),
        default=0,
        metavar="N",
        help=f"also judge the agent on N shared reference states per task, at most "
        f"{MAX_STEP_QUALITY:,} (default 0: off)",
    )
    _add_eval_execution(ev)
    ev.set_defaults(run=_cmd_eval, parser=ev, flags=flags)


def _add_eval_outputs(ev: argparse.ArgumentParser) -> None:
    """Add where ``eval`` writes: the result, the resumable log, the plot, transcripts."""
    add_out_flag(ev, "write the result JSON here")
    add_log_flag(
        ev, "JSONL run log, owned by one run at a time; rerun with it to resume (default: none)"
    )
    add_plot_flag(ev, "write a heatmap PNG here, .png added to a bare name; needs [plot]")
    add_overwrite_flag(ev)
    add_transcripts_flag(ev)
    ev.add_argument(
        "--retry-errors", action="store_true", help="on resume, redo error episodes (default: off)"
    )
    ev.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress: a bar on a terminal, else a one-line record every 30 s (default: on)",
    )


def _add_eval_execution(ev: argparse.ArgumentParser) -> None:
    """Add how ``eval`` plays: errors, batching, the bootstrap, the backend and Ray."""
    from agent_envs.evaluation.settings import MAX_BOOTSTRAP, MAX_EPISODES

    ev.add_argument(
        "--max-error-rate",
        type=number_arg(0, 1),
        default=0.2,
        help="stop when more than this share of episodes raised in the agent (default 0.2)",
    )
    ev.add_argument(
        "--batch-size",
        type=int_arg(1, MAX_EPISODES),
        default=None,
        help="episodes in lockstep for an agent with act_batch (default 64, else 1)",
    )
    ev.add_argument(
        "--n-bootstrap",
        type=int_arg(1, MAX_BOOTSTRAP),
        default=1000,
        help=f"bootstrap resamples, at most {MAX_BOOTSTRAP:,} (default 1000)",
    )
    add_backend_flags(ev)
    ev.add_argument(
        "--ray-address",
        default=None,
        help="join a Ray cluster: auto or ray://host:10001 (default: start a local one)",
    )
    ev.add_argument(
        "--gpus-per-worker",
        type=number_arg(0, MAX_COUNT),
        default=0.0,
        help="GPUs each Ray actor reserves (default 0)",
    )
