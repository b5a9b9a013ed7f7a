"""The turn budgets of GRPO training episodes: a fixed T, or a BudgetMix.

A :class:`BudgetSpec` is the run's :class:`agent_envs.env_stack.BudgetRegime`
plus whether a GRPO group shares one T.  The budgets are drawn by
:class:`wrappers.budget.BudgetDraw`, the object ``wrappers.BudgetMix``
draws with: the same checks, the same normalisation of
the weights and the same random stream.  This module imports neither torch
nor transformers, so ``train-llm`` can parse its flags into a
:class:`BudgetSpec` before loading either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_envs.env_stack import BudgetRegime
from wrappers._core.validators import check_bool

__all__ = ["BudgetSpec"]


@dataclass(frozen=True)
class BudgetSpec(BudgetRegime):
    """The turn budgets of training episodes: a :class:`~agent_envs.env_stack.BudgetRegime`
    whose K attempts at a task may share one T.

    Args:
        budgets: the budgets T to draw from (one value: a fixed budget).
        weights: their weights (uniform when ``None``), normalised as
            ``BudgetMix`` normalises them.
        visible: show the turns left in every observation (as
            ``TurnBudget(visible=True)``); the model must then be evaluated
            with a visible budget too.
        shared: the K attempts at a task (one GRPO group) share one T drawn
            per group; otherwise each attempt draws its own T.

    ``draws`` is the :class:`~wrappers.budget.BudgetDraw` that draws them
    (not part of equality or of :meth:`to_json`).
    """

    shared: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_bool(self.shared, "shared")

    @classmethod
    def from_regime(cls, regime: BudgetRegime, shared: bool = True) -> BudgetSpec:
        """Return ``regime`` with the GRPO groups' sharing of T.

        A mix of one budget (``--budget-mix 8``) stays a mix, so the run is
        named and described as one (``BudgetMix{8}``, not ``T=8``).
        """
        return cls(regime.budgets, regime.weights, regime.visible, shared, mix=regime.mix)

    def to_json(self) -> dict[str, Any]:
        """Return the spec as a JSON-ready dict."""
        return {
            "budgets": list(self.budgets),
            "weights": None if self.weights is None else list(self.weights),
            "visible": self.visible,
            "shared": self.shared,
        }
