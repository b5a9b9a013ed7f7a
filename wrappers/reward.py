"""Reward wrappers: :class:`ProcessReward`, shaping from the oracle's distance to success."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym

from wrappers.action import expose_action_masks
from wrappers.errors import InvalidValue
from wrappers.protocol import Oracle
from wrappers.utils.validators import check_bool, check_number

__all__ = ["ProcessReward"]


class ProcessReward(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Add a process-supervision signal that cannot be gamed: potential-based shaping.

    Each step's reward becomes ``r + gamma * phi(s') - phi(s)`` (Ng, Harada
    and Russell, 1999), with ``gamma`` the learner's own discount and, with
    ``d = env.unwrapped.oracle_turns()`` and ``d0`` its value at reset::

        phi(s) = gamma ** (d - 1) + coef * max(d0 - d, 0)   while success is reachable,
        phi(s) = 0                                        at the end of an episode
                                                          and in a dead end.

    What that buys, for any policy:

    * **No cycle pays.**  A loop of ``k`` steps back to the same state earns
      ``(gamma**k - 1) * phi(s) <= 0``, because ``phi >= 0``.
    * **Success always beats failure.**  The end of an episode has potential
      0, so a whole episode's shaped return is its raw return minus
      ``phi(s0)``, a constant of the task: the optimal policies are those of
      the raw task (policy invariance), and stepping into a hole never beats
      reaching the goal.
    * **A dead end costs at least the best remaining success.**  Entering one
      from ``s`` earns ``-phi(s) <= -gamma ** (d - 1)``, at least what the
      quickest success from ``s`` would still be worth.
    * **Progress pays.**  A step one turn closer (within ``d0``) earns
      ``coef`` (exactly, with ``gamma = 1``); a step away or a wasted turn
      costs; the final step cashes the potential in (``1 - phi``).

    ``truncation_is_terminal`` (default ``True``): a truncated step (the
    budget ran out) also ends with potential 0, which is right for a learner
    that treats truncation as terminal (``train-sb3``'s default).  For a
    learner that bootstraps at truncation pass ``False``.  Place the wrapper
    *outside* the ``TurnBudget``/``BudgetMix`` so that it sees truncation.

    Cost: one ``oracle_turns()`` call per step and one per reset.

    ``info`` gains ``process_reward`` (the shaping term of this step; 0.0 on
    reset) and ``oracle_turns`` (the distance after the step, ``None`` in a
    dead end).

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers.reward import ProcessReward
        >>> env = ProcessReward(gym.make("agent_envs/GuessNumber-v0"), coef=0.1, gamma=1.0)
        >>> _, info = env.reset(seed=0, options={"task_id": 0})
        >>> _, reward, *_ = env.step(env.unwrapped.oracle_actions()[0])
        >>> round(float(reward), 3)
        0.1
    """

    def __init__(
        self,
        env: gym.Env,
        coef: float = 0.1,
        gamma: float = 0.99,
        truncation_is_terminal: bool = True,
    ) -> None:
        coef = check_number(coef, "coef", 0.0)
        gamma = check_number(gamma, "gamma", 0.0, 1.0, open_low=True)
        truncation_is_terminal = check_bool(truncation_is_terminal, "truncation_is_terminal")
        if not isinstance(env.unwrapped, Oracle):
            raise InvalidValue(
                f"{type(env.unwrapped).__name__} has no oracle_turns() method, so ProcessReward "
                "has no distance to shape with."
            )
        gym.utils.RecordConstructorArgs.__init__(
            self, coef=coef, gamma=gamma, truncation_is_terminal=truncation_is_terminal
        )
        gym.Wrapper.__init__(self, env)
        expose_action_masks(self)
        self.coef = coef
        self.gamma = gamma
        self.truncation_is_terminal = truncation_is_terminal
        self._start = 0
        self._potential = 0.0

    def potential(self, distance: int | None, ended: bool = False) -> float:
        """Return ``phi`` of a state at oracle distance ``distance`` (see the class docstring)."""
        if ended or distance is None or distance <= 0:
            return 0.0
        return self.gamma ** (distance - 1) + self.coef * max(self._start - distance, 0)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        distance = self.env.unwrapped.oracle_turns()
        self._start = distance or 0
        self._potential = self.potential(distance)
        return observation, {**info, "process_reward": 0.0, "oracle_turns": distance}

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        distance = self.env.unwrapped.oracle_turns()
        ended = terminated or (truncated and self.truncation_is_terminal)
        potential = self.potential(distance, ended)
        shaping = self.gamma * potential - self._potential
        self._potential = potential
        info = {**info, "process_reward": shaping, "oracle_turns": distance}
        return observation, float(reward) + shaping, terminated, truncated, info
