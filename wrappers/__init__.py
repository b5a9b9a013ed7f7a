"""Generic Gymnasium wrappers for turn-budgeted text environments.

This package depends only on gymnasium and numpy; it never imports
``agent_envs`` or ``baselines`` (``tests/test_layering.py`` checks it, doctests
included).  The contract the wrappers share with the envs, the info keys and
the oracle API, is :mod:`wrappers.protocol`.  The docstring examples use the
``agent_envs/`` ids, which the repository's ``conftest.py`` registers.
"""

from __future__ import annotations

from wrappers._core.validators import check_budget
from wrappers.action import DiscreteActions, action_key, action_mask
from wrappers.action_hints import ActionHints
from wrappers.budget_draw import BudgetDraw
from wrappers.budget_mix import BudgetMix
from wrappers.chat_history import ChatHistory
from wrappers.encode_observation import EncodeObservation, TextEncoder
from wrappers.reward import ProcessReward
from wrappers.show_actions import ShowActions
from wrappers.task_pool import TaskPool
from wrappers.truncation import TruncationIsTerminal
from wrappers.turn_budget import TurnBudget, add_budget_line, budget_line, strip_budget_line

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
