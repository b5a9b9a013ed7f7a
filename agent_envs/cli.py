"""The ``agent-envs`` command line: list, eval, compare, play, and installed commands.

Installed commands (such as ``train-sb3``) and agents (``--agent NAME``) are
found through the entry-point groups ``agent_envs.commands`` and
``agent_envs.agents`` (see :mod:`agent_envs.plugins`).

Every user error ends in one line on stderr and exit status 2 (pass
``--traceback`` before the command to see the full trace instead).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import importlib
import importlib.util
import logging
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import agent_envs
from agent_envs.arguments import USER_ERRORS, Parser, UsageError, add_eval_arguments
from agent_envs.protocol import SUCCESS, TASK_ID, TURN

__all__ = ["main"]

_PROG = "agent-envs"
#: The commands defined here; any other comes from the ``agent_envs.commands`` group.
_BUILT_IN = frozenset({"list", "eval", "compare", "play"})


def _check_outputs(args: argparse.Namespace, inputs: Sequence[str] = ()) -> dict[str, Path]:
    """Return the real path of every output flag given, refusing unusable ones now.

    Checked before the first episode (and before an agent loads a model), so
    that a run is never lost to an output path that fails at the end: each
    path must be writable (:func:`check_output_path`), no two outputs may be
    one file (``--out`` equal to ``--log`` would overwrite the log), and no
    output may overwrite an input.  ``--plot`` is checked as the file really
    written (``.png`` added to a bare name).
    """
    from agent_envs.evaluation.plotting import plot_path
    from agent_envs.files import check_output_path

    paths: dict[str, Path] = {}
    for flag in ("--out", "--log", "--plot"):
        value = getattr(args, flag[2:], None)
        if value is not None:  # "" too: an empty path is refused, not ignored
            check_output_path(value, flag)  # a folder given as --plot is a mistake too
            paths[flag] = (
                check_output_path(plot_path(value), flag) if flag == "--plot" else Path(value)
            )
    owners = {Path(path).resolve(): "input" for path in inputs}
    for flag, path in paths.items():
        other = owners.setdefault(path.resolve(), flag)
        if other != flag:
            what = "an input file" if other == "input" else other
            raise UsageError(f"{flag} {path} is the same file as {what}; give each its own path.")
    if "--plot" in paths:
        try:
            found = importlib.util.find_spec("matplotlib") is not None
        except (ImportError, ValueError):  # a broken or blocked install
            found = False
        if not found:
            raise UsageError(f"--plot needs matplotlib: {agent_envs.install_hint('plot')}.")
    return paths


# ----------------------------------------------------------------- commands
def _oracle_range(env_id: str, tasks: int) -> str:
    from agent_envs.registration import oracle_turn_range

    span = oracle_turn_range(env_id, tasks)
    if span is None:
        return "-"
    low, high = span
    return str(low) if low == high else f"{low}-{high}"


def _write_outputs(result: Any, paths: dict[str, Path]) -> None:
    """Save ``result`` (an EvalResult or CompareResult) where --out/--plot ask."""
    if "--out" in paths:
        result.save(paths["--out"])
        print(f"wrote {paths['--out']}", file=sys.stderr)
    if "--plot" in paths:
        print(f"wrote {result.plot(paths['--plot'])}", file=sys.stderr)


#: The most tasks ``list --tasks`` may sample (each costs a reset of every env id).
MAX_LIST_TASKS = 1_000


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


def _with_history(
    env_id: str, window: int, *_budget: Any, record: str = "action"
) -> tuple[Any, str]:
    """Return the env with ``info["messages"]`` holding the dialogue, and its id.

    The recipe's ``ChatHistory`` goes outside the budget, as in the stack GRPO
    training plays (:func:`agent_envs.env_stack.make_stack`): ``record="raw"``
    keeps an LLM's whole replies, the format a model trained with
    ``train-llm`` was trained on.  The evaluator adds the budget (its T grid
    and visibility); the old positional ``max_budget, visible[, record]``
    are taken and left to it.
    """
    if len(_budget) == 3:  # the old call (env_id, window, max_budget, visible, record)
        record = _budget[2]
    from agent_envs.env_stack import StackOptions, StackRecipe
    from agent_envs.evaluation.stack import resolve_env

    if window < 0:
        raise UsageError(f"--history takes a window >= 1 (or nothing for all), got {window}.")
    make_env, name = resolve_env(env_id, None)
    options = StackOptions(history=True, window=window or None, record=record)
    return StackRecipe(make_env, options), name


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
    same["progress"] = sys.stderr.isatty() if args.progress is None else args.progress
    return args.flags.settings(args, **same, agent_name=agent_name)


def _run_eval(args: argparse.Namespace, kwargs: dict[str, Any]) -> int:
    from agent_envs.evaluation import RunAborted, evaluate
    from agent_envs.plugins import AgentSpec, describe_agent, make_agent

    paths = _check_outputs(args)
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
    _write_outputs(result, paths)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from agent_envs.evaluation import EvalResult, compare

    # a,b,c: one result per training seed, compared at the seed level.
    names = [[name for name in files.split(",") if name] for files in (args.a, args.b)]
    paths = _check_outputs(args, inputs=names[0] + names[1])
    sides = []
    for files, side in zip((args.a, args.b), names, strict=True):
        results = [EvalResult.load(name) for name in side]
        sides.append(results if len(side) > 1 or files.endswith(",") else results[0])
    difference = compare(*sides)
    if difference.a == difference.b and difference.unit == "task":
        # Same agent name: the files tell A from B.
        difference.a, difference.b = Path(args.a).stem, Path(args.b).stem
    print(difference.table())
    _write_outputs(difference, paths)
    return 0


_PLAY_HELP = (
    "Type an action and press Enter. "
    ":actions lists legal actions, :hint asks the oracle, :quit stops."
)
_PLAY_COMMANDS = (":actions", ":hint", ":help", ":quit", ":q")


def _not_an_action(line: str) -> str | None:
    """Return why ``line`` is not an action to send, or ``None`` if it is one.

    Such a line never uses up a turn: an empty line is a slip of the Enter
    key, an unknown ``:command`` a typo, and control characters come from
    keys such as the arrows (``ESC [ A``), which a terminal without line
    editing passes through.
    """
    text = line.strip()
    if not text:
        return "Empty line: type an action (or :help)."
    if text.startswith(":") and text.lower() not in _PLAY_COMMANDS:
        return f"Unknown command {text!r}: the commands are {', '.join(_PLAY_COMMANDS[:4])}."
    if any(ord(char) < 32 or ord(char) == 127 for char in text):
        return "That line holds control keys (arrow keys?): type the action as text."
    return None


def _without_echo(observation: str) -> str:
    """Drop the feedback lines that the view below them repeats, so each shows once.

    Wordle's feedback ``CRANE -> . . . . Y`` is also the last row of its
    board; a person reads the board.  Agents still get the full observation.
    """
    feedback, gap, view = observation.partition("\n\n")
    if not gap:
        return observation
    repeated = set(view.splitlines())
    kept = [line for line in feedback.splitlines() if line not in repeated]
    return "\n".join(kept) + gap + view if kept else view


def _cmd_play(args: argparse.Namespace) -> int:
    from agent_envs.core import MAX_TASK_ID
    from agent_envs.evaluation.stack import resolve_env
    from wrappers import TurnBudget
    from wrappers.validators import check_int

    seed = check_int(args.seed, "--seed", 0)
    task = check_int(args.task, "--task", 0)
    if task >= MAX_TASK_ID:
        raise UsageError(f"--task must be below {MAX_TASK_ID}, got {task}.")
    budget = check_int(args.budget, "--budget", 1)
    make_env, env_id = resolve_env(args.env_id, None)
    env = TurnBudget(make_env(), max_turns=budget, visible=True)
    observation, _ = env.reset(seed=seed, options={TASK_ID: task})
    base: Any = env.unwrapped
    print(f"{env_id}, task {task}, {budget} turns. {_PLAY_HELP}\n")
    print(observation)
    while True:
        print("> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            print("\nEnd of input: stopped.")
            return 0
        action = line.rstrip("\r\n")
        command = action.strip().lower()
        if command in (":quit", ":q"):
            print("Stopped.")
            return 0
        if command in (":actions", ":hint", ":help"):
            method = {":actions": "admissible_actions", ":hint": "oracle_actions"}.get(command)
            try:
                shown = getattr(base, method)() if method else _PLAY_HELP
            except (AttributeError, NotImplementedError, TypeError):
                shown = "not available for this env"
            print(shown if isinstance(shown, str) else ", ".join(shown) or "(none)")
            continue
        problem = _not_an_action(action)
        if problem:
            print(f"{problem} No turn was used.")
            continue
        observation, _, terminated, truncated, info = env.step(action)
        print(_without_echo(observation))
        if info.get(SUCCESS):
            print(f"Solved in {info[TURN]} turns.")
            return 0
        if terminated:
            print("Failed: the episode ended without success.")
        elif truncated:
            print(f"Out of turns: not solved within {budget}.")
        if terminated or truncated:
            answer = getattr(base, "answer", lambda: None)()
            if answer is not None:
                print(f"The answer was: {answer}")
            return 0


def _run_command(name: str, argv: list[str]) -> int:
    """Run an installed command (entry-point group ``agent_envs.commands``), e.g. train-sb3."""
    from agent_envs.plugins import load_command

    try:
        command = load_command(name)
    except ValueError as exc:
        raise UsageError(f"{name} is not available: {exc}") from None
    return int(command(argv) or 0)


# ------------------------------------------------------------------ parser
def _parser() -> argparse.ArgumentParser:
    """Build the parser; every option's help says its default (a test checks it)."""
    from agent_envs.plugins import command_names

    parser = Parser(
        prog=_PROG,
        description="Verifiable multi-turn text environments and the Pass@(K,T) evaluator.",
    )
    parser.add_argument("--traceback", action="store_true", help="show full tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="list the registered env ids")
    listing.add_argument(
        "--tasks",
        type=int,
        default=20,
        help=f"tasks sampled for the oracle-turn range, at most {MAX_LIST_TASKS:,}; 0 to skip "
        "it (default 20)",
    )
    listing.set_defaults(run=_cmd_list, parser=listing)
    _add_eval(commands.add_parser("eval", help="measure an agent's Pass@(K,T) surface"))
    _add_compare(commands.add_parser("compare", help="difference surface A - B of two results"))
    _add_play(commands.add_parser("play", help="play an env yourself in the terminal"))
    for name in command_names():
        commands.add_parser(
            name, help=f"an installed command (arguments go to it; `{_PROG} {name} --help`)"
        )
    return parser


def _add_eval(ev: argparse.ArgumentParser) -> None:
    """Add ``eval``'s arguments: the agent, the grids (shared with the training commands), ..."""
    from agent_envs.evaluation.settings import MAX_EPISODES
    from agent_envs.plugins import agent_names

    ev.add_argument("env_id", help="a registered id, e.g. agent_envs/Sokoban-v0")
    ev.add_argument(
        "--agent",
        default="random",
        help=f"one of {', '.join(agent_names())}, or module:Class (default random)",
    )
    ev.add_argument(
        "--agent-kwargs",
        default=None,
        help="JSON keyword arguments for the agent, e.g. '{\"epsilon\": 0.1}'; secrets such "
        "as api_key are never shown or stored (default: none)",
    )
    flags = add_eval_arguments(ev, note=f"at most {MAX_EPISODES:,} episodes a run")
    ev.add_argument("--seed", type=int, default=0, help="base seed, an int >= 0 (default 0)")
    _add_eval_outputs(ev)
    ev.add_argument(
        "--visible-budget",
        action="store_true",
        help="show the turns left in every observation (default: hidden)",
    )
    ev.add_argument(
        "--diagnostics",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="oracle diagnostics, which cost oracle calls (default: on)",
    )
    ev.add_argument(
        "--history",
        type=int,
        nargs="?",
        const=0,
        default=None,
        metavar="WINDOW",
        help="give the agent the dialogue in info['messages'] (wrappers.ChatHistory); "
        "WINDOW keeps the last exchanges only (default: no history; without WINDOW: all)",
    )
    ev.add_argument(
        "--history-record",
        choices=("action", "raw"),
        default="action",
        help="what the history keeps of each reply: the parsed action (default) or the whole "
        "raw reply (the format train-llm trains on)",
    )
    ev.add_argument(
        "--step-quality",
        type=int,
        default=0,
        metavar="N",
        help="also judge the agent on N shared reference states per task (default 0: off)",
    )
    _add_eval_execution(ev)
    ev.set_defaults(run=_cmd_eval, parser=ev, flags=flags)


def _add_eval_outputs(ev: argparse.ArgumentParser) -> None:
    """Add where ``eval`` writes: the result, the resumable log, the plot, transcripts."""
    ev.add_argument("--out", default=None, help="write the result JSON here (default: none)")
    ev.add_argument(
        "--log",
        default=None,
        help="JSONL run log, owned by one run at a time; rerun with it to resume (default: none)",
    )
    ev.add_argument(
        "--plot",
        default=None,
        help="write a heatmap PNG here, .png added to a bare name; needs [plot] (default: none)",
    )
    ev.add_argument(
        "--transcripts", action="store_true", help="log observations and actions (default: off)"
    )
    ev.add_argument(
        "--retry-errors", action="store_true", help="on resume, redo error episodes (default: off)"
    )
    ev.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar (default: when stderr is a terminal)",
    )


def _add_eval_execution(ev: argparse.ArgumentParser) -> None:
    """Add how ``eval`` plays: errors, batching, the bootstrap, the backend and Ray."""
    ev.add_argument(
        "--max-error-rate",
        type=float,
        default=0.2,
        help="stop when more than this share of episodes raised in the agent (default 0.2)",
    )
    ev.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="episodes in lockstep for an agent with act_batch (default 64, else 1)",
    )
    ev.add_argument(
        "--n-bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)"
    )
    ev.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="play episodes here or on Ray actors (needs [ray]); same numbers (default local)",
    )
    ev.add_argument(
        "--ray-address",
        default=None,
        help="join a Ray cluster: auto or ray://host:10001 (default: start a local one)",
    )
    ev.add_argument(
        "--workers", type=int, default=None, help="Ray actors (default: one per cluster CPU)"
    )
    ev.add_argument(
        "--gpus-per-worker",
        type=float,
        default=0.0,
        help="GPUs each Ray actor reserves (default 0)",
    )


def _add_compare(cmp: argparse.ArgumentParser) -> None:
    """Add ``compare``'s arguments."""
    cmp.add_argument(
        "a", help="result JSON of agent A, or a,b,c: one per training seed (seed-level stats)"
    )
    cmp.add_argument("b", help="result JSON of agent B, or one per training seed")
    cmp.add_argument(
        "--plot",
        default=None,
        help="write a diverging heatmap PNG (scale -1..1) here (default: none)",
    )
    cmp.add_argument("--out", default=None, help="write the comparison JSON here (default: none)")
    cmp.set_defaults(run=_cmd_compare, parser=cmp)


def _add_play(play: argparse.ArgumentParser) -> None:
    """Add ``play``'s arguments."""
    play.add_argument("env_id", help="a registered id, e.g. agent_envs/Wordle-v0")
    play.add_argument("--task", type=int, default=0, help="task id, an int >= 0 (default 0)")
    play.add_argument("--budget", type=int, default=50, help="turns, an int >= 1 (default 50)")
    play.add_argument(
        "--seed", type=int, default=0, help="seed of the episode, an int >= 0 (default 0)"
    )
    play.set_defaults(run=_cmd_play, parser=play)


def _parse(argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; an unknown option is reported with its own command's options.

    argparse leaves options that no parser knows to the top-level parser,
    which would point at the top-level usage for ``eval --sampels 8``.
    """
    args, unknown = _parser().parse_known_args(argv)
    if unknown:
        command: argparse.ArgumentParser = args.parser
        known = [option for action in command._actions for option in action.option_strings]
        close = difflib.get_close_matches(unknown[0].split("=")[0], known, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise UsageError(
            f"unrecognized arguments: {' '.join(unknown)} ({hint}see `{command.prog} --help`)."
        )
    return args


class _Say(logging.Handler):
    """Show the library's INFO messages (such as what a resume found) on stderr.

    It writes to whatever ``sys.stderr`` is when a message comes, and is
    attached only while :func:`main` runs, so the library keeps its logging
    untouched when imported.
    """

    def emit(self, record: logging.LogRecord) -> None:
        print(f"{_PROG}: {record.getMessage()}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    from agent_envs.redaction import remember, scrubbed_output

    library = logging.getLogger("agent_envs")
    handler, level = _Say(logging.INFO), library.level
    library.addHandler(handler)
    library.setLevel(logging.INFO)
    remember((), environment=True)  # secret-named variables such as $OPENAI_API_KEY
    try:
        with scrubbed_output():  # stdout, stderr, warnings, logging and progress bars
            return _main(argv)
    finally:
        library.removeHandler(handler)
        library.setLevel(level)


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    show_traceback = "--traceback" in argv[:1]
    if show_traceback:
        argv = argv[1:]
    # What Ctrl-C leaves behind, truthfully: only eval --log keeps finished episodes.
    interrupted = "interrupted."
    try:
        from agent_envs.plugins import command_names

        if argv[:1] and argv[0] not in _BUILT_IN and argv[0] in command_names():
            return _run_command(argv[0], argv[1:])
        args = _parse(argv)
        if args.command == "eval":
            interrupted = (
                f"interrupted; the finished episodes are in {args.log}: rerun the same "
                "command to resume."
                if args.log
                else "interrupted; nothing was written (pass --log to make a run resumable)."
            )
        return args.run(args)
    except KeyboardInterrupt:
        print(f"{_PROG}: {interrupted}", file=sys.stderr)
        return 130
    except Exception as exc:
        from agent_envs.redaction import scrub

        if show_traceback or not isinstance(exc, USER_ERRORS):  # the one tuple of user errors
            # A bug, or asked for: the whole trace, with secrets masked all the same.
            trace = "".join(traceback.format_exception(exc))
            print(scrub(trace), end="", file=sys.stderr)
            return 1
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        # One line, even when a policy's or library's message spans several.
        text = " ".join(scrub(str(message)).split())  # masked before it is reflowed
        print(f"{_PROG}: error: {text}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
