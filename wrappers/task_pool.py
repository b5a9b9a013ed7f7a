"""TaskPool: draw each episode's task from a given set of task ids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from wrappers._core import seeding
from wrappers.action import expose_action_masks
from wrappers.protocol import TASK_ID

__all__ = ["TaskPool"]


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
        >>> from wrappers.task_pool import TaskPool
        >>> env = TaskPool(gym.make("agent_envs/GuessNumber-v0"), task_ids=[3, 7])
        >>> _, info = env.reset(seed=0)
        >>> info["task_id"] in (3, 7)
        True
    """

    def __init__(self, env: gym.Env, task_ids: Sequence[int]) -> None:
        if isinstance(task_ids, (str, bytes)) or not isinstance(task_ids, Sequence):
            raise TypeError(f"task_ids must be a sequence of ints, got {type(task_ids).__name__}.")
        if not isinstance(task_ids, range):
            task_ids = tuple(int(task) for task in task_ids)
        # min() would walk a range of two billion ids; a range's ends are enough.
        ends = (task_ids[0], task_ids[-1]) if isinstance(task_ids, range) and task_ids else task_ids
        if len(task_ids) == 0 or min(ends) < 0:
            raise ValueError(f"task_ids must be non-empty and >= 0, got {task_ids!r:.80}.")
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
