"""ProcessReward: potential-based shaping from the oracle's distance to success."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym

from wrappers.protocol import Oracle
from wrappers.validators import check_number

__all__ = ["ProcessReward"]


class ProcessReward(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Add a process-supervision signal: shaping with potential ``-oracle_turns``.

    Each step's reward becomes ``r + coef * (gamma * phi(s') - phi(s))`` with
    ``phi(s) = -env.unwrapped.oracle_turns()`` (Ng, Harada and Russell, 1999).
    A step that brings the agent one turn closer to success earns about
    ``+coef``, a step that moves away about ``-coef``, a wasted turn about 0.
    The env's own success reward (``1.0``) is passed through unchanged, and a
    solved state has ``phi = 0``.  Along an oracle path of ``n`` turns from
    ``s0`` the shaped return is ``gamma**(n-1) + coef * oracle_turns(s0)``
    (with discount ``gamma``): the shaping telescopes.

    Dead ends (``oracle_turns() is None``): by default, entering a dead end
    lowers the potential by one turn, ``phi = phi(previous state) - 1``, and
    it stays there while the agent remains in the dead end.  Falling into a
    hole is thus scored like a step away from success (about ``-coef``); the
    success reward it forfeits is the real cost.  A harsher penalty (such as
    ``2 * oracle_turns(s0) + 1`` turns) made MaskablePPO so averse to holes on
    FrozenLake-8x8 that it looped in safe cells instead of reaching the goal.
    This default depends on the state the dead end was entered from, so it is
    not a pure state potential; no fixed potential is policy-invariant for a
    *terminal* failure anyway.  ``dead_end_turns=D`` fixes the dead-end
    potential to ``-D`` instead.

    ``gamma`` should be the discount of the learning algorithm; with another
    value the shaping is no longer exactly potential-based for that learner.
    With ``gamma < 1`` a turn spent at distance ``d`` earns
    ``coef * (1 - gamma) * d``, so shuttling between two cells gains a little
    each round; only the success reward outweighs that in the long run.

    Cost: one ``oracle_turns()`` call per step and one per reset, on top of
    the step itself; how much that is depends on the env's oracle (the
    agent_envs oracles are memoised per state where that is cheap).

    ``info`` gains ``process_reward`` (the shaping term of this step; 0.0 on
    reset) and ``oracle_turns`` (the distance after the step, ``None`` in a
    dead end).

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers.process_reward import ProcessReward
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
        dead_end_turns: float | None = None,
    ) -> None:
        coef = check_number(coef, "coef")
        gamma = check_number(gamma, "gamma", 0.0, 1.0, open_low=True)
        if dead_end_turns is not None:
            dead_end_turns = check_number(dead_end_turns, "dead_end_turns", 0.0)
        if not isinstance(env.unwrapped, Oracle):
            raise ValueError(
                f"{type(env.unwrapped).__name__} has no oracle_turns() method, so ProcessReward "
                "has no distance to shape with."
            )
        gym.utils.RecordConstructorArgs.__init__(
            self, coef=coef, gamma=gamma, dead_end_turns=dead_end_turns
        )
        gym.Wrapper.__init__(self, env)
        self.coef = coef
        self.gamma = gamma
        self.dead_end_turns = dead_end_turns
        self._potential = 0.0
        self._in_dead_end = False

    def _distance(self) -> int | None:
        return self.env.unwrapped.oracle_turns()

    def _next_potential(self, distance: int | None) -> float:
        if distance is not None:
            return -float(distance)
        if self.dead_end_turns is not None:
            return -self.dead_end_turns
        # Entering a dead end costs one turn of potential; staying in one costs nothing more.
        return self._potential if self._in_dead_end else self._potential - 1.0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        distance = self._distance()
        self._potential = 0.0
        self._in_dead_end = False
        self._potential = self._next_potential(distance)
        self._in_dead_end = distance is None
        return observation, {**info, "process_reward": 0.0, "oracle_turns": distance}

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        distance = self._distance()
        potential = self._next_potential(distance)
        shaping = self.coef * (self.gamma * potential - self._potential)
        self._potential = potential
        self._in_dead_end = distance is None
        info = {**info, "process_reward": shaping, "oracle_turns": distance}
        return observation, float(reward) + shaping, terminated, truncated, info
