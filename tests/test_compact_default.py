"""Where an env declares ``compact_view()``, every encoding uses it by default.

The whole text stays one argument away (``whole_text=True``), and a setting the
user gives is used as given.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import agent_envs  # noqa: F401  (registers the ids)
from agent_envs.integrations.common import masked_env
from agent_envs.integrations.rllib import env_creator
from wrappers import DiscreteActions, EncodeObservation, TextEncoder, TurnBudget

LAKE = "agent_envs/FrozenLake-v0"
#: FrozenLake 4x4's compact view: 31 characters of the map, 5 symbols + padding + unknown.
COMPACT_INPUTS, WHOLE_INPUTS = 31 * 7, 256 * 98


def _one_hot_inputs(env: gym.Env) -> int:
    space = env.observation_space
    return int(space.nvec.sum()) if isinstance(space, gym.spaces.MultiDiscrete) else space.shape[0]


def test_the_default_encoding_is_the_compact_view_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = EncodeObservation(DiscreteActions(TurnBudget(gym.make(LAKE), 8)))
    assert _one_hot_inputs(env) == COMPACT_INPUTS
    assert env.encoder_config() == {"mode": "chars", **gym.make(LAKE).unwrapped.compact_view()}
    observation, _ = env.reset(seed=0, options={"task_id": 3})
    text, _ = gym.make(LAKE).reset(seed=0, options={"task_id": 3})
    compact = TextEncoder("chars", **gym.make(LAKE).unwrapped.compact_view())
    assert np.array_equal(observation, compact.encode(text))
    assert set(compact.select(text)) <= set("FHSG@ \n")  # the map alone


def test_the_whole_text_is_one_argument_away_and_unchanged():
    whole = EncodeObservation(gym.make(LAKE), whole_text=True)
    chosen = EncodeObservation(gym.make(LAKE), max_length=20)
    assert _one_hot_inputs(whole) == WHOLE_INPUTS
    assert whole.encoder_config()["max_length"] == 256 and not whole.encoder_config()["view_only"]
    assert chosen.encoder_config()["max_length"] == 20  # a given setting is used as given


def test_a_rebuilt_stack_encodes_the_same_arrays():
    env = EncodeObservation(gym.make(LAKE))
    rebuilt = gym.make(env.spec)
    first, _ = env.reset(seed=0, options={"task_id": 7})
    second, _ = rebuilt.reset(seed=0, options={"task_id": 7})
    assert np.array_equal(first, second) and first.shape == (31,)


def test_an_env_without_a_compact_view_is_encoded_whole():
    env = EncodeObservation(gym.make("agent_envs/WebShop-v0"))
    assert env.encoder_config()["max_length"] == 256


@pytest.mark.parametrize("layout", ["box", "dict"])
def test_box_and_dict_layouts_use_the_compact_view(layout):
    env = EncodeObservation(DiscreteActions(gym.make(LAKE)), layout=layout)
    space = env.observation_space["observations"] if layout == "dict" else env.observation_space
    assert space.shape == (COMPACT_INPUTS,)


def test_the_adapters_use_the_compact_view_by_default():
    assert masked_env(LAKE, 8).observation_space["observations"].shape == (COMPACT_INPUTS,)
    rllib = env_creator({"env_id": LAKE, "budget": 8})
    assert rllib.observation_space["observations"].shape == (COMPACT_INPUTS,)
    whole = masked_env(LAKE, 8, encoding={"whole_text": True})
    assert whole.observation_space["observations"].shape == (WHOLE_INPUTS,)


def test_torchrl_env_uses_the_compact_view_by_default():
    pytest.importorskip("torchrl")
    from agent_envs.integrations.torchrl import torchrl_env

    env = torchrl_env(LAKE, 8)
    assert env.observation_spec["observations"].shape[-1] == COMPACT_INPUTS
