"""The ``agent-envs`` entry point: the parser, the installed commands and the error policy.

Each built-in command lives in its own module (:mod:`agent_envs.cli.list`,
``eval``, ``compare``, ``play``, ``bench``, ``report``), which adds its
arguments and its ``run``.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import sys
import traceback
from collections.abc import Sequence

from agent_envs.arguments import SHOW_TRACEBACK, USER_ERRORS, Parser, UsageError
from agent_envs.cli.bench import add_bench
from agent_envs.cli.compare import add_compare
from agent_envs.cli.eval import add_eval
from agent_envs.cli.list import add_list
from agent_envs.cli.play import add_play
from agent_envs.cli.report import add_report

__all__ = ["main"]

_PROG = "agent-envs"
#: The commands defined here; any other comes from the ``agent_envs.commands`` group.
_BUILT_IN = frozenset({"list", "eval", "compare", "play", "bench", "report"})


def _run_command(name: str, argv: list[str], show_traceback: bool = False) -> int:
    """Run an installed command (entry-point group ``agent_envs.commands``), e.g. train-sb3.

    With ``show_traceback`` its user errors reach :func:`main`'s handler, which
    prints their trace, instead of ending in its own one line.
    """
    from agent_envs.plugins import load_command

    try:
        command = load_command(name)
    except ValueError as exc:
        raise UsageError(f"{name} is not available: {exc}") from None
    token = SHOW_TRACEBACK.set(show_traceback)
    try:
        return int(command(argv) or 0)
    finally:
        SHOW_TRACEBACK.reset(token)


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

    add_list(commands.add_parser("list", help="list the registered env ids"))
    add_eval(commands.add_parser("eval", help="measure an agent's Pass@(K,T) surface"))
    add_compare(commands.add_parser("compare", help="difference surface A - B of two results"))
    add_play(commands.add_parser("play", help="play an env yourself in the terminal"))
    add_bench(commands.add_parser("bench", help="score an agent over a whole versioned suite"))
    add_report(commands.add_parser("report", help="one self-contained HTML page of results"))
    for name in command_names():
        commands.add_parser(
            name, help=f"an installed command (arguments go to it; `{_PROG} {name} --help`)"
        )
    return parser


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
            return _run_command(argv[0], argv[1:], show_traceback)
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
        # One line, even when a policy's or library's message spans several.
        text = " ".join(scrub(str(exc)).split())  # masked before it is reflowed
        print(f"{_PROG}: error: {text}", file=sys.stderr)
        return 2
