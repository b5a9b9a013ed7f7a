"""Generic Gymnasium wrappers for turn-budgeted text environments.

This package depends only on gymnasium and numpy; it never imports
``agent_envs`` or ``baselines`` (``tests/test_layering.py`` checks it, doctests
included).  The contract the wrappers share with the envs, the info keys and
the oracle API, is :mod:`wrappers.protocol`.  The docstring examples use the
``agent_envs/`` ids, which the repository's ``conftest.py`` registers.

The wrappers are grouped by what they transform, as Gymnasium groups its own:
:mod:`wrappers.budget` the turn budget (``TurnBudget``, ``BudgetMix``, the
budget draw and a stack's one owner of T), :mod:`wrappers.observation` what
the agent sees (``EncodeObservation``, ``ImageObservation``, ``ShowActions``;
the encoding itself is :mod:`wrappers.text_encoder`'s ``TextEncoder``),
:mod:`wrappers.action` what it sends (``DiscreteActions``, action masks),
:mod:`wrappers.reward` the reward (``ProcessReward``), :mod:`wrappers.info`
what ``info`` carries (``ActionHints``, ``ChatHistory``, ``NumpyInfo``) and
:mod:`wrappers.episode` which task an episode plays and how its end is
reported (``TaskPool``, ``TruncationIsTerminal``).  :mod:`wrappers.protocol`
and :mod:`wrappers.errors` are the contract and the error types; the helpers
that are not wrappers (argument checks, seeds, the text space) live in
:mod:`wrappers.utils`, public in Gymnasium's ``utils`` way.
"""

from __future__ import annotations

from wrappers.action import DiscreteActions, action_key, action_mask
from wrappers.budget import (
    BudgetDraw,
    BudgetMix,
    TurnBudget,
    add_budget_line,
    budget_line,
    strip_budget_line,
)
from wrappers.episode import TaskPool, TruncationIsTerminal
from wrappers.info import ActionHints, ChatHistory
from wrappers.observation import EncodeObservation, ShowActions
from wrappers.reward import ProcessReward
from wrappers.text_encoder import TextEncoder
from wrappers.utils.validators import check_budget

__all__ = [
    "ActionHints",
    "BudgetDraw",
    "BudgetMix",
    "ChatHistory",
    "DiscreteActions",
    "EncodeObservation",
    "ProcessReward",
    "ShowActions",
    "TaskPool",
    "TextEncoder",
    "TruncationIsTerminal",
    "TurnBudget",
    "action_key",
    "action_mask",
    "add_budget_line",
    "budget_line",
    "check_budget",
    "strip_budget_line",
]
