"""Output paths of ``eval``, ``compare``, ``bench`` and ``report``: checked before work.

Every command that writes a result checks its output path here first
(:func:`check_replaceable`), so that one rule holds for them all.
"""

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


def check_outputs(
    args: argparse.Namespace, kind: str, inputs: Sequence[str] = ()
) -> dict[str, Path]:
    """Return the real path of every output flag given, refusing unusable ones now.

    Checked before the first episode (and before an agent loads a model), so
    that a run is never lost to an output path that fails at the end: each
    path must be writable (:func:`check_output_path`), no two outputs may be
    one file (``--out`` equal to ``--log`` would overwrite the log), and no
    output may overwrite an input.  ``--plot`` is checked as the file really
    written (``.png`` added to a bare name).  An existing ``--out`` is replaced
    only by its own ``kind`` (:func:`check_replaceable`).
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
    for flag, what in (("--out", kind), ("--plot", PLOT)):
        if flag in paths:
            check_replaceable(paths[flag], flag, what, args.overwrite)
    if "--plot" in paths:
        try:
            found = importlib.util.find_spec("matplotlib") is not None
        except (ImportError, ValueError):  # a broken or blocked install
            found = False
        if not found:
            raise UsageError(f"--plot needs matplotlib: {agent_envs.install_hint('plot')}.")
    return paths


#: How much of an existing output is read to tell what it is.
_HEAD = 4096
#: The kinds of file the commands write, as :func:`output_kind` names them.
RESULT, COMPARISON, BENCH, RUN_LOG = "eval result", "comparison", "bench result", "run log"
REPORT, PLOT = "report page", "plot"
#: JSON this project wrote: its format key comes first (after a run log's ``type``).
_OUR_JSON = re.compile(
    rb'\A\s*\{\s*(?:"type"\s*:\s*"header"\s*,\s*)?"format"\s*:\s*"agent-envs-([a-z]+)/'
)
_JSON_KINDS = {b"result": RESULT, b"compare": COMPARISON, b"bench": BENCH, b"runlog": RUN_LOG}
_PNG = b"\x89PNG\r\n\x1a\n"
#: A report page this project wrote: HTML whose head names us as its generator.
_OUR_HTML = re.compile(rb'\A<!DOCTYPE html>\s*<html[^>]*><head><meta charset="utf-8">'
                       rb'<meta name="generator" content="agent-envs report">')  # fmt: skip


def output_kind(path: Path) -> str | None:
    """Return which kind of file agent-envs wrote at ``path``, or ``None`` for any other file.

    Only the head is read: a result, comparison, bench result or run log
    starts with its ``format`` key, a report page names us in its first
    ``generator`` meta tag, and a plot is a PNG whose ``Software`` text chunk
    (before the image data) names us.
    """
    from agent_envs.evaluation.plotting import PLOT_SOFTWARE

    with open(path, "rb") as file:
        head = file.read(_HEAD)
    found = _OUR_JSON.match(head)
    if found is not None:
        return _JSON_KINDS.get(found.group(1))
    if _OUR_HTML.match(head) is not None:
        return REPORT
    if head.startswith(_PNG) and PLOT_SOFTWARE.encode() in head:
        return PLOT
    return None


def check_replaceable(path: Path, flag: str, kind: str, overwrite: bool | None) -> None:
    """Refuse to replace the file at ``path`` with a ``kind`` one, unless ``overwrite``.

    The one rule of every command's output (``eval``, ``compare``, ``bench``,
    ``report``): a file of the same kind that agent-envs wrote is replaced
    (a rerun updates its result); any other file is refused, so that a typo
    never turns a result into a report page, nor a user's notes into a
    result.  ``overwrite`` is the command's ``--overwrite`` (``None``: the
    command has none, and the message says to give another path).
    """
    if overwrite or not path.is_file():
        return
    existing = output_kind(path)
    if existing == kind:
        return
    what = (
        "a file that agent-envs did not write"
        if existing is None
        else f"an agent-envs {existing}, not a {kind}"
    )
    fix = f"pass --overwrite to replace it, or give another {flag}"
    raise UsageError(
        f"{flag} {path} already holds {what}; "
        + (fix if overwrite is not None else f"give another {flag}")
        + "."
    )


def write_outputs(result: Any, paths: dict[str, Path]) -> None:
    """Save ``result`` (an EvalResult or CompareResult) where --out/--plot ask."""
    if "--out" in paths:
        result.save(paths["--out"])
        print(f"wrote {paths['--out']}", file=sys.stderr)
    if "--plot" in paths:
        print(f"wrote {result.plot(paths['--plot'])}", file=sys.stderr)
