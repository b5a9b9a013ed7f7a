"""NumpyInfo: give the scalar info values numpy types, for readers that ask for ``.dtype``.

TorchRL's ``default_info_dict_reader`` builds its specs from ``value.dtype``,
so a Python ``bool`` such as ``info["success"]`` stops it.  The envs keep
Python scalars (JSON logs and ``is True`` checks rely on them); this wrapper
converts them at the edge, for the libraries that need it.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from wrappers.action import expose_action_masks

__all__ = ["NumpyInfo", "numpy_info"]


def numpy_info(info: dict[str, Any]) -> dict[str, Any]:
    """Return ``info`` with each ``bool``/``int``/``float`` value as a numpy scalar.

    Other values (strings, lists, arrays) are kept as they are.

    >>> from wrappers.numpy_info import numpy_info
    >>> converted = numpy_info({"success": True, "turn": 3, "task_id": 7, "note": "hi"})
    >>> [type(value).__name__ for value in converted.values()]
    ['bool', 'int64', 'int64', 'str']
    """
    converted = dict(info)
    for key, value in info.items():
        if isinstance(value, (bool, np.bool_)):
            converted[key] = np.bool_(value)
        elif isinstance(value, int):
            converted[key] = np.int64(value)
        elif isinstance(value, float):
            converted[key] = np.float64(value)
    return converted


class NumpyInfo(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Apply :func:`numpy_info` to the info of every ``reset`` and ``step``.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers.numpy_info import NumpyInfo
        >>> env = NumpyInfo(gym.make("agent_envs/GuessNumber-v0"))
        >>> _, info = env.reset(seed=0, options={"task_id": 0})
        >>> info["success"].dtype
        dtype('bool')
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        expose_action_masks(self)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        return observation, numpy_info(info)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated, numpy_info(info)
