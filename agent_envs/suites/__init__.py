"""Versioned benchmark suites: which envs, tasks, budgets and attempts ``agent-envs bench`` plays.

A suite is data (``v1.json`` beside this module), not code, and it never
changes once released: a change is a new version.  Each env id of a suite
has its own held-out task ids (distinct instances, none the instance of any
task in the few-shot example pool, so no agent is ever scored on an episode
it was shown) and its own T grid, set from the env's oracle turns on those
tasks: a **tight** budget (the median oracle turns), a middle one and a
**generous** one (four times the tight).  ``tools/make_suite.py`` wrote
``v1.json``; ``tests/test_bench.py`` checks every rule on the released data.

>>> suite = load_suite("v1")
>>> suite.version, len(suite.entries) >= 8, suite.entries[0].tight < suite.entries[0].generous
('v1', True, True)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from wrappers.errors import InvalidValue

__all__ = ["SUITES", "Suite", "SuiteEntry", "load_suite", "select"]

#: The released suites, oldest first.
SUITES = ("v1",)


@dataclass(frozen=True)
class SuiteEntry:
    """One env id of a suite: its held-out tasks and its T grid (tight first, generous last)."""

    env_id: str
    family: str
    tasks: tuple[int, ...]
    budgets: tuple[int, ...]

    @property
    def tight(self) -> int:
        """The tight budget: about the oracle's turns on these tasks."""
        return self.budgets[0]

    @property
    def generous(self) -> int:
        """The generous budget: several times the tight one."""
        return self.budgets[-1]


@dataclass(frozen=True)
class Suite:
    """A released benchmark suite: its entries, and the attempts and K of every entry."""

    version: str
    samples: int
    ks: tuple[int, ...]
    entries: tuple[SuiteEntry, ...]
    #: Some rows only (:func:`select`): a score over them is not the suite's.
    partial: bool = False


def select(suite: Suite, env_ids: Sequence[str]) -> Suite:
    """Return ``suite`` with only the rows of ``env_ids`` (a partial bench), in suite order.

    Raises:
        InvalidValue: an id that is not a row of the suite.
    """
    known = {entry.env_id for entry in suite.entries}
    unknown = [env_id for env_id in env_ids if env_id not in known]
    if unknown or not env_ids:
        # Each id clipped, three at most: the argument may be any length.
        given = ", ".join(f"{env_id!r:.60}" for env_id in unknown[:3]) or "none"
        given += f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        raise InvalidValue(
            f"--only takes ids of suite {suite.version}'s rows, got {given}; "
            f"its rows: {', '.join(sorted(known))}."
        )
    entries = tuple(entry for entry in suite.entries if entry.env_id in env_ids)
    return Suite(suite.version, suite.samples, suite.ks, entries, len(entries) < len(known))


def load_suite(version: str) -> Suite:
    """Return the released suite ``version`` (such as ``"v1"``).

    Raises:
        InvalidValue: no suite of that version was released.
    """
    if version not in SUITES:
        raise InvalidValue(f"no suite {version!r}; the released suites are {', '.join(SUITES)}.")
    data = json.loads(resources.files(__name__).joinpath(f"{version}.json").read_text())
    entries = tuple(
        SuiteEntry(e["env_id"], e["family"], tuple(e["tasks"]), tuple(e["budgets"]))
        for e in data["entries"]
    )
    return Suite(data["version"], data["samples"], tuple(data["ks"]), entries)
