"""DiscreteActions: indices map to vocabulary text, masks match admissible_actions()."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from tests.conftest import ENV_IDS, make_unwrapped
from tests.sb3_fixtures import CorridorEnv
from wrappers.action import DiscreteActions, action_key
from wrappers.budget import TurnBudget

VOCABULARY_IDS = [env_id for env_id in ENV_IDS if make_unwrapped(env_id).action_vocabulary]


class _OpenEnv(CorridorEnv):
    action_vocabulary = None


class _ClashingEnv(CorridorEnv):
    action_vocabulary = ("left", "LEFT ")


def _check_env_quietly(env: gym.Env) -> None:
    """Run check_env with warnings as errors, except the one about checking a wrapper."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version")
        check_env(env, skip_render_check=True)


def test_action_space_and_mapping():
    env = DiscreteActions(CorridorEnv())
    assert env.action_space == gym.spaces.Discrete(3)
    assert [env.action_text(i) for i in range(3)] == ["left", "right", "wait"]
    assert env.index_of("  RIGHT ") == 1
    assert env.index_of("jump") is None


def test_index_reaches_the_env_as_text():
    env = DiscreteActions(CorridorEnv())
    env.reset(seed=0, options={"task_id": 3})
    start = env.unwrapped._position
    # Both directions from the start; at most one of them bumps into a wall.
    _, _, _, _, info = env.step(np.int64(1))
    moved = env.unwrapped._position - start
    assert (info["valid_action"], moved) in ((True, 1), (False, 0))


@pytest.mark.parametrize("action", [0, np.int32(1), np.array(2), np.array([0])])
def test_integer_like_actions_play_the_move_their_index_names(action):
    by_index, by_text = DiscreteActions(CorridorEnv()), CorridorEnv()
    by_index.reset(seed=0, options={"task_id": 0})
    by_text.reset(seed=0, options={"task_id": 0})
    text = ["left", "right", "wait"][int(np.asarray(action).item())]
    assert by_index.step(action) == by_text.step(text)


@pytest.mark.parametrize(
    ("action", "error"),
    [(3, ValueError), (-1, ValueError), ("left", TypeError), (1.0, TypeError), (True, TypeError)],
)
def test_bad_indices_raise_clear_errors(action, error):
    env = DiscreteActions(CorridorEnv())
    env.reset(seed=0, options={"task_id": 0})
    with pytest.raises(error, match=r"index|Discrete"):
        env.step(action)


def test_env_without_vocabulary_is_refused():
    with pytest.raises(ValueError, match="no action_vocabulary"):
        DiscreteActions(_OpenEnv())


def test_vocabulary_whose_actions_clash_is_refused():
    with pytest.raises(ValueError, match="differ only in case"):
        DiscreteActions(_ClashingEnv())


def test_vocabulary_is_found_through_other_wrappers():
    env = DiscreteActions(TurnBudget(gym.make("agent_envs/GuessNumber-v0"), 5))
    assert env.action_space.n == 100


def test_mask_marks_exactly_the_admissible_actions_on_the_corridor():
    env = DiscreteActions(CorridorEnv())
    env.reset(seed=0, options={"task_id": 5})
    env.unwrapped._position = 0
    assert env.action_masks().tolist() == [False, True, False]
    env.unwrapped._position = 3
    assert env.action_masks().tolist() == [True, True, False]


@pytest.mark.parametrize("env_id", VOCABULARY_IDS)
def test_masks_match_admissible_actions_along_a_rollout(env_id):
    env = DiscreteActions(make_unwrapped(env_id))
    rng = np.random.default_rng(0)
    env.reset(seed=1, options={"task_id": 2})
    for _ in range(40):
        mask = env.action_masks()
        assert mask.dtype == bool and mask.shape == (env.action_space.n,)
        admissible = {action_key(action) for action in env.unwrapped.admissible_actions()}
        # An env may admit more than its vocabulary (Wordle admits every allowed guess);
        # the mask covers the vocabulary's share of the admissible actions.
        expected = admissible & {action_key(action) for action in env.vocabulary}
        assert expected, "a vocabulary env should always admit some vocabulary action"
        assert {action_key(env.action_text(i)) for i in np.flatnonzero(mask)} == expected
        action = int(rng.choice(np.flatnonzero(mask)))
        _, _, terminated, truncated, info = env.step(action)
        assert info["valid_action"]  # a masked choice is always legal
        if terminated or truncated:
            env.reset(seed=1, options={"task_id": 3})


@pytest.mark.parametrize("env_id", VOCABULARY_IDS)
def test_check_env_passes(env_id):
    _check_env_quietly(DiscreteActions(make_unwrapped(env_id)))


def test_importing_the_wrappers_never_imports_torch():
    code = (
        "import sys, wrappers.action, wrappers.observation, "
        "wrappers.reward; "
        "assert not {'torch', 'transformers', 'stable_baselines3'} & set(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


class _NoAdmissibleEnv(CorridorEnv):
    admissible_actions = None  # not the AdmissibleActions API


def test_masks_need_the_admissible_actions_api():
    env = DiscreteActions(_NoAdmissibleEnv())
    env.reset(seed=0)
    with pytest.raises(ValueError, match="AdmissibleActions API"):
        env.action_masks()
