"""Vector envs never blank a text observation; sb3-contrib's ActionMasker idiom works."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from wrappers import (
    BudgetMix,
    DiscreteActions,
    EncodeObservation,
    TruncationIsTerminal,
    TurnBudget,
)
from wrappers.utils.text_space import SHARED_MEMORY_ERROR, TextSpace

ENV_ID = "agent_envs/FrozenLake-v0"


def _text_env():
    return TurnBudget(gym.make(ENV_ID), 8, visible=True)


@pytest.mark.parametrize("make_env", [lambda: gym.make(ENV_ID), _text_env])
def test_shared_memory_async_vector_env_is_refused_with_the_fix(make_env):
    with pytest.raises(ValueError, match="shared_memory=False") as caught:
        gym.vector.AsyncVectorEnv([make_env, make_env])
    assert str(caught.value.__cause__) == SHARED_MEMORY_ERROR


def test_make_vec_async_default_is_refused_and_the_named_fix_works():
    with pytest.raises(ValueError, match="shared_memory"):
        gym.make_vec(ENV_ID, 2, vectorization_mode="async")
    no_shared = {"shared_memory": False}
    envs = gym.make_vec(ENV_ID, 2, vectorization_mode="async", vector_kwargs=no_shared)
    try:
        observations, _ = envs.reset(seed=0, options={"task_id": 3})
    finally:
        envs.close()
    expected, _ = gym.make(ENV_ID).reset(seed=0, options={"task_id": 3})
    assert list(observations) == [expected, expected]
    assert expected.strip()  # a real observation, not a blank one


def test_text_spaces_of_envs_and_text_wrappers_are_text_spaces():
    assert isinstance(gym.make(ENV_ID).observation_space, TextSpace)
    assert isinstance(_text_env().observation_space, TextSpace)
    space = _text_env().observation_space
    assert isinstance(space, gym.spaces.Text) and space.contains("F@G")


def _masked_stack(outer):
    return outer(EncodeObservation(DiscreteActions(BudgetMix(gym.make(ENV_ID), [6, 8])), "chars"))


@pytest.mark.parametrize("outer", [lambda env: env, TruncationIsTerminal])
def test_action_masker_idiom_reaches_the_masks(outer):
    from sb3_contrib.common.wrappers import ActionMasker

    env = ActionMasker(_masked_stack(outer), lambda e: e.action_masks())
    env.reset(seed=0, options={"task_id": 5})
    inner = env.unwrapped  # the text env: its admissible moves are what the mask must show
    vocabulary = env.get_wrapper_attr("vocabulary")
    expected = [action in inner.admissible_actions() for action in vocabulary]
    assert env.action_masks().tolist() == expected
    assert not all(expected)  # on this task some move leaves the grid: a real mask


def test_maskable_ppo_trains_through_action_masker():
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.wrappers import ActionMasker

    env = ActionMasker(_masked_stack(TruncationIsTerminal), lambda e: e.action_masks())
    model = MaskablePPO("MlpPolicy", env, n_steps=32, batch_size=16, n_epochs=1, seed=0)
    model.learn(64)
    observation, _ = env.reset(seed=1, options={"task_id": 5})
    action, _ = model.predict(observation, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[int(action)]


def test_no_masks_below_means_no_action_masks_attribute():
    env = TruncationIsTerminal(EncodeObservation(TurnBudget(gym.make(ENV_ID), 8), "hashing"))
    assert not hasattr(env, "action_masks")
    assert np.asarray(env.reset(seed=0)[0]).shape == (1024,)
