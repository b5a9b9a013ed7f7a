"""BudgetMix: sample a different turn budget for every episode."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from wrappers import seeding
from wrappers.protocol import BUDGET
from wrappers.turn_budget import TurnBudget
from wrappers.validators import check_budget

__all__ = ["BudgetMix"]


class BudgetMix(TurnBudget):
    """Play each episode under a turn budget sampled from ``budgets``.

    On every ``reset`` the wrapper draws T from ``budgets`` with ``weights``
    (uniform by default) and behaves exactly like :class:`TurnBudget` with
    ``max_turns=T`` for that episode, including ``info["budget"]``.

    The draw uses the wrapper's own generator.  ``reset(seed=s)`` re-seeds it
    from ``s``, so runs are reproducible, and the sub-envs of a vector env
    (seeded ``s, s+1, ...``) draw independently.  Before any seed it starts
    from fresh OS entropy.  ``reset(options={"budget": T})`` forces T.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers import BudgetMix
        >>> env = BudgetMix(gym.make("agent_envs/GuessNumber-v0"), budgets=[5, 10, 20])
        >>> _, info = env.reset(seed=0)
        >>> info["budget"] in (5, 10, 20)
        True
    """

    def __init__(
        self,
        env: gym.Env,
        budgets: Sequence[int],
        weights: Sequence[float] | None = None,
        visible: bool = False,
    ) -> None:
        if isinstance(budgets, (str, bytes)) or not isinstance(budgets, Sequence):
            raise TypeError(f"budgets must be a sequence of ints, got {type(budgets).__name__}.")
        if len(budgets) == 0:
            raise ValueError("budgets must not be empty: pass at least one, e.g. [5, 10, 20].")
        budgets = tuple(check_budget(budget, "every budget") for budget in budgets)
        probabilities = self._probabilities(weights, len(budgets))
        # Recorded first, so that TurnBudget's own record (max_turns) does not
        # replace it and gym.make(env.spec) rebuilds a BudgetMix.
        gym.utils.RecordConstructorArgs.__init__(
            self,
            budgets=budgets,
            weights=None if weights is None else tuple(float(w) for w in weights),
            visible=visible,
        )
        super().__init__(env, max_turns=max(budgets), visible=visible)
        self.budgets = budgets
        self.weights = probabilities
        self._budget_rng = np.random.default_rng()

    @staticmethod
    def _probabilities(weights: Sequence[float] | None, count: int) -> np.ndarray:
        if weights is None:
            return np.full(count, 1.0 / count)
        if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
            raise TypeError(f"weights must be a sequence of numbers, got {type(weights).__name__}.")
        if len(weights) != count:
            raise ValueError(f"weights has {len(weights)} entries but budgets has {count}.")
        try:
            values = np.array([float(weight) for weight in weights])
        except (TypeError, ValueError):
            raise TypeError(f"weights must be numbers, got {list(weights)!r}.") from None
        if not all(math.isfinite(value) and value >= 0 for value in values):
            raise ValueError(f"weights must be finite and non-negative, got {list(weights)!r}.")
        if values.max() <= 0:
            raise ValueError("weights must not all be zero.")
        # Scaled by the largest first: the sum of finite weights can overflow
        # (two of 1e308 sum to inf), and tiny ones can underflow; x / max is in [0, 1].
        values = values / values.max()
        return values / values.sum()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        if seed is not None:
            self._budget_rng = seeding.stream(seeding.BUDGET, seed)
        return super().reset(seed=seed, options=options)

    def _episode_budget(self, options: dict[str, Any] | None) -> int:
        if options and BUDGET in options:
            return super()._episode_budget(options)
        return int(self.budgets[self._budget_rng.choice(len(self.budgets), p=self.weights)])
