"""Episode wrappers: which task an episode plays, and how its end is reported.

* :class:`TaskPool` draws each episode's task from a given set of task ids.
* :class:`TruncationIsTerminal` ends a truncated episode as terminated, so
  learners do not bootstrap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from wrappers.action import expose_action_masks
from wrappers.errors import InvalidType, InvalidValue
from wrappers.protocol import TASK_ID
from wrappers.utils import seeding
from wrappers.utils.validators import check_int

__all__ = ["TaskPool", "TruncationIsTerminal"]


class TaskPool(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Draw each episode's task uniformly from ``task_ids`` unless ``reset`` names one.

    ``task_ids`` is any sequence of ids ``>= 0``; a ``range`` is kept as it
    is, so ``TaskPool(env, range(1000, 2**31 - 1))`` trains on fresh tasks
    while keeping ids ``0..999`` held out for evaluation.

    The draw uses the wrapper's own generator, re-seeded by ``reset(seed=...)``
    like :class:`wrappers.BudgetMix`, so that vector sub-envs draw
    independently.  ``reset(options={"task_id": i})`` plays task ``i``.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers.episode import TaskPool
        >>> env = TaskPool(gym.make("agent_envs/GuessNumber-v0"), task_ids=[3, 7])
        >>> _, info = env.reset(seed=0)
        >>> info["task_id"] in (3, 7)
        True
    """

    def __init__(self, env: gym.Env, task_ids: Sequence[int]) -> None:
        if isinstance(task_ids, (str, bytes)) or not isinstance(task_ids, Sequence):
            raise InvalidType(
                f"task_ids must be a sequence of ints, got {type(task_ids).__name__}."
            )
        if not isinstance(task_ids, range):
            # check_int, not int(): 2.7, True and "3" are refused, never read as 2, 1 and 3.
            task_ids = tuple(check_int(task, "every task id") for task in task_ids)
        # min() would walk a range of two billion ids; a range's ends are enough.
        ends = (task_ids[0], task_ids[-1]) if isinstance(task_ids, range) and task_ids else task_ids
        if len(task_ids) == 0 or min(ends) < 0:
            raise InvalidValue(f"task_ids must be non-empty and >= 0, got {task_ids!r:.80}.")
        gym.utils.RecordConstructorArgs.__init__(self, task_ids=task_ids)
        gym.Wrapper.__init__(self, env)
        expose_action_masks(self)
        self.task_ids = task_ids
        self._rng = np.random.default_rng()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self._rng = seeding.stream(seeding.TASK_POOL, seed)
        if not options or TASK_ID not in options:
            task_id = int(self.task_ids[int(self._rng.integers(len(self.task_ids)))])
            options = {**(options or {}), TASK_ID: task_id}
        return self.env.reset(seed=seed, options=options)


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
        >>> from wrappers.episode import TruncationIsTerminal
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
