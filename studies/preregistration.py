"""Pre-registration, enforced by code: a study version's design is one frozen object.

A study version declares everything that decides its verdicts in one
JSON-able object (regimes, seeds, tasks, the T grid, every test and its
statistic, the verdict rule, each gate's thresholds).  Its
:func:`design_hash` covers that object and the source text of every
function it names, so editing a statistic's code changes the hash as surely
as editing a threshold.

* :func:`launch` records the hash, the design and the commit in
  ``launch.json``, once, from a clean checkout.
* :func:`check_launched` refuses to start or resume a study whose design
  differs from the launched one, and names what changed.
* :func:`write_once` writes a gate's record once: a gate is computed from the
  design's thresholds, and a second, different record of it is refused.

Changing a threshold after seeing data means a new version folder, whose
``launch.json`` says why (``why``).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent_envs.files import atomic_write_text

__all__ = [
    "LAUNCH",
    "PreregistrationError",
    "check_launched",
    "design_hash",
    "function_record",
    "launch",
    "write_once",
]

#: The file, in a study version's folder, that records its launch.
LAUNCH = "launch.json"


class PreregistrationError(Exception):
    """A study would run, or write, against its pre-registered design; the message says how."""


def function_record(function: Callable) -> dict[str, str]:
    """Return a function's name and the SHA-256 of its source: what a design hash covers of it."""
    source = inspect.getsource(function)
    return {
        "function": f"{function.__module__}:{function.__qualname__}",
        "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
    }


def _canonical(design: Mapping[str, Any]) -> str:
    return json.dumps(design, sort_keys=True, separators=(",", ":"), allow_nan=False)


def design_hash(design: Mapping[str, Any]) -> str:
    """Return the SHA-256 of a design's canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(_canonical(design).encode()).hexdigest()


def _changed(launched: Mapping[str, Any], now: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted names of the fields that differ between two designs."""
    names = []
    for key in sorted(set(launched) | set(now)):
        a, b = launched.get(key), now.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            names += _changed(a, b, f"{prefix}{key}.")
        elif a != b:
            names.append(f"{prefix}{key}")
    return names


def _git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def launch(out: Path, design: Mapping[str, Any], why: str | None = None) -> dict[str, Any]:
    """Record the launch of ``design`` in ``out/launch.json``; return the record.

    The record holds the commit, the design and its hash, and ``why`` (what
    this version changes from the one before, and why).

    Raises:
        PreregistrationError: the version was launched already, or the
            checkout's tracked files have changes (a study runs a commit).
    """
    record_path = out / LAUNCH
    if record_path.exists():
        raise PreregistrationError(
            f"{record_path} exists: this version was launched once; a new design is a new "
            "version folder"
        )
    if _git("status", "--porcelain", "--untracked-files=no"):
        raise PreregistrationError("commit your changes first: a study runs a commit")
    record = {
        "commit": _git("rev-parse", "HEAD"),
        "design_sha256": design_hash(design),
        "why": why,
        "design": design,
    }
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(record_path, json.dumps(record, indent=1) + "\n")
    return record


def check_launched(out: Path, design: Mapping[str, Any]) -> dict[str, Any]:
    """Return the launch record of ``out`` if ``design`` is the launched design.

    Raises:
        PreregistrationError: no launch record, or a design that differs from
            it (the message names the fields that changed).
    """
    record_path = out / LAUNCH
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PreregistrationError(f"no {record_path}: launch the study first") from None
    if record.get("design_sha256") != design_hash(design):
        changed = ", ".join(_changed(record.get("design") or {}, design)) or "the hash only"
        raise PreregistrationError(
            f"the design differs from the one launched in {record_path} ({changed}): "
            "a changed design is a new version folder, launched anew"
        )
    return record


def write_once(path: Path, record: Mapping[str, Any]) -> None:
    """Write a gate's ``record`` to ``path``, once.

    Writing the same record again is a no-op (a resumed study recomputes it).

    Raises:
        PreregistrationError: ``path`` holds a different record: a gate is
            written once and never rewritten.
    """
    text = json.dumps(record, indent=1, sort_keys=True) + "\n"
    if path.exists():
        if path.read_text(encoding="utf-8") != text:
            raise PreregistrationError(
                f"{path} was written once and holds another record: a gate is never "
                "rewritten (a changed gate is a new version folder)"
            )
        return
    atomic_write_text(path, text)
