"""Command-line arguments shared by every ``agent-envs`` command: one error, one set of types.

* :class:`UsageError` is the one usage-error class.  Every command (``eval``,
  ``train-sb3``, ``train-llm``, ``serve``, ...) reports it, and every other
  error of :data:`USER_ERRORS` (the ``InvalidValue`` or ``InvalidType`` of a
  check, a missing file, a missing extra), as one line on stderr and exit
  status 2 (:func:`run_command`, and ``agent-envs`` itself).  A plain
  ``ValueError``, ``TypeError`` or ``KeyError`` is a bug: it keeps its traceback.
* :class:`Parser` is an ``argparse`` parser whose own errors (an unknown
  option, a bad value) are one such line too, instead of usage and message.
* The ``type=`` converters below parse with :mod:`wrappers.utils.validators`, so a
  flag gets the same message as the Python argument it feeds.
* :func:`add_eval_arguments` adds the evaluation flags a command shares with
  the others and returns what turns them into an
  :class:`~agent_envs.evaluation.EvalSettings`; :func:`add_budget_arguments`
  adds the training budget flags (``--budget``, ``--budget-mix``,
  ``--weights``, ``--visible-budget``) and :func:`budget_regime` reads them
  back as a :class:`~agent_envs.env_stack.BudgetRegime`.

One name per meaning: in ``eval`` the grids are ``--k``, ``--t``, ``--samples``
and ``--tasks``; a training command evaluates its model with the same flags
under ``--eval-``: ``--eval-k``, ``--eval-budgets``, ``--eval-samples`` and
``--eval-tasks``.  ``--group-size`` is GRPO's K (attempts per task in a group).

>>> parser = Parser(prog="demo")
>>> flags = add_eval_arguments(parser, prefix="eval-", k="1,2", t="4,8", samples=2)
>>> args = parser.parse_args(["--eval-budgets", "8,16", "--eval-tasks", "3"])
>>> settings = flags.settings(args, seed=0)
>>> settings.ks, settings.budgets, settings.tasks
((1, 2), (8, 16), (0, 1, 2))
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import sys
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from agent_envs.errors import CommandError
from wrappers.errors import UserInputError
from wrappers.utils.validators import (
    MAX_COUNT,
    MAX_SEED,
    MAX_TURNS,
    check_at_most,
    check_int,
    check_number,
    parse_float_list,
    parse_int,
    parse_int_list,
)

__all__ = [
    "SHOW_TRACEBACK",
    "USER_ERRORS",
    "CommandError",
    "EvalArguments",
    "Parser",
    "UsageError",
    "add_agent_flags",
    "add_backend_flags",
    "add_budget_arguments",
    "add_config_arguments",
    "add_eval_arguments",
    "add_history_flag",
    "add_log_flag",
    "add_out_flag",
    "add_overwrite_flag",
    "add_plot_flag",
    "add_seed_flag",
    "add_transcripts_flag",
    "add_visible_budget_flag",
    "budget_regime",
    "config_values",
    "error_line",
    "explicit_flags",
    "flag",
    "float_list",
    "int_arg",
    "int_list",
    "json_object",
    "number_arg",
    "parse_tasks",
    "run_command",
]


class UsageError(CommandError):
    """A bad command line or setting, reported as one line with exit status 2."""


#: What every command (``eval``, ``compare``, ``train-*``, ``serve``, ...) reports as
#: one line with exit status 2: the user's mistake or a stop they can act on, not a bug.
#: :class:`~wrappers.errors.UserInputError` is raised where input is checked (its
#: ``InvalidValue``, ``InvalidType`` and :class:`CommandError`); an ``OSError`` is a
#: path or the machine, an ``ImportError`` a missing extra.  A plain ``ValueError``,
#: ``TypeError`` or ``KeyError`` is not here: it comes from a bug and keeps its traceback.
USER_ERRORS: tuple[type[BaseException], ...] = (UserInputError, OSError, ImportError)

#: Set while ``agent-envs --traceback`` runs an installed command (``train-sb3``,
#: ``serve``, ...): :func:`run_command` then lets a user error through, so that
#: ``agent-envs`` shows its whole trace, as it does for its own commands.
SHOW_TRACEBACK: ContextVar[bool] = ContextVar("agent_envs_show_traceback", default=False)


def error_line(error: BaseException) -> str:
    """Return ``error``'s message as one line."""
    return " ".join(str(error).split())


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one :class:`UsageError` line.

    argparse prints the whole usage and exits; a command reports the mistake
    in one line instead, as it reports every other bad value.
    """

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """Add the flag; a bounded ``type=`` (:func:`int_arg`, ...) says its limit in the help."""
        return super().add_argument(*args, **_with_limit(kwargs))

    def add_argument_group(self, *args: Any, **kwargs: Any) -> argparse._ArgumentGroup:
        """Return a group whose flags say their limits in the help too."""
        group = super().add_argument_group(*args, **kwargs)
        group.add_argument = _limited(group.add_argument)  # type: ignore[method-assign]
        return group

    def add_mutually_exclusive_group(self, **kwargs: Any) -> argparse._MutuallyExclusiveGroup:
        """Return an exclusive group whose flags say their limits in the help too."""
        group = super().add_mutually_exclusive_group(**kwargs)
        group.add_argument = _limited(group.add_argument)  # type: ignore[method-assign]
        return group


def _with_limit(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Return ``kwargs`` with the ``type=``'s upper limit added to the help, if it has one.

    So that every bounded flag names its limit in ``--help`` as well as in its
    error, without each help text repeating the number.
    """
    maximum = getattr(kwargs.get("type"), "maximum", None)
    text = kwargs.get("help")
    if maximum is None or not isinstance(text, str) or text == argparse.SUPPRESS:
        return kwargs
    limit = f"at most {maximum:,}"
    if limit not in text:
        kwargs = {**kwargs, "help": f"{text}; {limit}"}
    return kwargs


def _limited(add: Callable[..., argparse.Action]) -> Callable[..., argparse.Action]:
    """Wrap a group's ``add_argument`` with :func:`_with_limit`."""

    def add_argument(*args: Any, **kwargs: Any) -> argparse.Action:
        return add(*args, **_with_limit(kwargs))

    return add_argument


def _converter(
    parse: Callable[[str], Any], what: str, maximum: float | None = None
) -> Callable[[str], Any]:
    """Turn a parse function into an argparse ``type=``; its message is the error.

    ``maximum`` is recorded on it, so that the flag's help names the limit.
    """

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    convert.__name__ = what  # argparse names the type in some messages
    convert.maximum = maximum  # type: ignore[attr-defined]
    return convert


def int_arg(minimum: int | None = None, maximum: int | None = MAX_COUNT) -> Callable[[str], int]:
    """Return a ``type=`` for one integer in ``[minimum, maximum]``.

    Every integer flag is bounded: a count that names no other limit takes at
    most :data:`~wrappers.utils.validators.MAX_COUNT`; ``maximum=None`` is for a
    flag whose limit a later check names (``--samples``: episodes a run).
    """

    def parse(text: str) -> int:
        value = check_int(parse_int(text, "the value"), "the value", minimum)
        return check_at_most(value, "the value", maximum)

    return _converter(parse, "int", maximum)


def number_arg(
    minimum: float | None = None, maximum: float | None = None, *, open_low: bool = False
) -> Callable[[str], float]:
    """Return a ``type=`` for one finite number in ``[minimum, maximum]`` (``(`` with open_low)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"the value must be a number, got {text!r}.") from None
        return check_number(value, "the value", minimum, maximum, open_low=open_low)

    return _converter(parse, "number", maximum)


def int_list(minimum: int | None = 1, maximum: int = MAX_COUNT) -> Callable[[str], tuple[int, ...]]:
    """Return a ``type=`` for comma-separated integers in ``[minimum, maximum]``."""
    return _converter(
        lambda text: parse_int_list(text, "the list", minimum, maximum), "list", maximum
    )


#: ``type=`` for comma-separated numbers such as ``1,1,2``.
float_list = _converter(lambda text: parse_float_list(text, "the list"), "list")


def json_object(text: str) -> dict[str, Any]:
    """``type=`` for a JSON object such as ``'{"learning_rate": 0.001}'``."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as error:  # an integer too long to convert, too
        reason = getattr(error, "msg", None) or (
            "nested too deeply" if isinstance(error, RecursionError) else "a number too long"
        )
        raise argparse.ArgumentTypeError(f"not valid JSON ({reason}): {text!r:.80}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r:.80}")
    return value


def parse_tasks(text: str, flag: str, first: int = 0) -> int | Sequence[int]:
    """Parse task ids: a count ``50`` (ids from ``first``), a range ``100:150`` or ids ``3,7,9``.

    A count from 0 comes back as the int, so that the evaluator checks its size
    before building anything; a range stays lazy for the same reason.

    >>> parse_tasks("3", "--tasks"), parse_tasks("3", "--eval-tasks", first=10)
    (3, range(10, 13))
    >>> parse_tasks("100:103", "--tasks"), parse_tasks("3,7,9", "--tasks")
    (range(100, 103), [3, 7, 9])
    """
    try:
        if ":" in text:
            start, stop = (int(part) for part in text.split(":"))
            return range(start, stop)
        if "," in text:
            return list(parse_int_list(text, flag, minimum=0))
        count = int(text)
    except ValueError:
        raise UsageError(
            f"{flag} takes a count (50), a range (100:150) or ids (3,7,9); got {text!r}."
        ) from None
    return count if first == 0 else range(first, first + check_int(count, flag, 0))


# ------------------------------------------------------------------ evaluation
@dataclass(frozen=True)
class EvalArguments:
    """The evaluation flags one command added; :meth:`settings` reads them back.

    Attributes:
        prefix: ``""`` in ``eval``, ``"eval-"`` in a training command.
        first: where a task count starts (a training command evaluates on ids
            apart from its training ids).
    """

    prefix: str
    first: int = 0

    def flag(self, name: str) -> str:
        """Return this command's spelling of ``k``, ``t``, ``samples`` or ``tasks``."""
        return f"--{self.prefix}{_EVAL_NAMES[self.prefix][name]}"

    def dest(self, name: str) -> str:
        """Return the attribute that holds ``name`` in the parsed arguments."""
        return self.flag(name)[2:].replace("-", "_")

    def settings(self, args: argparse.Namespace, *, first: int | None = None, **fields: Any) -> Any:
        """Return the :class:`~agent_envs.evaluation.EvalSettings` of the parsed flags.

        ``fields`` are the other settings (``seed``, ``log_path``, ...); a
        field given here also fills in a grid flag left at ``None``.  ``first``
        overrides where a task count starts.
        """
        from agent_envs.evaluation import EvalSettings

        start = self.first if first is None else first
        tasks = getattr(args, self.dest("tasks"))
        parsed = {
            "ks": getattr(args, self.dest("k")),
            "budgets": getattr(args, self.dest("t")),
            "samples": getattr(args, self.dest("samples")),
            "tasks": parse_tasks(tasks, self.flag("tasks"), start),
        }
        for name, value in parsed.items():
            if value is not None or name not in fields:
                fields[name] = value
        return EvalSettings(**fields)


# The flag names, per prefix: the T grid is --t in eval and --eval-budgets elsewhere.
_EVAL_NAMES = {
    "": {"k": "k", "t": "t", "samples": "samples", "tasks": "tasks"},
    "eval-": {"k": "k", "t": "budgets", "samples": "samples", "tasks": "tasks"},
}


def add_eval_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    prefix: str = "",
    k: str | None = "1,2,4,8",
    t: str | None = "5,10,20,40",
    samples: int | None = None,
    tasks: str = "50",
    first: int = 0,
    unset: dict[str, str] | None = None,
    note: str = "",
) -> EvalArguments:
    """Add the K grid, the T grid, the attempts per task and the tasks; return their reader.

    Args:
        parser: the command's parser or one of its argument groups.
        prefix: ``""`` for ``eval``, ``"eval-"`` for a training command.
        k, t, samples, tasks: the defaults; ``None`` leaves the value to the
            command (``samples=None``: max K).
        first: where a task count starts.
        unset: how the help states a default of ``None``, by name (``"k"``, ``"t"``).
        note: said in the help of the tasks flag.
    """
    from agent_envs.evaluation.settings import MAX_EPISODES

    flags = EvalArguments(prefix, first)
    said = {"samples": "max K", **(unset or {})}
    # The values' other checks are EvalSettings', as in Python; the limits are said here.
    grids = {
        "k": ("the K grid of Pass@(K,T)", int_list(None, MAX_EPISODES)),
        "t": ("the T grid", int_list(None, MAX_TURNS)),
    }
    for name, default in (("k", k), ("t", t)):
        what, grid = grids[name]
        parser.add_argument(
            flags.flag(name),
            type=grid,
            default=None if default is None else grid(default),
            help=f"{what} (default {said.get(name) if default is None else default})",
        )
    parser.add_argument(
        flags.flag("samples"),
        type=int_arg(1, None),  # EvalSettings bounds tasks x samples, naming the limit
        default=samples,
        help=f"attempts per task, at most {MAX_EPISODES:,} episodes a run with the tasks "
        f"(default {said['samples'] if samples is None else samples})",
    )
    starting = f" from id {first}" if first else ""
    parser.add_argument(
        flags.flag("tasks"),
        default=tasks,
        help=f"a count ({tasks}{starting}), a range (100:150) or ids (3,7,9)"
        f"{'; ' + note if note else ''} (default {tasks})",
    )
    return flags


# --------------------------------------------------------------------- budgets
def add_budget_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    default: int | None,
    unset: str = "none",
) -> None:
    """Add ``--budget``, ``--budget-mix``, ``--weights`` and ``--visible-budget``.

    ``default`` is the fixed T without either flag (``None``: the command picks
    it, as ``unset`` says in the help); :func:`budget_regime` reads them back.
    """
    regime = parser.add_mutually_exclusive_group()
    said = unset if default is None else default
    regime.add_argument(
        "--budget",
        type=int_arg(1, MAX_TURNS),
        default=default,
        help=f"a fixed turn budget T (default {said})",
    )
    regime.add_argument(
        "--budget-mix",
        type=int_list(1, MAX_TURNS),
        default=None,
        help="BudgetMix: draw T per episode from these budgets, e.g. 4,6,8,12 (default: none)",
    )
    parser.add_argument(
        "--weights",
        type=float_list,
        default=None,
        help="the BudgetMix budgets' weights, e.g. 1,1,2,2 (default: uniform)",
    )
    add_visible_budget_flag(parser)


def budget_regime(args: argparse.Namespace, *, shared: bool = True) -> Any:
    """Return the :class:`~agent_envs.env_stack.BudgetRegime` of the budget flags (``None``: none).

    The one place the flags of :func:`add_budget_arguments` become a regime:
    ``--budget T`` (or its default) is a fixed T, ``--budget-mix`` a mix with
    ``--weights``, and ``--visible-budget`` shows the turns left.  ``shared``:
    the attempts at one task share a T.  ``--weights`` without a mix, or of
    another length, is refused.
    """
    from agent_envs.env_stack import BudgetRegime

    if args.budget_mix is None:
        if args.weights is not None:
            raise UsageError("--weights goes with --budget-mix.")
        if args.budget is None:
            return None
        return BudgetRegime.fixed(args.budget, args.visible_budget, shared)
    if args.weights is not None and len(args.weights) != len(args.budget_mix):
        raise UsageError(
            f"--weights has {len(args.weights)} values but --budget-mix has {len(args.budget_mix)}."
        )
    return BudgetRegime.mixed(args.budget_mix, args.weights, args.visible_budget, shared)


# ------------------------------------------------- flags of several commands
# Each flag that more than one command takes is declared here once, so that
# its type, default and help cannot drift apart between the commands.
def add_visible_budget_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--visible-budget`` (``eval``, ``bench``, the training commands, ``serve``)."""
    parser.add_argument(
        "--visible-budget",
        action="store_true",
        help="show the turns left in every observation (default: hidden)",
    )


def add_agent_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--agent`` and ``--agent-kwargs`` (``eval``, ``bench``)."""
    from agent_envs.plugins import agent_names

    parser.add_argument(
        "--agent",
        default="random",
        help=f"one of {', '.join(agent_names())}, or module:Class (default random)",
    )
    parser.add_argument(
        "--agent-kwargs",
        default=None,
        help="JSON keyword arguments for the agent, e.g. '{\"epsilon\": 0.1}'; secrets such "
        "as api_key are never shown or stored (default: none)",
    )


def add_backend_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--backend`` and ``--workers`` (``eval``, ``bench``)."""
    parser.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="play episodes here or on Ray actors (needs [ray]); same numbers (default local)",
    )
    parser.add_argument(
        "--workers",
        type=int_arg(1, MAX_COUNT),
        default=None,
        help="Ray actors (default: one per cluster CPU)",
    )


def add_transcripts_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--transcripts`` (``eval``, ``bench``): run logs that keep every exchange."""
    parser.add_argument(
        "--transcripts",
        action="store_true",
        help="keep every observation and reply in the run log, for the report's transcript "
        "browser (default: off)",
    )


def add_history_flag(parser: argparse.ArgumentParser, *, window: bool) -> None:
    """Add ``--history`` (``eval``, ``bench``): the agent gets the dialogue in info['messages'].

    The two commands take it in two forms, kept as they are: ``window=True``
    (``eval``) is ``--history [WINDOW]`` beside ``--history-record``;
    ``window=False`` (``bench``) names what each reply keeps, ``raw`` or ``action``.
    """
    if not window:
        parser.add_argument(
            "--history",
            choices=("raw", "action"),
            default=None,
            help="give the agent the dialogue in info['messages'], keeping each whole reply "
            "(raw, the format train-llm trains on) or its action; an LLM agent needs it "
            "(default: none)",
        )
        return
    parser.add_argument(
        "--history",
        type=int_arg(1, MAX_TURNS),  # 0 read as "all" surprised: a window is >= 1
        nargs="?",
        const=0,  # the flag alone: the whole dialogue (const is not passed through type)
        default=None,
        metavar="WINDOW",
        help="give the agent the dialogue in info['messages'] (wrappers.ChatHistory); "
        "WINDOW keeps the last exchanges only (default: no history; without WINDOW: all)",
    )


def add_seed_flag(parser: argparse.ArgumentParser, what: str, *, bounded: bool = True) -> None:
    """Add ``--seed`` (``eval``, ``play``), default 0.

    ``bounded``: the value is checked while parsing, and the help names the
    limit; otherwise the command checks it itself, naming the flag (``play``).
    """
    parser.add_argument(
        "--seed",
        type=int_arg(0, MAX_SEED) if bounded else int,
        default=0,
        help=f"{what} (default 0)",
    )


def add_out_flag(parser: argparse.ArgumentParser, what: str, *, required: bool = False) -> None:
    """Add ``--out`` (``eval``, ``compare``, ``report``, ``bench``): where ``what`` goes."""
    parser.add_argument(
        "--out",
        required=required,
        default=None,
        help=f"{what} ({'required' if required else 'default: none'})",
    )


def add_plot_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--plot`` (``eval``, ``compare``): write ``what``, a heatmap PNG, there."""
    parser.add_argument("--plot", default=None, help=f"{what} (default: none)")


def add_log_flag(parser: argparse.ArgumentParser, help: str, *, repeat: bool = False) -> None:
    """Add ``--log`` (``eval``, ``report``): a run log, or with ``repeat`` a list of them."""
    if repeat:
        parser.add_argument("--log", action="append", default=[], help=help)
    else:
        parser.add_argument("--log", default=None, help=help)


def add_overwrite_flag(parser: argparse.ArgumentParser, outputs: str = "--out or --plot") -> None:
    """Add ``--overwrite`` (``eval``, ``compare``, ``report``), which the outputs' check reads.

    ``outputs`` names the command's output flags (``report`` has ``--out`` only).
    """
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help=f"replace an existing {outputs} that is not of this command's kind: a file "
        "agent-envs did not write, or another of its outputs (default: off; a file of the "
        "same kind is replaced without it)",
    )


# -------------------------------------------------------- settings as flags
def flag(help: str, name: str | None = None, **argparse_kwargs: Any) -> dict[str, Any]:
    """Return a config field's ``metadata``: the flag that sets it, written once, beside it.

    ``name`` is the flag (default ``--`` and the field's name with dashes);
    ``argparse_kwargs`` go to ``add_argument`` (``type``, ``choices``, ...).
    The field's default is the flag's, unless ``default`` is given here.

    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class Demo:
    ...     steps: int = field(default=150, metadata=flag("GRPO steps (150)", type=int_arg(0)))
    ...     learning_rate: float = field(default=5e-4, metadata=flag("(5e-4)", "--lr"))
    >>> parser = Parser(prog="demo")
    >>> add_config_arguments(parser, Demo)
    >>> Demo(**config_values(Demo, parser.parse_args(["--steps", "3"])))
    Demo(steps=3, learning_rate=0.0005)
    """
    return {"flag": {"help": help, "name": name, **argparse_kwargs}}


def add_config_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, config: type
) -> None:
    """Add a flag for each field of the dataclass ``config`` that has :func:`flag` metadata.

    The flag stores into the field's name; a ``bool`` field is a switch.
    This is the TRL ``HfArgumentParser`` pattern, small: each setting is
    written once, as a field with its default, help and type.
    """
    for item in dataclasses.fields(config):
        spec = dict(item.metadata.get("flag") or {})
        if not spec:
            continue
        name = spec.pop("name") or "--" + item.name.replace("_", "-")
        if "default" not in spec and item.default is not dataclasses.MISSING:
            spec["default"] = item.default
        if isinstance(spec.get("default"), bool) and "type" not in spec and "action" not in spec:
            spec["action"] = "store_true"
        elif "metavar" not in spec and "choices" not in spec:  # named as the flag, not the field
            spec["metavar"] = name.lstrip("-").upper().replace("-", "_")
        parser.add_argument(name, dest=item.name, **spec)


def config_values(config: type, args: argparse.Namespace) -> dict[str, Any]:
    """Return the parsed value of every field of ``config`` that has a flag, by field name."""
    return {
        item.name: getattr(args, item.name)
        for item in dataclasses.fields(config)
        if item.metadata.get("flag") and hasattr(args, item.name)
    }


def explicit_flags(parser: argparse.ArgumentParser, argv: Sequence[str]) -> frozenset[str]:
    """Return the ``dest`` of every flag that ``argv`` gives explicitly (not by default).

    So that a shortcut such as ``--quick`` fills in only what the user left out.
    """
    saved = [(action, action.default) for action in parser._actions]
    try:
        for action, _ in saved:
            action.default = argparse.SUPPRESS
        with contextlib.redirect_stderr(io.StringIO()):  # its warnings were said once already
            given = vars(parser.parse_args(argv))
    finally:
        for action, default in saved:
            action.default = default
    return frozenset(given)


# --------------------------------------------------------------------- running
def run_command(
    prog: str,
    body: Callable[[list[str]], int],
    argv: Sequence[str] | None,
    extra: str | None = None,
) -> int:
    """Run ``body(argv)``; report a user error as one line on stderr and return 2.

    ``argv`` defaults to ``sys.argv[1:]``.  A missing dependency
    (``ImportError``) is a user error too: the line says to install ``extra``.
    Under ``agent-envs --traceback`` (:data:`SHOW_TRACEBACK`) the error is raised instead.
    """
    from agent_envs import install_hint

    try:
        return body(list(sys.argv[1:] if argv is None else argv))
    except USER_ERRORS as error:
        if SHOW_TRACEBACK.get():
            raise
        message = error_line(error)
        if isinstance(error, ImportError) and extra is not None:
            message = f"{message} ({install_hint(extra)})"
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2
