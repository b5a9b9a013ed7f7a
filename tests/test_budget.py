"""wrappers.budget: the one owner of an env stack's turn budget."""

from __future__ import annotations

import pathlib
import re
import warnings

import gymnasium as gym
import pytest

import agent_envs  # noqa: F401  (registers the ids)
from wrappers import BudgetMix, ChatHistory, TurnBudget
from wrappers.budget import find_budget, resolve_budget, time_limit_steps
from wrappers.protocol import BUDGET, TURN, TURNS_LEFT

GUESS = "agent_envs/GuessNumber-v0"
ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_time_limit_steps_reads_gymnasium():
    # The one read of a private Gymnasium attribute: this fails first if a
    # Gymnasium release renames TimeLimit._max_episode_steps.
    limited = gym.wrappers.TimeLimit(gym.make(GUESS).unwrapped, max_episode_steps=7)
    assert hasattr(limited, "_max_episode_steps")
    assert time_limit_steps(limited) == 7
    assert time_limit_steps(gym.make(GUESS, max_episode_steps=4)) == 4


def test_no_other_module_reads_a_private_gymnasium_attribute():
    pattern = re.compile(r"\._max_episode_steps\b|\._elapsed_steps\b")
    readers = [
        path.relative_to(ROOT).as_posix()
        for package in ("agent_envs", "wrappers", "baselines")
        for path in (ROOT / package).rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert readers == ["wrappers/budget.py"]


def test_no_module_but_the_owner_walks_a_stack_for_budgets():
    # Walking env.env looking for TurnBudget is resolve_budget's job alone.
    pattern = re.compile(r"isinstance\([^)]*,\s*\(?\s*(TurnBudget|BudgetMix)\b")
    walkers = sorted(
        path.relative_to(ROOT).as_posix()
        for package in ("agent_envs", "wrappers", "baselines")
        for path in (ROOT / package).rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    )
    # The owner is found too: the pattern sees a walk where there is one.
    assert walkers == ["wrappers/budget.py"]


def test_a_stack_without_a_budget_gets_one_on_top():
    env = resolve_budget(gym.make(GUESS), 20, visible=True)
    assert isinstance(env, TurnBudget) and find_budget(env) is env
    assert env.visible and env.max_turns == 20
    observation, info = env.reset(seed=0, options={"task_id": 0, BUDGET: 5})
    assert info[BUDGET] == 5 and observation.endswith("[Turns left: 5 of 5]")


def test_a_budget_inside_the_stack_is_found_and_driven():
    stack = ChatHistory(TurnBudget(gym.make(GUESS), 3))
    assert resolve_budget(stack, 9) is stack and not stack.env.visible
    _, info = stack.reset(seed=0, options={"task_id": 1, BUDGET: 9})
    assert info[BUDGET] == 9  # the driver's T, not the wrapper's own max_turns


def test_report_budget_false_never_adds_the_budget_keys():
    env = resolve_budget(gym.make(GUESS), 10, report_budget=False)
    _, info = env.reset(seed=0, options={"task_id": 0, BUDGET: 10})
    infos = [info] + [env.step("50")[-1] for _ in range(2)]
    assert all(BUDGET not in info and TURNS_LEFT not in info for info in infos)
    assert [info[TURN] for info in infos] == [0, 1, 2]
    assert resolve_budget(env, 10, report_budget=True) is env
    assert env.step("50")[-1][TURNS_LEFT] == 7


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: TurnBudget(BudgetMix(gym.make(GUESS), [1, 7]), 7), "TurnBudget around BudgetMix"),
        (lambda: gym.wrappers.TimeLimit(TurnBudget(gym.make(GUESS), 7), 3), "TimeLimit of 3"),
        (lambda: TurnBudget(gym.make(GUESS), 7), "hidden TurnBudget"),
    ],
)
def test_stacks_that_break_t_are_refused(make, match):
    with pytest.raises(ValueError, match=match):
        resolve_budget(make(), 7, visible=True)


def test_a_budget_mix_under_a_driver_warns_that_the_driver_sets_t():
    stack = BudgetMix(gym.make(GUESS), [5, 50])
    with pytest.warns(UserWarning, match="draws nothing here: the evaluator's T grid sets"):
        resolve_budget(stack, 20, driver="the evaluator's T grid")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_budget(stack, 20) is stack  # no driver, no warning
    assert find_budget(gym.make(GUESS)) is None
