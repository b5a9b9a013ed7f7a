"""BudgetDraw: the one owner of drawing turn budgets T from a weighted set.

:class:`~wrappers.budget_mix.BudgetMix` draws each episode's T with it, and so
does any trainer that sets T per episode itself through
``reset(options={"budget": T})``: the checks, the normalisation of the
weights, the random stream and the draw are the same everywhere.

>>> draws = BudgetDraw([4, 8], weights=[1e308, 1e308])
>>> draws.probabilities
(0.5, 0.5)
>>> first, again = draws.generator(seed=0), draws.generator(seed=0)
>>> [draws.draw(first) for _ in range(8)] == [draws.draw(again) for _ in range(8)]
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from wrappers._core import seeding
from wrappers._core.validators import check_budget, check_weights

__all__ = ["BudgetDraw"]


class BudgetDraw:
    """Draw turn budgets from ``budgets`` with ``weights`` (uniform by default).

    Args:
        budgets: the budgets T to draw from, ints >= 1 (one value: a fixed T).
        weights: one finite number >= 0 per budget, not all zero; normalised
            as :func:`wrappers._core.validators.check_weights` does, so that huge
            weights such as ``1e308`` work.  Strings are refused.

    Attributes:
        budgets: the budgets, as a tuple of ints.
        weights: the weights as given (floats), or ``None`` for uniform.
        probabilities: the probability of each budget.
    """

    def __init__(self, budgets: Sequence[int], weights: Sequence[float] | None = None) -> None:
        if isinstance(budgets, (str, bytes)) or not isinstance(budgets, Sequence):
            raise TypeError(f"budgets must be a sequence of ints, got {type(budgets).__name__}.")
        if len(budgets) == 0:
            raise ValueError("budgets must not be empty: pass at least one, e.g. [5, 10, 20].")
        self.budgets = tuple(check_budget(budget, "every budget") for budget in budgets)
        count = len(self.budgets)
        if weights is None:
            self.weights = None
            self.probabilities = tuple(float(p) for p in np.full(count, 1.0 / count))
        else:
            self.probabilities = check_weights(weights, count, choices="budgets")
            self.weights = tuple(float(weight) for weight in weights)

    @property
    def max_budget(self) -> int:
        """The largest budget."""
        return max(self.budgets)

    @staticmethod
    def generator(seed: int | None) -> np.random.Generator:
        """Return the budget stream of ``seed``, apart from the env's own stream of that seed.

        ``None`` starts from fresh OS entropy.
        """
        return np.random.default_rng() if seed is None else seeding.stream(seeding.BUDGET, seed)

    def draw(self, rng: np.random.Generator) -> int:
        """Return one budget drawn from ``rng`` (a fixed budget draws nothing)."""
        if len(self.budgets) == 1:
            return self.budgets[0]
        return self.budgets[int(rng.choice(len(self.budgets), p=self.probabilities))]

    def __repr__(self) -> str:
        weights = "" if self.weights is None else f", weights={list(self.weights)}"
        return f"BudgetDraw({list(self.budgets)}{weights})"
