"""Generic Gymnasium wrappers for turn-budgeted text environments.

This package depends only on gymnasium and numpy; it never imports
``agent_envs`` or ``baselines``.
"""

from __future__ import annotations

from wrappers.action_hints import ActionHints
from wrappers.budget_mix import BudgetMix
from wrappers.chat_history import ChatHistory
from wrappers.show_actions import ShowActions
from wrappers.turn_budget import TurnBudget, budget_line, check_budget

__all__ = [
    "ActionHints",
    "BudgetMix",
    "ChatHistory",
    "ShowActions",
    "TurnBudget",
    "budget_line",
    "check_budget",
]
