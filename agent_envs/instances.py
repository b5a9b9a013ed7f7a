"""Instance keys of task ids: which ids build the same task.

Task ids are not instances: GuessNumber-20 has 20 secrets, so among 32 ids
several build one game.  An env declares what its task is through
``instance_key()`` on the unwrapped env (:meth:`agent_envs.core.TextEnv.instance_key`
for every family here); this module asks it for any task id, so that few-shot
examples, training tasks and evaluation tasks can be kept disjoint *as
instances*.  An env without ``instance_key`` counts each task id as its own
instance.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import gymnasium as gym

from wrappers.protocol import TASK_ID

__all__ = ["instance_key", "instance_keys"]


@functools.cache
def _probe(env_id: str) -> gym.Env:
    """Return one private env of ``env_id`` per process, only ever reset, to read keys."""
    return gym.make(env_id)


@functools.cache
def instance_key(env_id: str, task_id: int) -> str:
    """Return the instance key of task ``task_id`` of the registered env ``env_id``.

    >>> instance_key("agent_envs/GuessNumber-20-v0", 2147483644) == instance_key(
    ...     "agent_envs/GuessNumber-20-v0", 2147483640)  # both are secret 5
    True
    """
    env = _probe(env_id)
    env.reset(seed=0, options={TASK_ID: int(task_id)})
    declared = getattr(env.unwrapped, "instance_key", None)
    return declared() if callable(declared) else f"task:{int(task_id)}"


def instance_keys(env_id: str, task_ids: Iterable[int]) -> dict[int, str]:
    """Return ``{task_id: instance key}`` for ``task_ids`` of ``env_id``."""
    return {int(task_id): instance_key(env_id, int(task_id)) for task_id in task_ids}
