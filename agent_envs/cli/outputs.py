"""Output paths shared by ``eval`` and ``compare``: checked before work, written after."""

from __future__ import annotations

import argparse
import importlib.util
import re
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
    for flag in ("--out", "--plot"):
        if flag in paths:
            check_replaceable(paths[flag], flag, getattr(args, "overwrite", False))
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


#: How much of an existing output is read to tell whether this project wrote it.
_HEAD = 4096
#: A result or comparison this project wrote: JSON whose first key is its format.
_OUR_JSON = re.compile(rb'\A\s*\{\s*"format"\s*:\s*"agent-envs-')
_PNG = b"\x89PNG\r\n\x1a\n"
#: A report page this project wrote: HTML whose head names us as its generator.
_OUR_HTML = re.compile(rb'\A<!DOCTYPE html>\s*<html[^>]*><head><meta charset="utf-8">'
                       rb'<meta name="generator" content="agent-envs report">')  # fmt: skip


def written_here(path: Path, flag: str) -> bool:
    """Return whether the file at ``path`` is a result, page (``--out``) or plot this project wrote.

    Only the head is read: a result starts with its ``format`` key, a report
    page (``agent-envs report``) names us in its first ``generator`` meta tag,
    and a plot is a PNG whose ``Software`` text chunk (before the image data)
    names us.
    """
    with open(path, "rb") as file:
        head = file.read(_HEAD)
    if flag == "--plot":
        from agent_envs.evaluation.plotting import PLOT_SOFTWARE

        return head.startswith(_PNG) and PLOT_SOFTWARE.encode() in head
    return _OUR_JSON.match(head) is not None or _OUR_HTML.match(head) is not None


def check_replaceable(path: Path, flag: str, overwrite: bool) -> None:
    """Refuse an output ``path`` that holds a file this project did not write, unless ``overwrite``.

    A user's notes given as ``--out`` by mistake would otherwise be replaced
    without a word; a result or plot written here is replaced as before.
    """
    if overwrite or not path.is_file() or written_here(path, flag):
        return
    raise UsageError(
        f"{flag} {path} already holds a file that agent-envs did not write; pass "
        f"--overwrite to replace it, or give another {flag}."
    )


def add_overwrite_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--overwrite``, which :func:`check_replaceable` reads."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --out or --plot that agent-envs did not write (default: "
        "off; a result or plot it wrote is replaced without it)",
    )


def write_outputs(result: Any, paths: dict[str, Path]) -> None:
    """Save ``result`` (an EvalResult or CompareResult) where --out/--plot ask."""
    if "--out" in paths:
        result.save(paths["--out"])
        print(f"wrote {paths['--out']}", file=sys.stderr)
    if "--plot" in paths:
        print(f"wrote {result.plot(paths['--plot'])}", file=sys.stderr)
