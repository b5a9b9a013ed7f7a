"""Shared fixtures: every registered id, and a seeded action stream."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import settings

import agent_envs

gym.register_envs(agent_envs)

ENV_IDS = agent_envs.env_ids()

# Fuzzing must be deterministic: derandomised examples, no example database,
# and no wall-clock deadline.
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
settings.load_profile("deterministic")

JUNK_ACTIONS = (
    "",
    "   ",
    "Action:",
    "hello world",
    "UP UP UP",
    "take everything",
    "search[]",
    "click[",
    "\x00\x01\x7f",
    "ünïcødé ✓",
    "9" * 40,
    "-5",
)


def make_unwrapped(env_id: str):
    """Build the bare env behind an id (no checker or order wrappers)."""
    return gym.make(env_id).unwrapped


def action_stream(env, rng: np.random.Generator, length: int, junk_every: int = 4):
    """Yield actions for ``env``: mostly admissible ones, with junk mixed in."""
    for index in range(length):
        if index % junk_every == junk_every - 1:
            yield JUNK_ACTIONS[int(rng.integers(len(JUNK_ACTIONS)))]
        else:
            legal = env.admissible_actions()
            yield legal[int(rng.integers(len(legal)))] if legal else "look"


@pytest.fixture(params=ENV_IDS)
def env_id(request) -> str:
    return request.param
