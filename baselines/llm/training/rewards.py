"""GRPO reward functions over whole episodes, in TRL's ``reward_funcs`` signature.

TRL calls each with the completions and every per-episode field the rollout
returned (``success``, ``process_return``, ...) as keyword arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["REWARDS", "outcome_reward", "process_reward", "validity_reward"]


def outcome_reward(completions: list, success: list[bool], **_: Any) -> list[float]:
    """The outcome reward: 1.0 for an episode that succeeded, else 0.0.

    Trajectory-level: GRPO gives every model token of the episode the same
    group-normalised advantage of this reward.
    """
    return [1.0 if ok else 0.0 for ok in success]


def validity_reward(completions: list, turns: list[int], invalid_actions: list[int], **_: Any):
    """The validity reward: the share of the episode's replies that were valid actions.

    It rewards the format alone, never success: a control that separates
    what the task's outcome reward teaches from what any reward for valid
    replies teaches (an episode of no turns scores 0).
    """
    return [(n - bad) / n if n else 0.0 for n, bad in zip(turns, invalid_actions, strict=True)]


#: The rewards ``train-llm --reward`` names: the episode's outcome, or valid replies only.
REWARDS = {"outcome": outcome_reward, "validity": validity_reward}


def process_reward(coef: float) -> Callable[..., list[float]]:
    """Return a reward function: ``coef`` times the episode's progress toward success.

    Progress is the share of the oracle distance the episode covered,
    ``(oracle_turns(start) - oracle_turns(end)) / oracle_turns(start)``: 1 on
    success, 0 for no progress or a dead end, negative for ending farther
    away.  It rewards getting closer in episodes that run out of turns, which
    the outcome reward does not see, and rests on the env's oracle
    (privileged information).  The rollout must be built with
    ``process_reward=True``.

    Why not ``ProcessReward``'s potential-based shaping summed over the
    episode: the shaping telescopes to ``phi(end) - phi(start)`` and
    ``ProcessReward`` sets ``phi = 0`` at every episode end, so the sum is the
    same for every episode of a task and carries no signal for a
    trajectory-level advantage.
    """

    def process(completions: list, process_return: list[float], **_: Any) -> list[float]:
        return [coef * value for value in process_return]

    process.__name__ = "process_reward"
    return process
