"""Reference policies: the oracle and the noisy oracle, seeded per turn.

Step quality replays the noisy oracle to find its reference states, and the
baselines package ships these same classes as its ``oracle`` and
``noisy-oracle`` agents, so there is one noisy oracle, and one way of seeding
such agents (:class:`SeededAgent`).

They read the env's action API through ``info``: each declares
``required_info`` and the evaluator adds those lists with
``wrappers.ActionHints``.  Outside the evaluator, wrap the env yourself::

    env = ActionHints(TurnBudget(gym.make(env_id), 20), admissible=True, oracle=True)

Randomness.  Inside the evaluator every draw is a counter-based hash
(SplitMix64, :func:`wrappers.utils.seeding.turn_hash`) of ``(agent seed,
info["episode_seed"], info["turn"], stream)``, so an episode's actions depend
only on its own seed and turn: never on batching, episode order, or how many
episodes ran before.  Without those two keys (a plain Gymnasium loop outside
the evaluator: a ``TurnBudget`` adds ``turn`` but not ``episode_seed``) the
agent falls back to its own ``numpy`` generator seeded with ``seed``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from wrappers.protocol import ADMISSIBLE_ACTIONS, EPISODE_SEED, ORACLE_ACTIONS, TURN
from wrappers.utils.seeding import turn_hash
from wrappers.utils.validators import check_int, check_probability

__all__ = ["NoisyOracleAgent", "OracleAgent", "SeededAgent"]


class SeededAgent:
    """The base of seeded agents: per-turn counter-based draws, or the agent's own generator."""

    visible_budget: ClassVar[bool] = False
    required_info: ClassVar[tuple[str, ...]] = ()
    #: The per-turn streams of :meth:`draw`: they keep the action pick and the
    #: coin flip of one turn independent (a subclass may add its own numbers).
    PICK: ClassVar[int] = 1
    COIN: ClassVar[int] = 2

    def __init__(self, seed: int = 0) -> None:
        self.seed = check_int(seed, "seed", 0)
        self._rng = np.random.default_rng(self.seed)

    def draw(self, info: dict[str, Any], stream: int) -> int:
        """Return a 64-bit draw for this turn of this episode on ``stream``."""
        episode_seed, turn = info.get(EPISODE_SEED), info.get(TURN)
        if episode_seed is None or turn is None:
            return int(self._rng.integers(0, 1 << 62))
        return turn_hash(self.seed, episode_seed, turn, stream)

    def pick(self, info: dict[str, Any], actions: list[str]) -> str:
        """Return one of ``actions``, drawn uniformly for this turn."""
        # An empty list means nothing is legal: send "" (an invalid action).
        return actions[self.draw(info, self.PICK) % len(actions)] if actions else ""

    def needs(self, info: dict[str, Any], key: str) -> list[str]:
        """Return ``info[key]``, or say how to get it when it is missing."""
        try:
            return info[key]
        except KeyError:
            raise KeyError(
                f"{type(self).__name__} needs info[{key!r}]: run it through "
                "agent_envs.evaluation.evaluate, or wrap the env in wrappers.ActionHints."
            ) from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seed={self.seed})"


class OracleAgent(SeededAgent):
    """Follow the oracle: play an action from ``oracle_actions()``.

    Args:
        choice: ``"first"`` plays ``oracle_actions()[0]`` (deterministic, the
            path whose length ``oracle_turns()`` counts); ``"random"`` draws
            among the optimal actions (seeded like :class:`RandomAgent`).
        seed: the agent's seed.

    In a dead end the oracle has no action and the agent sends ``""`` (an
    invalid action): nothing can succeed there any more.

    Example:
        >>> OracleAgent().act("", {"oracle_actions": ["up", "left"]})
        'up'
    """

    required_info = (ORACLE_ACTIONS,)

    def __init__(self, choice: str = "first", seed: int = 0) -> None:
        if choice not in ("first", "random"):
            raise ValueError(f"choice must be 'first' or 'random', got {choice!r}.")
        super().__init__(seed)
        self.choice = choice

    def _oracle(self, info: dict[str, Any]) -> str:
        actions = self.needs(info, ORACLE_ACTIONS)
        if self.choice == "first" or len(actions) < 2:
            return actions[0] if actions else ""
        return self.pick(info, actions)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        """Return an optimal action."""
        return self._oracle(info)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(choice={self.choice!r}, seed={self.seed})"


class NoisyOracleAgent(OracleAgent):
    """Follow the oracle, but with probability ``epsilon`` take a random admissible action.

    The random action may happen to be optimal too.  As ``epsilon`` grows the
    single-step decision quality falls, while recovery (what happens after a
    mistake) stays the oracle's: the diagnostics should tell the two apart.

    Args:
        epsilon: probability of a random admissible action, in ``[0, 1]``.
        choice: how to pick among optimal actions (see :class:`OracleAgent`).
        seed: the agent's seed.

    Example:
        >>> info = {"oracle_actions": ["up"], "admissible_actions": ["up", "down"]}
        >>> NoisyOracleAgent(epsilon=0.0).act("", {**info, "episode_seed": 1, "turn": 0})
        'up'
    """

    required_info = (ADMISSIBLE_ACTIONS, ORACLE_ACTIONS)

    def __init__(self, epsilon: float = 0.1, choice: str = "first", seed: int = 0) -> None:
        epsilon = check_probability(epsilon, "epsilon")
        super().__init__(choice=choice, seed=seed)
        self.epsilon = epsilon

    def act(self, observation: str, info: dict[str, Any]) -> str:
        """Return a random admissible action with probability epsilon, else an optimal one."""
        coin = (self.draw(info, self.COIN) >> 11) / float(1 << 53)
        oracle = self.needs(info, ORACLE_ACTIONS)
        if coin < self.epsilon or not oracle:
            return self.pick(info, self.needs(info, ADMISSIBLE_ACTIONS))
        return self._oracle(info)

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(epsilon={self.epsilon}, choice={self.choice!r}, seed={self.seed})"
