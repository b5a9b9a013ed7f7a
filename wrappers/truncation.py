"""TruncationIsTerminal: end a truncated episode as terminated, so learners do not bootstrap."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym

from wrappers.action import expose_action_masks

__all__ = ["TruncationIsTerminal"]


class TruncationIsTerminal(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Report budget exhaustion as termination: ``terminated=True, truncated=False``.

    Learners such as Stable-Baselines3's PPO and sb3-contrib's MaskablePPO
    bootstrap the value of the last state when an episode is *truncated*,
    that is they learn as if the episode went on.  Under a turn budget that
    the agent can see, running out of turns is part of the task: nothing
    follows it.  This wrapper makes that explicit, so the learner optimises
    success *within* the budget.  ``info["truncated_by_budget"]`` is ``True``
    on such a step, so the distinction is not lost.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers import TurnBudget
        >>> from wrappers.truncation import TruncationIsTerminal
        >>> env = TruncationIsTerminal(TurnBudget(gym.make("agent_envs/GuessNumber-v0"), 1))
        >>> _ = env.reset(seed=0, options={"task_id": 0})
        >>> _, _, terminated, truncated, info = env.step("1")
        >>> terminated, truncated, info["truncated_by_budget"]
        (True, False, True)
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        expose_action_masks(self)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        if truncated and not terminated:
            info = {**info, "truncated_by_budget": True}
            return observation, reward, True, False, info
        return observation, reward, terminated, truncated, info
