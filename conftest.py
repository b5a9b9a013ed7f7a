"""Doctest setup for the whole repository.

The examples in ``wrappers`` use the registered ``agent_envs/`` ids, but the
``wrappers`` package must never import ``agent_envs`` (the layering test checks
its doctests too), so the ids are registered here, once, for every doctest.
"""

from __future__ import annotations

import gymnasium as gym

import agent_envs

gym.register_envs(agent_envs)
