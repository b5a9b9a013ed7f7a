"""Output paths shared by ``eval`` and ``compare``: checked before work, written after."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import agent_envs
from agent_envs.arguments import UsageError


def check_outputs(args: argparse.Namespace, inputs: Sequence[str] = ()) -> dict[str, Path]:
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


def write_outputs(result: Any, paths: dict[str, Path]) -> None:
    """Save ``result`` (an EvalResult or CompareResult) where --out/--plot ask."""
    if "--out" in paths:
        result.save(paths["--out"])
        print(f"wrote {paths['--out']}", file=sys.stderr)
    if "--plot" in paths:
        print(f"wrote {result.plot(paths['--plot'])}", file=sys.stderr)
