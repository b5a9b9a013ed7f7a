"""ProcessReward: potential-based shaping that telescopes along the oracle's path."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from tests.conftest import ENV_IDS, make_unwrapped
from tests.sb3_fixtures import CorridorEnv
from wrappers.budget import TurnBudget
from wrappers.reward import ProcessReward

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
def test_shaped_return_is_the_raw_return_minus_the_start_potential(env_id, gamma):
    env = ProcessReward(make_unwrapped(env_id), coef=0.25, gamma=gamma)
    for task_id in range(3):
        start, rewards, infos = _oracle_episode(env, task_id)
        assert len(rewards) == start and infos[-1]["success"]
        discounted = sum(gamma**t * reward for t, reward in enumerate(rewards))
        # The end has potential 0, so the shaping telescopes to -phi(s0) = -gamma**(n-1).
        assert math.isclose(discounted, gamma ** (start - 1) - gamma ** (start - 1), abs_tol=1e-9)


def test_each_oracle_step_earns_coef_when_undiscounted():
    env = ProcessReward(CorridorEnv(length=8), coef=0.5, gamma=1.0)
    start, rewards, infos = _oracle_episode(env, task_id=4)
    assert start >= 2
    assert [info["process_reward"] for info in infos[:-1]] == [0.5] * (len(rewards) - 1)
    # The last step cashes the potential in: 1 (success) - (1 + 0.5 * (start - 1)).
    assert rewards[-1] == pytest.approx(-0.5 * (start - 1))


def test_a_step_away_and_an_invalid_step_cost():
    env = ProcessReward(CorridorEnv(length=8), coef=0.5, gamma=1.0)
    for task_id in range(50):
        env.reset(seed=0, options={"task_id": task_id})
        away = "left" if env.unwrapped.oracle_actions() == ["right"] else "right"
        if away in env.unwrapped.admissible_actions() and env.unwrapped.oracle_turns() >= 3:
            break
    _, reward, *_ = env.step(away)
    assert reward == 0.0  # beyond the start distance the coef term stays 0
    env.step(env.unwrapped.oracle_actions()[0])
    _, reward, *_ = env.step(env.unwrapped.oracle_actions()[0])
    assert reward == 0.5
    _, reward, *_ = env.step(away)
    assert reward == -0.5
    discounted = ProcessReward(CorridorEnv(length=8), coef=0.5, gamma=0.9)
    discounted.reset(seed=0, options={"task_id": task_id})
    _, reward, *_, info = discounted.step("jump")
    assert not info["valid_action"] and reward < 0.0


def _random_walk_cycles(env: ProcessReward, seed: int, steps: int):
    """Yield (discounted shaped return, length) of every loop back to an earlier state."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed, options={"task_id": seed})
    history = [(env.unwrapped._position, 0.0)]  # state and discounted return so far
    total, discount = 0.0, 1.0
    for _ in range(steps):
        actions = env.unwrapped.admissible_actions()
        if not actions:
            return
        _, reward, terminated, truncated, _ = env.step(actions[rng.integers(len(actions))])
        total += discount * float(reward)
        discount *= env.gamma
        if terminated or truncated:
            return
        state = env.unwrapped._position
        for index, (earlier, earlier_total) in enumerate(history):
            if earlier == state:
                length = len(history) - index
                # Return of the loop, discounted from its own first step.
                yield (total - earlier_total) / env.gamma**index, length
        history.append((state, total))


@pytest.mark.parametrize("env_id", ["agent_envs/FrozenLake-8x8-v0", "agent_envs/Maze-7x7-v0"])
@pytest.mark.parametrize("gamma", [1.0, 0.99, 0.9])
def test_no_cycle_of_moves_gains_shaped_return(env_id, gamma):
    env = ProcessReward(make_unwrapped(env_id), coef=0.3, gamma=gamma)
    loops = 0
    for seed in range(40):
        for value, _length in _random_walk_cycles(env, seed, steps=60):
            assert value <= 1e-12
            loops += 1
    assert loops > 30


@pytest.mark.parametrize("gamma", [1.0, 0.99])
@pytest.mark.parametrize("coef", [0.0, 0.3, 1.0])
def test_stepping_into_a_hole_never_beats_reaching_the_goal(gamma, coef):
    env = ProcessReward(make_unwrapped("agent_envs/FrozenLake-8x8-v0"), coef=coef, gamma=gamma)
    checked = 0
    for task_id in range(40):
        env.reset(seed=0, options={"task_id": task_id})
        base = env.unwrapped
        # Walk the oracle path; wherever a hole is next to it, compare jumping in
        # now with finishing the path.
        while base.oracle_turns():
            state = base._position
            for move in base.admissible_actions():
                probe = ProcessReward(make_unwrapped("agent_envs/FrozenLake-8x8-v0"), coef, gamma)
                probe.reset(seed=0, options={"task_id": task_id})
                probe.unwrapped._position, probe._potential = state, env._potential
                _, hole, terminated, _, info = probe.step(move)
                if not info["dead_end"]:
                    continue
                finish, discount = 0.0, 1.0
                probe.reset(seed=0, options={"task_id": task_id})
                probe.unwrapped._position, probe._potential = state, env._potential
                while True:
                    _, reward, terminated, _, info = probe.step(probe.unwrapped.oracle_actions()[0])
                    finish += discount * float(reward)
                    discount *= gamma
                    if terminated:
                        break
                assert info["success"]
                # A hole costs at least what the quickest success is still worth.
                assert hole <= -(gamma ** (base.oracle_turns() - 1)) + 1e-12
                assert hole < finish
                checked += 1
            env.step(base.oracle_actions()[0])
    assert checked > 10


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


def test_staying_in_a_dead_end_costs_nothing_more():
    env = ProcessReward(_StuckCorridor(length=6, hole=True), coef=1.0, gamma=1.0)
    _start_next_to_the_hole(env)
    _, reward, terminated, _, info = env.step("left")
    assert not terminated and info["dead_end"] and reward == -1.0
    for _ in range(3):
        _, reward, *_ = env.step("right")
        assert reward == 0.0


def test_truncation_ends_with_potential_zero_unless_asked_not_to():
    for terminal, expected in ((True, -1.0), (False, 0.0)):
        env = ProcessReward(
            TurnBudget(CorridorEnv(length=8), 1),
            coef=1.0,
            gamma=1.0,
            truncation_is_terminal=terminal,
        )
        env.reset(seed=0, options={"task_id": 4})
        _, reward, terminated, truncated, _ = env.step("jump")
        assert truncated and not terminated and reward == expected


def test_no_state_leaks_from_one_episode_to_the_next():
    env = ProcessReward(TurnBudget(CorridorEnv(length=8), 3), coef=1.0, gamma=1.0)
    env.reset(seed=0, options={"task_id": 1})
    for _ in range(3):
        env.step("jump")
    _, info = env.reset(seed=0, options={"task_id": 2})
    start = info["oracle_turns"]
    _, reward, *_ = env.step(env.unwrapped.oracle_actions()[0])
    assert reward == (1.0 if start > 1 else 0.0)
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
        ({"coef": float("nan")}, "coef must be a number >= 0"),
        ({"coef": "0.1"}, "coef must be a number >= 0"),
        ({"coef": -0.1}, "coef must be a number >= 0"),
        ({"gamma": 0.0}, r"gamma must be a number in \(0, 1\]"),
        ({"gamma": 1.5}, r"gamma must be a number in \(0, 1\]"),
        ({"truncation_is_terminal": 1}, "truncation_is_terminal must be a bool"),
    ],
)
def test_bad_arguments_raise_clear_errors(arguments, message):
    # A wrong type is a TypeError, a bad value a ValueError (wrappers.utils.validators).
    with pytest.raises((TypeError, ValueError), match=message):
        ProcessReward(CorridorEnv(), **arguments)


def test_env_without_an_oracle_is_refused():
    with pytest.raises(ValueError, match="no oracle_turns"):
        ProcessReward(gym.make("CartPole-v1"))
