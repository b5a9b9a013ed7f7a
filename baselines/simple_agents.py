"""Reference agents: uniform random, the oracle, and an oracle with noise.

The oracle and the noisy oracle are the evaluator's own
(:mod:`agent_envs.evaluation.reference`, which step quality replays), so every
noisy oracle in the project is one class; this module adds the uniform random
agent, seeded the same way (:class:`~agent_envs.evaluation.reference.SeededAgent`).
"""

from __future__ import annotations

from typing import Any

from agent_envs.evaluation.reference import NoisyOracleAgent, OracleAgent, SeededAgent
from agent_envs.protocol import ADMISSIBLE_ACTIONS

__all__ = ["NoisyOracleAgent", "OracleAgent", "RandomAgent"]


class RandomAgent(SeededAgent):
    """Pick uniformly among the admissible actions.

    Example:
        >>> agent = RandomAgent(seed=0)
        >>> info = {"admissible_actions": ["a", "b"], "episode_seed": 7, "turn": 0}
        >>> agent.act("", info) == agent.act("", info)
        True
    """

    required_info = (ADMISSIBLE_ACTIONS,)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        """Return a uniformly drawn admissible action."""
        return self.pick(info, self.needs(info, ADMISSIBLE_ACTIONS))
