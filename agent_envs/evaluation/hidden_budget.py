"""Hidden budgets: warn a policy that looks for the budget it cannot have.

In hidden mode every episode runs at max(T) while the surface reads each T off
it, so the policy must not learn the budget: the budget's one owner
(``wrappers.budget``) then leaves ``budget`` and ``turns_left`` out of
``info`` (``turn`` stays: it reveals no budget).  A policy that reads them
anyway would silently get nothing and be measured as if it had no budget
sense at all; :func:`hide_budget` hands it an ``info`` that tells it so, once
per run, with the fix.  This is the evaluator's own check, not a budget type:
users set visibility on ``BudgetRegime`` or the budget wrapper.

The check costs nothing on the hot path of a policy that never asks: plain
lookups of present keys go through ``dict`` itself, and only a miss
(``__missing__``), ``get`` and ``in`` run Python code.
"""

from __future__ import annotations

import warnings
from typing import Any

from wrappers.protocol import BUDGET, TURNS_LEFT

__all__ = ["HIDDEN_BUDGET_KEYS", "hide_budget"]

#: The ``info`` keys that reveal the budget; removed in hidden mode.
HIDDEN_BUDGET_KEYS = (BUDGET, TURNS_LEFT)
_HIDDEN = frozenset(HIDDEN_BUDGET_KEYS)


def _note_read(reads: set[str], key: str) -> None:
    """Note in the run's ``reads`` that the policy asked for ``key``; warn on the run's first."""
    if not reads:
        warnings.warn(
            f"the policy read info[{key!r}], but the budget is hidden in this run (every "
            "episode runs at max(T)), so it got nothing. If the policy uses the budget, "
            "declare visible_budget = True on it, or pass visible_budget=True "
            "(--visible-budget).",
            UserWarning,
            stacklevel=3,
        )
    reads.add(key)


def hide_budget(info: dict[str, Any], reads: set[str]) -> dict[str, Any]:
    """Return ``info`` without the budget keys; a policy asking for one is noted in ``reads``.

    ``reads`` is the run's set of the hidden keys its policy asked for, shared
    by every episode's info, so the warning comes once per run.  The result is
    a ``dict`` and pickles (e.g. to a Ray worker) as the plain dict it stands for.
    """
    return _WatchedInfo(info, reads)


class _WatchedInfo(dict):
    """A dict that notes every read of a hidden budget key (see :func:`hide_budget`)."""

    __slots__ = ("reads",)

    def __init__(self, info: dict[str, Any], reads: set[str]) -> None:
        super().__init__(info)
        for key in HIDDEN_BUDGET_KEYS:  # absent already when the budget owner hides it
            self.pop(key, None)
        self.reads = reads

    def __missing__(self, key: Any) -> Any:
        if key in _HIDDEN:
            _note_read(self.reads, key)
        raise KeyError(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if key in _HIDDEN:
            _note_read(self.reads, key)
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        if key in _HIDDEN:
            _note_read(self.reads, key)  # type: ignore[arg-type]
        return dict.__contains__(self, key)

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))
