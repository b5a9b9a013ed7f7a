"""The skeleton every training command shares (``train-sb3``, ``train-llm``).

A command is a :class:`TrainingCommand`: it says how to build its parser, its
settings and its evaluation, how to train and how to evaluate one model, and
the skeleton does the rest, the same way for both:

* the one-line errors (:func:`agent_envs.arguments.run_command`);
* the env id check and the command's own input check
  (:meth:`TrainingCommand.check_inputs`), before any file is written;
* the run folder (:class:`RunFolder`): ``--resume`` and ``--overwrite``,
  and a marker file listing what the command wrote there, so that it never
  deletes or reuses a file it did not write;
* train-then-evaluate for each settings (one per seed), reusing on
  ``--resume`` a model trained with the same settings;
* Ctrl-C: a message that says what the folder keeps, exit status 130;
* the versions of the packages a run depends on (:func:`versions`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_envs.arguments import (
    Parser,
    UsageError,
    add_budget_arguments,
    explicit_flags,
    run_command,
)
from agent_envs.files import (
    atomic_write_text,
    check_inside,
    check_output_path,
    read_json_input,
    remove_inside,
)
from wrappers.errors import InvalidValue

__all__ = [
    "MARKER",
    "RunFolder",
    "TrainingCommand",
    "base_parser",
    "check_same_settings",
    "versions",
]

#: The file a training command writes first in its run folder: the command, its
#: settings and every file and folder it wrote there.
MARKER = "agent_envs_run.json"


def base_parser(
    prog: str, description: str, example: str, budget: int | None, unset: str = "none"
) -> Parser:
    """Return a training command's parser with what every one takes first.

    The env id (``example`` in its help) and the budget flags, whose default
    fixed T is ``budget`` (``None``: as ``unset`` says);
    :func:`agent_envs.arguments.budget_regime` turns them into a
    :class:`~agent_envs.env_stack.BudgetRegime`.
    """
    parser = Parser(prog=prog, description=description)
    parser.add_argument("env_id", help=f"a registered id, e.g. {example}")
    add_budget_arguments(parser, default=budget, unset=unset)
    return parser


def versions(packages: Sequence[str]) -> dict[str, str]:
    """Return the installed version of each of ``packages`` (``"not installed"`` if absent)."""
    import importlib.metadata as metadata

    found = {}
    for package in packages:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def check_same_settings(saved: Any, wanted: dict[str, Any], what: str) -> None:
    """Refuse, in one line, to reuse ``what`` trained with other settings than ``wanted``."""
    wanted = json.loads(json.dumps(wanted))
    if saved == wanted:
        return
    changed = sorted(key for key in wanted if (saved or {}).get(key) != wanted[key])
    raise UsageError(
        f"--resume: {what} was trained with other settings "
        f"({', '.join(changed) or 'unreadable settings'}); rerun with those settings, pass "
        "--overwrite to replace it, or use another --out."
    )


class RunFolder:
    """A training command's run folder and its marker (:data:`MARKER`).

    The marker lists, relative to the folder, every file and folder the
    command wrote; a folder name ends with ``/``.  ``--overwrite`` deletes
    those and nothing else, and a non-empty folder without a marker is
    someone else's: ``--resume`` and ``--overwrite`` refuse it.
    """

    def __init__(self, path: Path, command: str, settings: Any, written: list[str]) -> None:
        self.path = path
        self.command = command
        self.settings = settings
        self.written = written

    @classmethod
    def open(
        cls,
        folder: str | os.PathLike[str],
        command: str,
        settings: Any,
        outputs: Sequence[str],
        *,
        resume: bool = False,
        overwrite: bool = False,
    ) -> RunFolder:
        """Check ``--out`` before any work, mark it, and return it.

        ``outputs`` are the files the run may write (each must be writable).

        Raises:
            UsageError: one line naming ``--out`` and what to do.
        """
        path = _checked_folder(folder, outputs)
        held = sorted(item.name for item in path.iterdir()) if path.is_dir() else []
        marked = (path / MARKER).is_file()
        if held and not marked:
            shown = ", ".join(held[:4]) + (", ..." if len(held) > 4 else "")
            doing = "--resume" if resume else "--overwrite" if overwrite else "it"
            raise UsageError(
                f"--out {path} holds files that {command} did not write ({shown}; no {MARKER}), "
                f"so {doing} would touch them: give an empty or new folder as --out."
            )
        written = _read_marker(path, command) if marked else []
        if held and not (resume or overwrite):
            raise UsageError(
                f"--out {path} already holds a {command} run; pass --resume to continue it, "
                "--overwrite to replace it, or another --out."
            )
        run = cls(path, command, settings, written)
        if overwrite:
            run.remove_written()
        run.save()
        return run

    def wrote(self, *names: str) -> None:
        """Add ``names`` (files, or folders ending in ``/``) to the marker, before writing them."""
        new = [name for name in names if name not in self.written]
        if new:
            self.written.extend(new)
            self.save()

    def save(self) -> None:
        """Write the marker."""
        marker = {"command": self.command, "settings": self.settings, "written": self.written}
        atomic_write_text(self.path / MARKER, json.dumps(marker, indent=2) + "\n")

    def remove_written(self) -> None:
        """Delete every file and folder the marker lists, and nothing else.

        Each is checked first, so that a marker naming a path out of the folder
        (through a symbolic link put there since) deletes nothing at all; a
        symbolic link the marker names is removed, never what it points to.
        """
        for name in self.written:
            _inside(self.path, name)
        for name in self.written:
            remove_inside(self.path, name)
        self.written = []


def _checked_folder(folder: str | os.PathLike[str], outputs: Sequence[str]) -> Path:
    """Return ``folder`` as a path, refusing an empty name, a file, or unwritable outputs."""
    if not os.fspath(folder).strip():
        raise UsageError("--out is empty; give a folder such as runs/my-run.")
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out {path} is a file; give a folder.")
    for name in outputs:
        check_output_path(path / name, "--out")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _read_marker(path: Path, command: str) -> list[str]:
    """Return what the marker in ``path`` lists; refuse another command's or a broken one."""
    try:
        marker = read_json_input(path / MARKER, "run marker")
        written = [str(name) for name in marker["written"]]
        owner = marker["command"]
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(f"--out {path}: {MARKER} is unreadable; give another --out.") from None
    if owner != command:
        raise UsageError(
            f"--out {path} holds a {owner} run, not a {command} one; use another --out."
        )
    for name in written:  # a marker names only what lies inside its folder
        _inside(path, name)
    return written


def _inside(path: Path, name: str) -> None:
    """Refuse a marker's ``name`` that lies outside the run folder ``path``."""
    try:
        check_inside(path, name)
    except InvalidValue as exc:
        raise UsageError(
            f"--out {path}: {MARKER} lists {name!r}, outside the folder ({exc}); nothing was "
            "deleted. Give another --out."
        ) from None


class TrainingCommand:
    """The skeleton of a training command; a subclass fills in the hooks below.

    Attributes:
        prog: the command's name in messages, e.g. ``"agent-envs train-sb3"``.
        extra: the extra that installs its dependencies (named when one is missing).

        model_files: what training writes in a model's subfolder (folders end in ``/``).
        eval_files: what its evaluation writes there.
    """

    prog = "agent-envs train"
    extra = "all"
    model_files: tuple[str, ...] = ()
    eval_files: tuple[str, ...] = ()

    # ----------------------------------------------------------------- hooks
    def build_parser(self) -> Parser:
        """Return the command's parser (it must have ``env_id``, ``--out``, ``--resume``, ...)."""
        raise NotImplementedError

    def configs(self, args: argparse.Namespace) -> list[Any]:
        """Return the settings of each model to train (one per seed)."""
        raise NotImplementedError

    def run_layout(self, args: argparse.Namespace, configs: list[Any]) -> tuple[Path, list[str]]:
        """Return the run folder (``--out`` or the default) and each config's subfolder."""
        raise NotImplementedError

    def evaluation(self, args: argparse.Namespace, config: Any) -> Any:
        """Return the evaluation's settings for ``config``, checked now (``None``: none)."""
        raise NotImplementedError

    def check_inputs(self, args: argparse.Namespace, configs: list[Any]) -> None:
        """Refuse, in one line, what the settings name outside themselves (a model, a package).

        Called before the run folder is opened, so that a bad input leaves no
        file behind; the settings themselves were checked when built.
        """

    def trained(self, config: Any, out: Path) -> Any:
        """With ``--resume``: the model in ``out`` trained with ``config``, else ``None``."""
        raise NotImplementedError

    def train(self, config: Any, out: Path) -> Any:
        """Train one model into ``out``; return it (a path)."""
        raise NotImplementedError

    def evaluate(self, args: argparse.Namespace, config: Any, settings: Any, model: Any,
                 out: Path) -> None:  # fmt: skip
        """Evaluate one trained model with ``settings``; write its result into ``out``."""
        raise NotImplementedError

    def settings_json(self, configs: list[Any]) -> Any:
        """Return the settings the marker records."""
        raise NotImplementedError

    def interrupted(self, folder: Path) -> str:
        """Return what Ctrl-C leaves in ``folder``, and how to go on."""
        return (
            f"{self.prog}: interrupted. {folder} keeps every model whose training finished and "
            "the evaluation episodes that finished; rerun the same command with --resume to "
            "reuse them (training that was cut off starts again)."
        )

    def started(self, args: argparse.Namespace, configs: list[Any], plans: list[Any]) -> None:
        """Called once the run folder is ready, before the first model is trained."""

    def finished(self, args: argparse.Namespace, configs: list[Any], folder: Path,
                 plans: list[Any]) -> None:  # fmt: skip
        """Say what to do next, once every model is trained and evaluated."""

    # -------------------------------------------------------------- skeleton
    def main(self, argv: Sequence[str] | None = None) -> int:
        """Run the command; every user error is one line and exit status 2."""
        return run_command(self.prog, self._main, argv, extra=self.extra)

    def parse(self, argv: Sequence[str]) -> argparse.Namespace:
        """Parse ``argv``; ``args.given`` names the flags given explicitly."""
        parser = self.build_parser()
        args = parser.parse_args(argv)
        args.given = explicit_flags(parser, argv)
        return args

    def _main(self, argv: list[str]) -> int:
        from agent_envs.env_lookup import check_env_id

        args = self.parse(argv)
        # a registered id, module:EnvId, or an id an installed env package registers
        args.env_id = check_env_id(args.env_id)
        configs = self.configs(args)
        top, subs = self.run_layout(args, configs)
        files = [f"{sub}{name}" for sub in subs for name in self.model_files + self.eval_files]
        plans = [self.evaluation(args, config) for config in configs]
        self.check_inputs(args, configs)
        run = RunFolder.open(
            top,
            self.prog.split()[-1],
            self.settings_json(configs),
            [name for name in files if not name.endswith("/")],
            resume=args.resume,
            overwrite=args.overwrite,
        )
        self.started(args, configs, plans)
        jobs = list(zip(configs, subs, plans, strict=True))
        found = [self.trained(c, run.path / sub) if args.resume else None for c, sub, _ in jobs]
        try:
            for (config, sub, settings), model in zip(jobs, found, strict=True):
                out = run.path / sub
                if model is None:
                    run.wrote(*(f"{sub}{name}" for name in self.model_files))
                    model = self.train(config, out)
                if settings is not None:
                    run.wrote(*(f"{sub}{name}" for name in self.eval_files))
                    self.evaluate(args, config, settings, model, out)
        except KeyboardInterrupt:
            print(self.interrupted(run.path), file=sys.stderr)
            return 130
        self.finished(args, configs, run.path, plans)
        return 0
