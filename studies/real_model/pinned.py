"""Run the real-model study from a pinned checkout: ``python -m studies.real_model.pinned``.

The study spans sittings, and main moves on between them.  So the study runs
from a git worktree at the commit that launched it, never from the working
tree: a later change to main cannot change a running study's code, and a
resumed sitting runs the very code the finished runs ran.

* ``--launch`` (once) records the current commit as the study's in
  ``launch.json`` (commit it); the tracked files must be clean.
* Every sitting: the worktree ``<work>/checkout`` is made at that commit if it
  is missing, and refused if it sits at another commit or has changes; every
  finished run's ``job.json`` must name that commit, or be carried (below);
  then ``python -m
  studies.real_model`` runs inside the worktree (``PYTHONPATH`` set to it),
  with ``--out`` and ``--work`` made absolute, so the records land in this
  checkout's ``docs/real_model_study`` to be committed as they appear.

A run of an earlier launch whose code and settings the new launch would run
again unchanged may be *carried* instead of rerun (:func:`carry`): its record
keeps its own commit and gains a ``carried`` note, and ``launch.json`` names
that commit under ``carried_from``, with why the runs are the same.  Only
records with the note are accepted from that commit.

Every other argument goes to ``studies.real_model`` as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from agent_envs.files import atomic_write_text

__all__ = ["LAUNCH", "carry", "main", "pinned_commit"]

#: The file, in the study folder, that names the commit the study runs.
LAUNCH = "launch.json"


class PinError(Exception):
    """The pinned checkout cannot be used; the message says why."""


def _git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def pinned_commit(out: Path, launch: bool) -> str:
    """Return the study's commit; with ``launch``, record the current one first.

    Raises:
        PinError: no launch record, a second launch, or uncommitted changes.
    """
    record = out / LAUNCH
    if record.exists():
        if launch:
            raise PinError(f"the study was launched already ({record}); drop --launch")
        return json.loads(record.read_text())["commit"]
    if not launch:
        raise PinError(f"no {record}: launch the study once with --launch")
    if _git("status", "--porcelain", "--untracked-files=no"):
        raise PinError("commit your changes first: the study runs a commit, not a working tree")
    commit = _git("rev-parse", "HEAD")
    atomic_write_text(record, json.dumps({"commit": commit}, indent=1) + "\n")
    print(f"launched the study at {commit}; commit {record}")
    return commit


def checkout(path: Path, commit: str) -> Path:
    """Return a clean worktree of ``commit`` at ``path``, made if it is missing.

    Raises:
        PinError: ``path`` holds another commit or local changes.
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        _git("worktree", "prune")
        _git("worktree", "add", "--detach", str(path), commit)
    head = _git("rev-parse", "HEAD", cwd=path)
    if head != commit:
        raise PinError(f"{path} is at {head[:12]}, not the study's {commit[:12]}")
    if _git("status", "--porcelain", "--untracked-files=no", cwd=path):
        raise PinError(f"{path} has local changes: the study runs its commit as it is")
    return path


def check_records(out: Path, commit: str, carried_from: str | None = None) -> None:
    """Refuse a study folder holding a finished run of another commit's code.

    A record of ``carried_from`` is accepted when :func:`carry` wrote it.

    Raises:
        PinError: a ``job.json`` under ``runs/`` or ``gate/`` names another commit.
    """
    for folder in ("runs", "gate"):
        for path in sorted((out / folder).glob("*/job.json")):
            record = json.loads(path.read_text())
            ran = record.get("commit")
            if ran != commit and not (ran == carried_from and "carried" in record):
                raise PinError(f"{path} was run by {ran}, not the study's {commit[:12]}")


def carry(source: Path, target: Path, regime: str) -> None:
    """Write the finished run ``source`` as the run ``target`` of ``regime``, with a note.

    The record keeps its commit, result and log; its regime and folder become
    the target's, and ``carried`` says where it came from.
    """
    record = json.loads(source.read_text())
    note = {"from": source.as_posix(), "regime": record["regime"], "folder": record["folder"]}
    record.update(regime=regime, folder=target.parent.as_posix(), carried=note)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, json.dumps(record, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Run ``studies.real_model`` from the pinned checkout; return its exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--launch", action="store_true", help="record the current commit (once)")
    parser.add_argument("--out", type=Path, default=Path("docs/real_model_study"))
    parser.add_argument("--work", type=Path, default=Path("runs/real_model"))
    args, rest = parser.parse_known_args(argv)
    out, work = args.out.resolve(), args.work.resolve()
    try:
        commit = pinned_commit(out, args.launch)
        tree = checkout(work / "checkout", commit)
        check_records(out, commit, json.loads((out / LAUNCH).read_text()).get("carried_from"))
    except (PinError, subprocess.CalledProcessError, OSError) as error:
        print(f"studies.real_model.pinned: {error}", file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "studies.real_model", "--out", str(out), "--work", str(work)]
    print(f"running the study at {commit[:12]} from {tree}", flush=True)
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([*command, *rest], cwd=tree, env=environment).returncode


if __name__ == "__main__":
    raise SystemExit(main())
