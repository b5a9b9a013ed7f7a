"""ImageObservation: the env's ``rgb_array`` frame beside the text, for vision-language agents."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from wrappers.action import expose_action_masks

__all__ = ["IMAGE", "TEXT", "ImageObservation"]

#: The keys of the observation dict.
TEXT, IMAGE = "text", "image"


class ImageObservation(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Make each observation ``{"text": <the text>, "image": <render()>}``.

    The env must be made with ``render_mode="rgb_array"`` and draw frames of a
    fixed shape, which its unwrapped env's ``image_shape()`` gives; the space
    becomes ``Dict(text=<the inner space>, image=Box(0, 255, shape, uint8))``.
    The frame is taken after each ``reset`` and ``step``, so it shows the
    state the text describes.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers.image_observation import ImageObservation
        >>> env = ImageObservation(gym.make("agent_envs/Sokoban-v0", render_mode="rgb_array"))
        >>> observation, _ = env.reset(seed=0, options={"task_id": 0})
        >>> observation["image"].shape, observation["image"].dtype, observation["text"][:7]
        ((96, 96, 3), dtype('uint8'), 'Sokoban')
    """

    def __init__(self, env: gym.Env) -> None:
        if env.render_mode != "rgb_array":
            raise ValueError(
                "ImageObservation needs an env made with render_mode='rgb_array', got "
                f"{env.render_mode!r}."
            )
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        expose_action_masks(self)
        shape = tuple(env.unwrapped.image_shape())
        self.observation_space = spaces.Dict(
            {TEXT: env.observation_space, IMAGE: spaces.Box(0, 255, shape, dtype=np.uint8)}
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        text, info = self.env.reset(seed=seed, options=options)
        return {TEXT: text, IMAGE: self.env.render()}, info

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        text, reward, terminated, truncated, info = self.env.step(action)
        return {TEXT: text, IMAGE: self.env.render()}, reward, terminated, truncated, info
