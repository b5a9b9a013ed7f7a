"""BudgetMix: sample a different turn budget for every episode."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from wrappers.budget_draw import BudgetDraw
from wrappers.protocol import BUDGET
from wrappers.turn_budget import TurnBudget

__all__ = ["BudgetMix"]


class BudgetMix(TurnBudget):
    """Play each episode under a turn budget sampled from ``budgets``.

    On every ``reset`` the wrapper draws T from ``budgets`` with ``weights``
    (uniform by default) and behaves exactly like :class:`TurnBudget` with
    ``max_turns=T`` for that episode, including ``info["budget"]``.

    The draw is a :class:`~wrappers.budget_draw.BudgetDraw` (``draws``), which
    checks and normalises the weights (huge ones such as ``1e308`` included),
    from the wrapper's own generator.  ``reset(seed=s)`` re-seeds it from
    ``s``, so runs are reproducible, and the sub-envs of a vector env (seeded
    ``s, s+1, ...``) draw independently.  Before any seed it starts
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
        draws = BudgetDraw(budgets, weights)
        # Recorded first, so that TurnBudget's own record (max_turns) does not
        # replace it and gym.make(env.spec) rebuilds a BudgetMix.
        gym.utils.RecordConstructorArgs.__init__(
            self, budgets=draws.budgets, weights=draws.weights, visible=visible
        )
        super().__init__(env, max_turns=draws.max_budget, visible=visible)
        #: The one budget-draw object: the checks, the normalisation and the stream.
        self.draws = draws
        self.budgets = draws.budgets
        #: The probability of each budget.
        self.weights = np.asarray(draws.probabilities)
        self._budget_rng = draws.generator(None)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        if seed is not None:
            self._budget_rng = self.draws.generator(seed)
        return super().reset(seed=seed, options=options)

    def _episode_budget(self, options: dict[str, Any] | None) -> int:
        if options and BUDGET in options:
            return super()._episode_budget(options)
        return self.draws.draw(self._budget_rng)
