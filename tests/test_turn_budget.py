"""TurnBudget: exactly T turns, visible or hidden, per-episode overrides."""

from __future__ import annotations

import gymnasium as gym
import pytest

from wrappers import TurnBudget, budget_line

ENV_ID = "agent_envs/GuessNumber-v0"


def make(max_turns: int, visible: bool = False) -> TurnBudget:
    return TurnBudget(gym.make(ENV_ID), max_turns=max_turns, visible=visible)


@pytest.mark.parametrize("budget", [1, 2, 7, 500])
def test_never_succeeding_policy_is_truncated_at_exactly_t(budget):
    env = make(budget)
    _, info = env.reset(seed=0, options={"task_id": 3})
    assert (info["budget"], info["turn"], info["turns_left"]) == (budget, 0, budget)
    for turn in range(1, budget + 1):
        # "0" is outside 1..100: invalid, so the episode can never succeed.
        _, _, terminated, truncated, info = env.step("0")
        assert not terminated
        assert truncated is (turn == budget)
        assert (info["turn"], info["turns_left"]) == (turn, budget - turn)


def test_budget_larger_than_any_default_is_honoured():
    # Registered ids carry no TimeLimit, so a huge budget really is huge.
    env = make(5000)
    env.reset(seed=0, options={"task_id": 3})
    truncated = False
    for _ in range(4999):
        _, _, _, truncated, _ = env.step("0")
    assert not truncated
    assert env.step("0")[3] is True


def test_success_on_the_last_turn_is_terminated_not_truncated():
    base = gym.make(ENV_ID)
    base.reset(seed=0, options={"task_id": 3})
    turns = base.unwrapped.oracle_turns()
    env = make(turns)
    env.reset(seed=0, options={"task_id": 3})
    for _ in range(turns):
        action = env.unwrapped.oracle_actions()[0]
        _, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated, info["success"]) == (1.0, True, False, True)
    assert info["turns_left"] == 0


def test_visible_budget_shows_in_observation_and_hidden_does_not():
    visible, hidden = make(4, visible=True), make(4, visible=False)
    obs_v, _ = visible.reset(seed=0, options={"task_id": 1})
    obs_h, _ = hidden.reset(seed=0, options={"task_id": 1})
    assert obs_v.endswith("\n" + budget_line(4, 4))
    assert "Turns left" not in obs_h and "4" not in obs_h.splitlines()[-1]
    obs_v = visible.step("50")[0]
    obs_h = hidden.step("50")[0]
    assert obs_v.endswith(budget_line(3, 4))
    assert "Turns left" not in obs_h
    assert visible.observation_space.contains(obs_v)


def test_reset_option_sets_budget_for_one_episode_without_mutating_options():
    env = make(10)
    options = {"task_id": 2, "budget": 3}
    _, info = env.reset(seed=0, options=options)
    assert options == {"task_id": 2, "budget": 3}
    assert info["budget"] == 3 and info["task_id"] == 2
    _, info = env.reset(seed=0, options={"task_id": 2})
    assert info["budget"] == 10


def test_no_state_leaks_across_episodes():
    env = make(3)
    env.reset(seed=0, options={"task_id": 1})
    env.step("0")
    env.step("0")
    _, info = env.reset(seed=0, options={"task_id": 1})
    assert (info["turn"], info["turns_left"]) == (0, 3)


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (0, ValueError),
        (-3, ValueError),
        (2.5, TypeError),
        ("5", TypeError),
        (True, TypeError),
        (None, TypeError),
    ],
)
def test_invalid_budgets_are_rejected_with_clear_errors(bad, error):
    with pytest.raises(error, match="max_turns must be an int >= 1"):
        make(bad)
    env = make(5)
    with pytest.raises(error, match="budget"):
        env.reset(options={"budget": bad})


def test_inner_time_limit_shorter_than_budget_is_refused():
    with pytest.raises(ValueError, match="TimeLimit"):
        TurnBudget(gym.make(ENV_ID, max_episode_steps=5), max_turns=10)
    TurnBudget(gym.make(ENV_ID, max_episode_steps=10), max_turns=10)  # equal is fine
    env = TurnBudget(gym.make(ENV_ID, max_episode_steps=10), max_turns=10)
    with pytest.raises(ValueError, match="TimeLimit"):
        env.reset(options={"budget": 11})


def test_rebuilds_from_spec():
    env = make(7, visible=True)
    rebuilt = gym.make(env.spec)
    assert isinstance(rebuilt, TurnBudget)
    assert (rebuilt.max_turns, rebuilt.visible) == (7, True)
    assert rebuilt.reset(seed=1, options={"task_id": 4}) == env.reset(
        seed=1, options={"task_id": 4}
    )
