"""ProcessReward: potential-based shaping that telescopes along the oracle's path."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from tests.conftest import ENV_IDS, make_unwrapped
from tests.sb3_fixtures import CorridorEnv
from wrappers.process_reward import ProcessReward
from wrappers.turn_budget import TurnBudget

# A few families with exact oracles; the conformance suite checks every id's oracle itself.
SHAPED_IDS = [
    env_id
    for env_id in (
        "agent_envs/GuessNumber-v0",
        "agent_envs/FrozenLake-8x8-v0",
        "agent_envs/Maze-7x7-v0",
        "agent_envs/Hanoi-3-v0",
    )
    if env_id in ENV_IDS
]


def _oracle_episode(env: ProcessReward, task_id: int) -> tuple[int, list[float], list[dict]]:
    """Play the oracle from reset; return its start distance, the rewards and the infos."""
    _, info = env.reset(seed=0, options={"task_id": task_id})
    start = info["oracle_turns"]
    rewards, infos = [], []
    terminated = False
    while not terminated:
        _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_actions()[0])
        assert not truncated
        rewards.append(float(reward))
        infos.append(info)
    return start, rewards, infos


@pytest.mark.parametrize("env_id", SHAPED_IDS)
@pytest.mark.parametrize("gamma", [1.0, 0.9])
def test_shaped_return_telescopes_along_the_oracle_path(env_id, gamma):
    coef = 0.25
    env = ProcessReward(make_unwrapped(env_id), coef=coef, gamma=gamma)
    for task_id in range(3):
        start, rewards, infos = _oracle_episode(env, task_id)
        assert len(rewards) == start and infos[-1]["success"]
        discounted = sum(gamma**t * reward for t, reward in enumerate(rewards))
        # Success reward gamma**(n-1), plus coef * (gamma**n * phi(goal) - phi(s0)).
        assert math.isclose(discounted, gamma ** (start - 1) + coef * start, rel_tol=1e-9)


def test_each_oracle_step_earns_coef_when_undiscounted():
    env = ProcessReward(CorridorEnv(length=8), coef=0.5, gamma=1.0)
    _, rewards, infos = _oracle_episode(env, task_id=4)
    assert [info["process_reward"] for info in infos] == [0.5] * len(rewards)
    # The env's own success reward is passed through unchanged.
    assert rewards[-1] == 1.5 and all(reward == 0.5 for reward in rewards[:-1])


def test_a_step_away_costs_coef_and_an_invalid_step_costs_nothing():
    env = ProcessReward(CorridorEnv(length=8), coef=0.5, gamma=1.0)
    for task_id in range(50):
        env.reset(seed=0, options={"task_id": task_id})
        away = "left" if env.unwrapped.oracle_actions() == ["right"] else "right"
        if away in env.unwrapped.admissible_actions():
            break
    _, reward, *_ = env.step(away)
    assert reward == -0.5
    _, reward, *_, info = env.step("jump")
    assert not info["valid_action"] and reward == 0.0


class _StuckCorridor(CorridorEnv):
    """The hole does not end the episode: the agent is stuck there (a lasting dead end)."""

    def _is_failure(self) -> bool:
        return False

    def _is_dead_end(self) -> bool:
        return self._position == 0

    def _apply(self, move: int) -> tuple[str, bool]:
        if self._position == 0:
            return "You are stuck in the hole.", False
        return super()._apply(move)

    def oracle_turns(self) -> int | None:
        return None if self._position == 0 else super().oracle_turns()


def _start_next_to_the_hole(env: ProcessReward) -> int:
    for task_id in range(50):
        _, info = env.reset(seed=0, options={"task_id": task_id})
        if env.unwrapped._position == 1:
            return info["oracle_turns"]
    raise AssertionError("no task starts next to the hole")


def test_entering_a_dead_end_costs_one_turn_of_potential():
    env = ProcessReward(CorridorEnv(length=6, hole=True), coef=1.0, gamma=0.9)
    start = _start_next_to_the_hole(env)
    _, reward, terminated, _, info = env.step("left")  # into the hole at cell 0
    assert terminated and info["dead_end"] and info["oracle_turns"] is None
    # phi(s) = -start; phi(dead end) = phi(s) - 1.
    assert math.isclose(reward, 0.9 * -(start + 1) + start)
    assert reward < 0


def test_staying_in_a_dead_end_costs_nothing_more():
    env = ProcessReward(_StuckCorridor(length=6, hole=True), coef=1.0, gamma=1.0)
    _start_next_to_the_hole(env)
    _, reward, terminated, _, info = env.step("left")
    assert not terminated and info["dead_end"] and reward == -1.0
    for _ in range(3):
        _, reward, *_ = env.step("right")
        assert reward == 0.0


def test_dead_end_turns_can_be_set():
    env = ProcessReward(CorridorEnv(length=6, hole=True), coef=1.0, gamma=1.0, dead_end_turns=100)
    start = _start_next_to_the_hole(env)
    _, reward, *_ = env.step("left")
    assert reward == -100 + start


def test_no_state_leaks_from_one_episode_to_the_next():
    env = ProcessReward(TurnBudget(CorridorEnv(length=8), 3), coef=1.0, gamma=1.0)
    env.reset(seed=0, options={"task_id": 1})
    for _ in range(3):
        env.step("jump")
    _, info = env.reset(seed=0, options={"task_id": 2})
    _, reward, *_ = env.step(env.unwrapped.oracle_actions()[0])
    assert reward == 1.0 or reward == 2.0  # one step closer (or success on the first step)
    assert info["process_reward"] == 0.0


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_passes(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version")
        check_env(ProcessReward(make_unwrapped(env_id)), skip_render_check=True)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"coef": float("nan")}, "coef must be a finite number"),
        ({"coef": "0.1"}, "coef must be a finite number"),
        ({"gamma": 0.0}, r"gamma must be a number in \(0, 1\]"),
        ({"gamma": 1.5}, r"gamma must be a number in \(0, 1\]"),
        ({"dead_end_turns": -1}, "dead_end_turns must be"),
    ],
)
def test_bad_arguments_raise_clear_errors(arguments, message):
    # A wrong type is a TypeError, a bad value a ValueError (wrappers.validators).
    with pytest.raises((TypeError, ValueError), match=message):
        ProcessReward(CorridorEnv(), **arguments)


def test_env_without_an_oracle_is_refused():
    with pytest.raises(ValueError, match="no oracle_turns"):
        ProcessReward(gym.make("CartPole-v1"))
