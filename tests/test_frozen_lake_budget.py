"""The budget-aware slippery FrozenLake oracle, checked against brute force."""

from __future__ import annotations

import functools
import math

import gymnasium as gym
import numpy as np
import pytest

import agent_envs
from agent_envs.envs.frozen_lake.env import (
    INTENDED_PROBABILITY,
    FrozenLakeEnv,
    LakeTask,
    budgeted_oracle,
    generate_lake,
)
from wrappers import BudgetMix, TurnBudget

gym.register_envs(agent_envs)

# From S the short route (right, down, right) passes a hole; "up" goes round it
# safely in five turns.  With up to 6 turns left the best first move is
# "right" (slides cost turns the detour cannot spare), with 7 or more "up".
DETOUR = ("FFF", "SFF", "HFG")
_SIDES = {0: (3, 1), 1: (0, 2), 2: (1, 3), 3: (2, 0)}
_DELTAS = ((0, -1), (1, 0), (0, 1), (-1, 0))


def hand_made(rows: tuple[str, ...]) -> FrozenLakeEnv:
    task = LakeTask.from_rows(rows)

    class HandMadeLake(FrozenLakeEnv):
        def _make_task(self, task_id: int, rng: np.random.Generator) -> LakeTask:
            return task

    return HandMadeLake(size=task.size, slippery=True)


def brute_force(task: LakeTask, cell: int, turns: int) -> float:
    """Expectimax over the whole game tree: the best P(goal within ``turns``).

    Written from the env's rules alone (no shared code with the oracle):
    an intended move off the lake is not allowed, a slide off the lake stays.
    """
    size, tiles = task.size, task.tiles

    def neighbour(at: int, direction: int) -> int | None:
        row, col = divmod(at, size)
        row, col = row + _DELTAS[direction][0], col + _DELTAS[direction][1]
        return row * size + col if 0 <= row < size and 0 <= col < size else None

    @functools.cache
    def best(at: int, left: int) -> float:
        if tiles[at] == "G":
            return 1.0
        if tiles[at] == "H" or left == 0:
            return 0.0
        values = []
        for move in range(4):
            if neighbour(at, move) is None:
                continue
            slide = (1 - INTENDED_PROBABILITY) / 2
            total = 0.0
            for went, p in ((move, INTENDED_PROBABILITY), *((s, slide) for s in _SIDES[move])):
                landed = neighbour(at, went)
                total += p * best(at if landed is None else landed, left - 1)
            values.append(total)
        return max(values)

    return best(cell, turns)


def brute_force_moves(task: LakeTask, cell: int, turns: int) -> set[int]:
    """Every first move whose expectimax value ties the best (within 1e-9)."""
    size = task.size
    values = {}
    for move in range(4):
        row, col = divmod(cell, size)
        if not (0 <= row + _DELTAS[move][0] < size and 0 <= col + _DELTAS[move][1] < size):
            continue
        total = 0.0
        slide = (1 - INTENDED_PROBABILITY) / 2
        for went, p in ((move, INTENDED_PROBABILITY), *((s, slide) for s in _SIDES[move])):
            r, c = row + _DELTAS[went][0], col + _DELTAS[went][1]
            landed = r * size + c if 0 <= r < size and 0 <= c < size else cell
            total += p * brute_force(task, landed, turns - 1)
        values[move] = total
    top = max(values.values())
    return {move for move, value in values.items() if value >= top - 1e-9}


@pytest.mark.parametrize("size", [3, 4])
def test_budgeted_oracle_matches_brute_force_on_small_lakes(size):
    rng = np.random.default_rng(size)
    for _ in range(6):
        task = generate_lake(size, rng)
        oracle = budgeted_oracle(task)
        for turns in range(0, 9):
            values, _ = oracle.table(turns)
            for cell in range(size * size):
                assert values[cell] == pytest.approx(brute_force(task, cell, turns), abs=1e-12)
                if turns and task.tiles[cell] in "SF" and values[cell] > 1e-9:
                    assert set(oracle.best_moves(cell, turns)) == brute_force_moves(
                        task, cell, turns
                    )


def test_best_first_move_depends_on_the_turns_left():
    env = TurnBudget(hand_made(DETOUR), max_turns=3)
    chosen = {}
    for budget in (3, 6, 7, 20):
        env.reset(seed=0, options={"budget": budget})
        chosen[budget] = env.unwrapped.oracle_actions()
        assert env.unwrapped.success_probability() == pytest.approx(
            brute_force(env.unwrapped.task, env.unwrapped.task.start, budget)
        )
    assert chosen == {3: ["right"], 6: ["right"], 7: ["up"], 20: ["up"]}


def test_without_a_budget_the_oracle_is_the_deadline_oracle():
    env = hand_made(DETOUR)
    env.reset(seed=0, options={"task_id": 0})
    assert env.oracle_actions() == ["up"]
    assert env.success_probability() == pytest.approx(1.0)
    # A budget wrapper tells it the turns left; a reset forgets them.
    wrapped = TurnBudget(env, max_turns=3)
    wrapped.reset(seed=0)
    assert env.oracle_actions() == ["right"]
    env.reset(seed=0)
    assert env.oracle_actions() == ["up"]


def test_the_outer_budget_and_each_step_update_the_turns_left():
    env = TurnBudget(BudgetMix(hand_made(DETOUR), budgets=[50]), max_turns=4)
    env.reset(seed=0)
    assert env.unwrapped._turns_left == 4
    env.step("left")  # off the lake: a wasted turn, three left
    assert env.unwrapped._turns_left == 3
    assert env.unwrapped.oracle_actions() == ["right"]


def test_no_time_to_reach_the_goal_falls_back_to_the_untimed_oracle():
    env = TurnBudget(hand_made(DETOUR), max_turns=2)
    env.reset(seed=0)
    assert env.unwrapped.success_probability() == 0.0
    assert env.unwrapped.oracle_actions() == ["up"]


def test_budgeted_success_probability_matches_the_empirical_rate():
    env = TurnBudget(gym.make("agent_envs/FrozenLake-Slippery-v0"), max_turns=7)
    for task_id in range(3):
        env.reset(seed=0, options={"task_id": task_id})
        expected = env.unwrapped.success_probability()
        trials, wins = 600, 0
        for seed in range(trials):
            env.reset(seed=seed, options={"task_id": task_id})
            while True:
                *_, terminated, truncated, info = env.step(env.unwrapped.oracle_actions()[0])
                if terminated or truncated:
                    wins += info["success"]
                    break
        tolerance = 4 * math.sqrt(max(expected * (1 - expected), 0.01) / trials)
        assert abs(wins / trials - expected) < tolerance


def test_solid_ice_success_probability_with_a_budget_is_reachability():
    env = TurnBudget(gym.make("agent_envs/FrozenLake-v0"), max_turns=5)
    env.reset(seed=0, options={"task_id": 0})
    assert env.unwrapped.oracle_turns() >= 6
    assert env.unwrapped.success_probability() == 0.0
    env.reset(seed=0, options={"task_id": 0, "budget": 30})
    assert env.unwrapped.success_probability() == 1.0
