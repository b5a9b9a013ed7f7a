"""ShowActions: the admissible actions appended to every observation, inside the space."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import agent_envs
from agent_envs.core import CHARSET, TextEnv
from wrappers.observation import DEFAULT_MAX_CHARS, ShowActions

ENV_IDS = agent_envs.env_ids()


def last_line(observation: str) -> str:
    return observation.splitlines()[-1]


def test_lists_the_admissible_actions_after_a_blank_line():
    env = ShowActions(gym.make("agent_envs/GuessNumber-v0", max_number=5))
    bare = gym.make("agent_envs/GuessNumber-v0", max_number=5)
    observation, _ = env.reset(seed=0, options={"task_id": 0})
    expected, _ = bare.reset(seed=0, options={"task_id": 0})
    assert observation == f"{expected}\n\nAdmissible actions: 1, 2, 3, 4, 5"
    observation, *_ = env.step("3")
    expected, *_ = bare.step("3")
    assert observation == f"{expected}\n\nAdmissible actions: 1, 2, 3, 4, 5"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_observation_stays_inside_the_space(env_id):
    env = ShowActions(gym.make(env_id))
    base = env.unwrapped
    rng = np.random.default_rng(0)
    for task_id in range(3):
        observation, _ = env.reset(seed=task_id, options={"task_id": task_id})
        assert env.observation_space.contains(observation)
        for _ in range(15):
            shown = base.admissible_actions()
            assert last_line(observation).startswith("Admissible actions: ")
            legal = shown or ["look"]
            observation, _, terminated, truncated, _ = env.step(legal[rng.integers(len(legal))])
            assert env.observation_space.contains(observation), env_id
            if terminated or truncated:
                break


def test_a_finite_vocabulary_is_never_cut_by_default():
    env = ShowActions(gym.make("agent_envs/GuessNumber-1000-v0"))
    observation, _ = env.reset(seed=0, options={"task_id": 0})
    listed = last_line(observation).removeprefix("Admissible actions: ").split(", ")
    assert listed == [str(n) for n in range(1, 1001)]
    assert env.observation_space.contains(observation)


def test_a_long_list_is_cut_at_whole_actions_with_a_count():
    env = ShowActions(gym.make("agent_envs/GuessNumber-v0"), max_chars=10)
    observation, _ = env.reset(seed=0, options={"task_id": 0})
    assert last_line(observation) == "Admissible actions: 1, 2, 3, 4, ... (96 more)"
    assert env.observation_space.contains(observation)


def test_the_space_grows_by_exactly_the_room_the_line_can_take():
    inner = gym.make("agent_envs/GuessNumber-v0")
    env = ShowActions(inner, max_chars=10)
    header = len("\n\nAdmissible actions: ")
    more = len(f"... ({10**12} more)")
    assert env.observation_space.max_length == (
        inner.observation_space.max_length + header + 10 + len(", ") + more
    )
    assert env.observation_space.character_set == inner.observation_space.character_set


class _OddActions(TextEnv[int]):
    """An env whose admissible actions hold characters outside the charset, or none."""

    def __init__(self, actions):
        self.actions = actions
        super().__init__()

    def _make_task(self, task_id, rng):
        return 0

    def _start(self, task):
        pass

    def _intro(self):
        return "Odd env."

    def _view(self):
        return "Nothing here."

    def _parse(self, action):
        return None

    def _is_success(self):
        return False

    def admissible_actions(self):
        return list(self.actions)


def test_characters_outside_the_charset_become_question_marks():
    env = ShowActions(_OddActions(["café", "two\nlines", "ok"]))
    observation, _ = env.reset(seed=0)
    assert last_line(observation) == "Admissible actions: caf?, two?lines, ok"
    assert set(observation) <= set(CHARSET)
    assert env.observation_space.contains(observation)


def test_no_admissible_action_says_none():
    env = ShowActions(_OddActions([]))
    observation, _ = env.reset(seed=0)
    assert last_line(observation) == "Admissible actions: (none)"


def test_without_a_vocabulary_the_default_limit_applies():
    env = ShowActions(_OddActions(["x" * 50] * 200))
    assert env.max_chars == DEFAULT_MAX_CHARS
    observation, _ = env.reset(seed=0)
    assert last_line(observation).endswith("more)")
    assert env.observation_space.contains(observation)


def test_custom_separator():
    env = ShowActions(gym.make("agent_envs/GuessNumber-v0", max_number=3), separator=" | ")
    observation, _ = env.reset(seed=0, options={"task_id": 0})
    assert last_line(observation) == "Admissible actions: 1 | 2 | 3"


def test_rebuilds_from_spec():
    env = ShowActions(gym.make("agent_envs/GuessNumber-v0"), max_chars=20)
    rebuilt = gym.make(env.spec)
    assert isinstance(rebuilt, ShowActions) and rebuilt.max_chars == 20


class _NoActionApi(gym.Env):
    observation_space = spaces.Text(10)
    action_space = spaces.Text(10)


@pytest.mark.parametrize(
    ("make", "kwargs", "error"),
    [
        (lambda: _NoActionApi(), {}, ValueError),
        (lambda: gym.make("agent_envs/GuessNumber-v0"), {"separator": ""}, ValueError),
        (lambda: gym.make("agent_envs/GuessNumber-v0"), {"separator": "\t"}, ValueError),
        (lambda: gym.make("agent_envs/GuessNumber-v0"), {"max_chars": 0}, ValueError),
        (lambda: gym.make("agent_envs/GuessNumber-v0"), {"max_chars": True}, TypeError),
        (lambda: gym.make("agent_envs/GuessNumber-v0"), {"max_chars": 5.5}, TypeError),
    ],
)
def test_bad_arguments_fail_clearly(make, kwargs, error):
    with pytest.raises(error):
        ShowActions(make(), **kwargs)
