"""``agent-envs play``: play an env yourself in the terminal."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from typing import Any

from agent_envs.arguments import UsageError, add_seed_flag
from wrappers.protocol import BUDGET, SUCCESS, TASK_ID, TURN
from wrappers.utils.validators import MAX_SEED, MAX_TURNS

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
    if any("\ud800" <= char <= "\udfff" for char in text):  # surrogates: _tolerant_input
        return "That line is not UTF-8 text: type the action as text."
    return None


def _tolerant_input() -> None:
    """Let standard input read bytes that are not UTF-8, as lone surrogates.

    Under a UTF-8 locale Python decodes standard input strictly, so one such
    byte (Latin-1 text pasted in, a stray key) ended the game with a
    ``UnicodeDecodeError`` traceback.  Read as surrogates instead, the line is
    refused by :func:`_not_an_action` and uses no turn.  It must run before the
    first read (Python refuses the change afterwards); a stream without
    ``reconfigure`` (a test's ``StringIO``) holds text already.
    """
    reconfigure = getattr(sys.stdin, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(io.UnsupportedOperation, ValueError):
            reconfigure(errors="surrogateescape")


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
    from wrappers.budget import resolve_budget
    from wrappers.utils.validators import check_at_most, check_budget, check_int

    seed = check_at_most(check_int(args.seed, "--seed", 0), "--seed", MAX_SEED)
    task = check_int(args.task, "--task", 0)
    if task >= MAX_TASK_ID:
        raise UsageError(f"--task must be below {MAX_TASK_ID}, got {task}.")
    budget = check_budget(args.budget, "--budget")
    recipe, env_id = resolve_env(args.env_id, None)
    # The one budget function: a stack that has its own budget wrapper keeps it (and
    # gets --budget for this episode), and one that would break T is refused.
    env = resolve_budget(recipe.env(), budget, visible=True)
    observation, _ = env.reset(seed=seed, options={TASK_ID: task, BUDGET: budget})
    base: Any = env.unwrapped
    print(f"{env_id}, task {task}, {budget} turns. {_PLAY_HELP}\n")
    _tolerant_input()
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
            print(_answer(base, command))
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


def _answer(base: Any, command: str) -> str:
    """Return what ``:actions``, ``:hint`` or ``:help`` shows for the env ``base``."""
    method = {":actions": "admissible_actions", ":hint": "oracle_actions"}.get(command)
    try:
        shown = getattr(base, method)() if method else _PLAY_HELP
    except (AttributeError, NotImplementedError, TypeError):
        shown = "not available for this env"
    return shown if isinstance(shown, str) else ", ".join(shown) or "(none)"


def add_play(play: argparse.ArgumentParser) -> None:
    """Add ``play``'s arguments."""
    from agent_envs.core import MAX_TASK_ID

    play.add_argument("env_id", help="a registered id, e.g. agent_envs/Wordle-v0")
    play.add_argument(
        "--task",
        type=int,
        default=0,
        help=f"task id, an int >= 0 and below {MAX_TASK_ID:,} (default 0)",
    )
    play.add_argument(
        "--budget", type=int, default=50, help=f"turns, an int in [1, {MAX_TURNS:,}] (default 50)"
    )
    add_seed_flag(play, f"seed of the episode, an int in [0, {MAX_SEED:,}]", bounded=False)
    play.set_defaults(run=_cmd_play, parser=play)
