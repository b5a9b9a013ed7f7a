"""RLlib and TorchRL without glue: Dict/Box layouts, numpy info, masking in both libraries."""

from __future__ import annotations

import logging

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from agent_envs.env_stack import BudgetRegime
from agent_envs.integrations.common import masked_env
from wrappers import DiscreteActions, EncodeObservation, TurnBudget
from wrappers.info import NumpyInfo
from wrappers.protocol import SUCCESS, VALID_ACTION

ENV_ID = "agent_envs/FrozenLake-v0"
# FrozenLake task 5 starts in a corner: two of the four moves leave the grid.
TASK = {"task_id": 5}


def _stack(layout: str, mode: str = "chars", **kwargs) -> EncodeObservation:
    inner = DiscreteActions(TurnBudget(gym.make(ENV_ID), 8))
    return EncodeObservation(inner, mode, layout=layout, **kwargs)


@pytest.mark.parametrize("mode", ["chars", "hashing"])
def test_box_and_dict_layouts_carry_the_array_encoding(mode):
    array, box, masked = _stack("array", mode), _stack("box", mode), _stack("dict", mode)
    plain, _ = array.reset(seed=0, options=TASK)
    flat, _ = box.reset(seed=0, options=TASK)
    both, _ = masked.reset(seed=0, options=TASK)
    if mode == "chars":  # one-hot of the very indices the array layout gives
        categories = int(array.observation_space.nvec[0])
        assert np.array_equal(flat, np.eye(categories, dtype=np.float32)[plain].ravel())
    else:
        assert np.array_equal(flat, plain)
    assert np.array_equal(both["observations"], flat)
    assert both["action_mask"].dtype == np.int8
    assert both["action_mask"].tolist() == masked.action_masks().astype(int).tolist()
    assert 0 < both["action_mask"].sum() < 4
    for env in (box, masked):
        assert env.observation_space.contains(env.reset(seed=1)[0])
        check_env(env, skip_render_check=True)


def test_layout_errors_are_clear():
    with pytest.raises(ValueError, match="DiscreteActions"):
        EncodeObservation(gym.make(ENV_ID), "chars", layout="dict")
    with pytest.raises(ValueError, match="layout must be one of"):
        _stack("flat")
    with pytest.raises(ValueError, match="one-hot token ids"):
        EncodeObservation(gym.make(ENV_ID), "tokens", tokenizer=object(), layout="box")


def test_numpy_info_gives_every_scalar_a_dtype():
    env = NumpyInfo(TurnBudget(gym.make(ENV_ID), 8))
    _, info = env.reset(seed=0, options=TASK)
    _, _, _, _, info = env.step("up")
    scalars = {key: value for key, value in info.items() if not isinstance(value, (list, str))}
    assert scalars and all(hasattr(value, "dtype") for value in scalars.values())
    assert info[SUCCESS].dtype == np.bool_ and info["turn"].dtype == np.int64


def test_torchrl_reads_the_info_keys_without_specs():
    pytest.importorskip("torchrl")
    from torchrl.envs import GymWrapper, default_info_dict_reader

    env = GymWrapper(masked_env(ENV_ID, 8), categorical_action_encoding=True)
    env.set_info_dict_reader(default_info_dict_reader([SUCCESS, VALID_ACTION]))
    env.set_seed(0)
    rollout = env.rollout(4, break_when_any_done=False)
    assert rollout["next", VALID_ACTION].shape == (4,)


def _valid_moves(env, steps: int) -> list[bool]:
    env.set_seed(0)
    rollout = env.rollout(steps, break_when_any_done=False)
    return rollout["next", VALID_ACTION].tolist()


def test_torchrl_rollout_through_action_mask_plays_only_admissible_moves():
    pytest.importorskip("torchrl")
    from torchrl.envs import GymWrapper

    from agent_envs.integrations.torchrl import torchrl_env

    masked = torchrl_env(ENV_ID, 8)
    assert all(_valid_moves(masked, 64))
    # The same random actions without ActionMask leave the grid: the mask is what keeps them in.
    unmasked = GymWrapper(masked_env(ENV_ID, 8), categorical_action_encoding=True)
    unmasked.set_info_dict_reader(masked.base_env.info_dict_reader[0])
    assert not all(_valid_moves(unmasked, 64))


@pytest.fixture(scope="module")
def ray_instance():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.rllib")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=1, include_dashboard=False, logging_level=logging.WARNING)
    yield ray
    if started:
        ray.shutdown()


def test_rllib_ppo_trains_with_masking_and_acts_only_on_admissible_moves(ray_instance):
    from agent_envs.integrations.rllib import ppo_config

    config = (
        ppo_config(ENV_ID, BudgetRegime.mixed([6, 8]), encoding={"max_length": 20})
        .env_runners(num_env_runners=0)
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        for iteration in range(2):
            result = algo.train()
            assert result["env_runners"]["num_env_steps_sampled_lifetime"] == 64 * (iteration + 1)
        episodes = algo.env_runner.sample(num_timesteps=64, random_actions=False)
    finally:
        algo.stop()
    moves = [info[VALID_ACTION] for episode in episodes for info in episode.get_infos()[1:]]
    assert len(moves) >= 64 and all(moves)
