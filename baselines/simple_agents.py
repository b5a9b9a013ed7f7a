"""Reference agents: uniform random, the oracle, an oracle with noise, a
GuessNumber guesser that only keeps inside the interval it is shown, and one
that plays a memorised prior over training instances.

The oracle and the noisy oracle are the evaluator's own
(:mod:`agent_envs.evaluation.reference`, which step quality replays), so every
noisy oracle in the project is one class; this module adds the uniform random
agent and the interval guesser, seeded the same way
(:class:`~agent_envs.evaluation.reference.SeededAgent`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from agent_envs.evaluation.reference import NoisyOracleAgent, OracleAgent, SeededAgent
from wrappers.protocol import ADMISSIBLE_ACTIONS

__all__ = ["IntervalGuesser", "NoisyOracleAgent", "OracleAgent", "PriorGuesser", "RandomAgent"]


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


_STATED = re.compile(r"integer between (\d+) and (\d+)")


class PriorGuesser(SeededAgent):
    """GuessNumber by a memorised prior: the most frequent training secret still possible.

    The policy a learner drifts to when its training reward pays for
    memorising the training instances rather than for bisecting: the
    maximum a posteriori guess under the training instances' empirical
    distribution.  Each turn it guesses, inside the interval last shown, the
    secret held by the most training instances of the range the episode
    stated (ties drawn, seeded per turn); where no training instance is
    still possible it guesses uniformly in the interval, as
    :class:`IntervalGuesser`.  On its training instances it wins at once
    wherever their range is unique; a split is sound when it gains nothing on
    the held-out ones (``docs/envs/guess_number.md``).

    It remembers the range of the episode's first observation, so pass it to
    the evaluator as a factory, one per episode:
    ``PerEpisode(functools.partial(PriorGuesser, instances))``.

    Args:
        instances: the training instances, as ``(low, high, secret)``.
        seed: the agent's seed, mixed into every draw with the episode seed
            and turn; where ``info`` has none, it seeds the agent's own generator.

    Example:
        >>> agent = PriorGuesser([(1, 20, 7), (1, 20, 7), (1, 20, 12)])
        >>> agent.act("I am thinking of an integer between 1 and 20. ...", {})
        '7'
        >>> agent.act("7 is too low: the secret is higher. The secret is between 8 and 20.", {})
        '12'
    """

    def __init__(self, instances: Iterable[tuple[int, int, int]], seed: int = 0) -> None:
        super().__init__(seed)
        self._by_range: dict[tuple[int, int], Counter[int]] = {}
        for low, high, secret in instances:
            self._by_range.setdefault((int(low), int(high)), Counter())[int(secret)] += 1
        self._range: tuple[int, int] | None = None

    def act(self, observation: str, info: dict[str, Any]) -> str:
        """Return the most frequent training secret of this range inside the interval shown."""
        stated = _STATED.search(observation)
        if stated:  # the first observation: the episode's range
            self._range = (int(stated.group(1)), int(stated.group(2)))
        found = _INTERVAL.findall(observation)
        if not found:
            return ""
        low, high = (int(end) for end in found[-1])
        counts = self._by_range.get(self._range, Counter())
        inside = {secret: n for secret, n in counts.items() if low <= secret <= high}
        if inside:
            most = max(inside.values())
            tied = sorted(secret for secret, n in inside.items() if n == most)
            return str(tied[self.draw(info, self.PICK) % len(tied)])
        return str(low + self.draw(info, self.PICK) % max(1, high - low + 1))
