"""Reference agents: uniform random, the oracle, an oracle with noise, and a
GuessNumber guesser that only keeps inside the interval it is shown.

The oracle and the noisy oracle are the evaluator's own
(:mod:`agent_envs.evaluation.reference`, which step quality replays), so every
noisy oracle in the project is one class; this module adds the uniform random
agent and the interval guesser, seeded the same way
(:class:`~agent_envs.evaluation.reference.SeededAgent`).
"""

from __future__ import annotations

import re
from typing import Any

from agent_envs.evaluation.reference import NoisyOracleAgent, OracleAgent, SeededAgent
from agent_envs.protocol import ADMISSIBLE_ACTIONS

__all__ = ["IntervalGuesser", "NoisyOracleAgent", "OracleAgent", "RandomAgent"]


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


_INTERVAL = re.compile(r"between (\d+) and (\d+)")


class IntervalGuesser(SeededAgent):
    """GuessNumber without learning: guess uniformly inside the interval last shown.

    The baseline a learned guesser must beat: it never wastes a turn outside
    the interval the observation states, but it does not bisect.  It reads
    only the observation (the last ``between L and H`` in it), so it sees
    what an LLM sees.

    Example:
        >>> agent = IntervalGuesser()
        >>> guess = int(agent.act("The secret is between 3 and 5.", {"episode_seed": 1, "turn": 0}))
        >>> 3 <= guess <= 5
        True
    """

    def act(self, observation: str, info: dict[str, Any]) -> str:
        """Return a uniformly drawn integer of the interval the observation states."""
        found = _INTERVAL.findall(observation)
        if not found:  # every GuessNumber observation states it
            return ""
        low, high = (int(end) for end in found[-1])
        return str(low + self.draw(info, self.PICK) % max(1, high - low + 1))
