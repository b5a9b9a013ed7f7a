"""The turn budgets of GRPO training episodes: a fixed T, or a BudgetMix.

This module imports neither torch nor transformers, so ``train-llm`` can
parse its flags into a :class:`BudgetSpec` before loading either.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["BudgetSpec"]


@dataclass(frozen=True)
class BudgetSpec:
    """The turn budgets of training episodes: a fixed T, or a BudgetMix.

    Args:
        budgets: the budgets T to draw from (one value: a fixed budget).
        weights: their probabilities (uniform when ``None``); normalised.
        visible: show the turns left in every observation (as
            ``TurnBudget(visible=True)``); the model must then be evaluated
            with a visible budget too.
        shared: the K attempts at a task (one GRPO group) share one T drawn
            per group; otherwise each attempt draws its own T.
    """

    budgets: tuple[int, ...]
    weights: tuple[float, ...] | None = None
    visible: bool = False
    shared: bool = True

    def __post_init__(self) -> None:
        budgets = tuple(self.budgets)
        if not budgets or any(
            isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1 for b in budgets
        ):
            raise ValueError(f"budgets must be ints >= 1, got {self.budgets!r}.")
        object.__setattr__(self, "budgets", tuple(int(b) for b in budgets))
        if self.weights is not None:
            weights = tuple(float(w) for w in self.weights)
            if len(weights) != len(budgets):
                raise ValueError(
                    f"weights must have one value per budget ({len(budgets)}), got {len(weights)}."
                )
            if any(not math.isfinite(w) or w < 0 for w in weights) or sum(weights) <= 0:
                raise ValueError(f"weights must be >= 0 with a positive sum, got {weights}.")
            object.__setattr__(self, "weights", weights)

    @classmethod
    def fixed(cls, budget: int, visible: bool = False) -> BudgetSpec:
        """Return a fixed budget T."""
        return cls((budget,), visible=visible)

    @property
    def max_budget(self) -> int:
        """The longest budget."""
        return max(self.budgets)

    def draw(self, rng: np.random.Generator) -> int:
        """Return one budget drawn with ``weights``."""
        if len(self.budgets) == 1:
            return self.budgets[0]
        p = None if self.weights is None else np.asarray(self.weights) / sum(self.weights)
        return int(self.budgets[int(rng.choice(len(self.budgets), p=p))])

    def describe(self) -> str:
        """Return ``"T=8"`` or ``"BudgetMix{4,6,8,12}"`` for logs and tables."""
        if len(self.budgets) == 1:
            return f"T={self.budgets[0]}"
        return "BudgetMix{" + ",".join(map(str, self.budgets)) + "}"

    def to_json(self) -> dict[str, Any]:
        """Return the spec as a JSON-ready dict."""
        data = asdict(self)
        data["budgets"] = list(self.budgets)
        data["weights"] = None if self.weights is None else list(self.weights)
        return data
