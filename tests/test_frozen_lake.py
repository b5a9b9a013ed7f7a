"""FrozenLake's own rules: holes, edges, slides, generation and the slippery oracle."""

from __future__ import annotations

import math
import pickle

import gymnasium as gym
import numpy as np
import pytest

import agent_envs
from agent_envs.envs.frozen_lake.env import (
    INTENDED_PROBABILITY,
    FrozenLakeEnv,
    LakeTask,
    generate_lake,
    min_start_distance,
    solve_slippery,
)

gym.register_envs(agent_envs)

# Open ice around the centre start, so that every slide lands on ice.
OPEN = ("GFF", "FSF", "FFF")
# From S the shortest route (right) risks a slide down into H; "up" goes
# around with no risk at all, at the cost of two more turns.
DETOUR = ("FFF", "SFF", "HFG")
# Mirror-symmetric about the diagonal through S and G: down and right tie.
SYMMETRIC = ("SFF", "FFF", "FFG")


def hand_made(rows: tuple[str, ...], slippery: bool) -> FrozenLakeEnv:
    """Return an env whose every task is the map ``rows``."""
    task = LakeTask.from_rows(rows)

    class HandMadeLake(FrozenLakeEnv):
        def _make_task(self, task_id: int, rng: np.random.Generator) -> LakeTask:
            return task

    return HandMadeLake(size=task.size, slippery=slippery)


def position(env: FrozenLakeEnv) -> tuple[int, int]:
    return divmod(env._position, env.task.size)


def binomial_tolerance(trials: int, probability: float, sigmas: float = 4.0) -> float:
    """Return ``sigmas`` standard deviations of a binomial frequency."""
    return sigmas * math.sqrt(probability * (1 - probability) / trials)


def test_falling_into_a_hole_ends_the_episode_as_a_dead_end():
    env = FrozenLakeEnv(size=4)
    for task_id in range(200):
        env.reset(seed=0, options={"task_id": task_id})
        around = [(move, env.task.tiles[cell]) for move, cell in _neighbours(env)]
        into_hole = [move for move, tile in around if tile == "H"]
        if into_hole:
            break
    else:
        pytest.fail("no task in 0..199 starts next to a hole")
    observation, reward, terminated, truncated, info = env.step(into_hole[0])
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info == {"task_id": task_id, "success": False, "valid_action": True, "dead_end": True}
    assert "fell into a hole" in observation
    assert env.oracle_turns() is None
    assert env.oracle_actions() == [] and env.admissible_actions() == []
    assert env.success_probability() == 0.0
    # The episode stays over: further moves are invalid and change nothing.
    again = env.step("up")
    assert again[2] is True and again[-1]["valid_action"] is False and again[-1]["dead_end"]


def _neighbours(env: FrozenLakeEnv) -> list[tuple[str, int]]:
    row, col = position(env)
    size = env.task.size
    moves = {"left": (0, -1), "down": (1, 0), "right": (0, 1), "up": (-1, 0)}
    return [
        (move, (row + dr) * size + col + dc)
        for move, (dr, dc) in moves.items()
        if 0 <= row + dr < size and 0 <= col + dc < size
    ]


def test_moving_off_the_lake_is_invalid_and_changes_nothing():
    env = hand_made(SYMMETRIC, slippery=True)
    observation, _ = env.reset(seed=0, options={"task_id": 0})
    assert env.admissible_actions() == ["down", "right"]
    for move in ("left", "up"):
        step = env.step(move)
        assert step[-1]["valid_action"] is False and step[1] == 0.0 and not step[2]
        assert "would leave the lake" in step[0]
        assert position(env) == (0, 0)
        assert step[0].split("\n\n", 1)[1] == observation.split("\n\n", 1)[1]


@pytest.mark.parametrize(
    "text", ["left", "L", "  Action: LEFT ", "move left", "go west", "west", "`left`."]
)
def test_lenient_parsing(text):
    env = hand_made(OPEN, slippery=False)
    env.reset(seed=0, options={"task_id": 0})
    _, _, _, _, info = env.step(text)
    assert info["valid_action"] is True
    assert position(env) == (1, 0)


def test_the_view_shows_the_map_and_the_agent():
    env = hand_made(DETOUR, slippery=False)
    observation, _ = env.reset(seed=0, options={"task_id": 0})
    assert "goal G at row 2, column 2" in observation
    assert observation.endswith("F F F\n@ F F\nH F G\nYou are at row 1, column 0.")
    observation = env.step("right")[0]
    assert observation == "You moved right.\n\nF F F\nS @ F\nH F G\nYou are at row 1, column 1."


def test_slides_follow_the_documented_probabilities():
    env = hand_made(OPEN, slippery=True)
    trials = 3000
    landed = {"right": 0, "up": 0, "down": 0}
    for seed in range(trials):
        env.reset(seed=seed, options={"task_id": 0})
        observation, _, _, _, info = env.step("right")
        assert info["valid_action"] is True
        where = {(1, 2): "right", (0, 1): "up", (2, 1): "down"}[position(env)]
        landed[where] += 1
        assert ("slid" in observation) == (where != "right")
    side = (1 - INTENDED_PROBABILITY) / 2
    expected = {"right": INTENDED_PROBABILITY, "up": side, "down": side}
    for where, count in landed.items():
        assert abs(count / trials - expected[where]) <= binomial_tolerance(
            trials, expected[where]
        ), landed


def test_a_slide_off_the_lake_leaves_the_agent_in_place():
    env = hand_made(SYMMETRIC, slippery=True)
    trials, stayed = 2000, 0
    for seed in range(trials):
        env.reset(seed=seed, options={"task_id": 0})
        observation, _, terminated, _, info = env.step("right")  # a slide up leaves the lake
        assert info["valid_action"] is True and not terminated
        if position(env) == (0, 0):
            stayed += 1
            assert "stayed where you were" in observation
    side = (1 - INTENDED_PROBABILITY) / 2
    assert abs(stayed / trials - side) <= binomial_tolerance(trials, side)


def test_deterministic_ice_never_slides():
    env = gym.make("agent_envs/FrozenLake-8x8-v0").unwrapped
    assert env.stochastic is False
    for task_id in range(20):
        env.reset(seed=task_id, options={"task_id": task_id})
        for action in env.admissible_actions():
            clone = pickle.loads(pickle.dumps(env))
            before = dict(_neighbours(clone))
            clone.step(action)
            assert clone._position == before[action]


def test_slippery_ids_are_stochastic_and_share_tasks_with_solid_ice():
    solid = gym.make("agent_envs/FrozenLake-8x8-v0").unwrapped
    slippery = gym.make("agent_envs/FrozenLake-8x8-Slippery-v0").unwrapped
    assert slippery.stochastic is True
    for task_id in range(20):
        solid.reset(seed=1, options={"task_id": task_id})
        slippery.reset(seed=2, options={"task_id": task_id})
        assert solid.task == slippery.task
        # oracle_turns on slippery ice is the shortest path ignoring slides.
        assert slippery.oracle_turns() == solid.oracle_turns()


def test_slippery_oracle_takes_the_safe_detour():
    solid, slippery = hand_made(DETOUR, slippery=False), hand_made(DETOUR, slippery=True)
    solid.reset(seed=0, options={"task_id": 0})
    slippery.reset(seed=0, options={"task_id": 0})
    # The shortest path starts right, but a slide down from there drops into
    # the hole; going up first reaches the goal with certainty.
    assert solid.oracle_actions() == ["right"]
    assert slippery.oracle_actions() == ["up"]
    assert slippery.success_probability() == pytest.approx(1.0)
    assert solid.oracle_turns() == slippery.oracle_turns() == 3
    probabilities, moves = solve_slippery(slippery.task)
    # From the middle tile, "right" is safe and shortest; "down" risks the hole.
    assert [slippery.action_vocabulary[d] for d in moves[4]] == ["right"]
    assert probabilities[6] == 0.0 and probabilities[8] == 1.0


def test_slippery_oracle_lists_every_tied_move():
    env = hand_made(SYMMETRIC, slippery=True)
    env.reset(seed=0, options={"task_id": 0})
    assert env.oracle_actions() == ["down", "right"]


def test_success_probability_matches_the_oracles_empirical_success_rate():
    env = gym.make("agent_envs/FrozenLake-8x8-Slippery-v0").unwrapped
    env.reset(seed=0, options={"task_id": 3})
    expected = env.success_probability()
    assert 0.0 < expected < 1.0
    episodes, successes = 600, 0
    for seed in range(episodes):
        env.reset(seed=seed, options={"task_id": 3})
        for _ in range(500):
            *_, terminated, _, info = env.step(env.oracle_actions()[0])
            if terminated:
                break
        successes += info["success"]
    assert abs(successes / episodes - expected) <= binomial_tolerance(episodes, expected)


@pytest.mark.parametrize("size", [4, 8])
def test_generated_lakes_are_solvable_and_not_trivial(size):
    for task_id in range(200):
        task = generate_lake(size, np.random.default_rng(task_id))
        assert len(task.tiles) == size * size and set(task.tiles) <= set("SFHG")
        assert task.tiles.count("S") == task.tiles.count("G") == 1
        assert task.tiles[task.start] == "S" and task.tiles[task.goal] == "G"
        assert task.distances[task.start] >= min_start_distance(size)
        assert all(task.distances[c] == -1 for c, tile in enumerate(task.tiles) if tile == "H")
        assert LakeTask.from_rows(task.rows()) == task


@pytest.mark.parametrize(
    "rows",
    [("SF", "FGF"), ("SX", "FG"), ("SF", "FF"), ("SS", "FG"), ("SH", "HG"), ("S",)],
)
def test_from_rows_rejects_bad_maps(rows):
    with pytest.raises(ValueError, match=r"rows|unreachable"):
        LakeTask.from_rows(rows)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"size": 1}, ValueError),
        ({"size": 33}, ValueError),
        ({"size": 4.0}, TypeError),
        ({"size": True}, TypeError),
    ],
)
def test_bad_size_is_a_clear_error(kwargs, error):
    with pytest.raises(error, match="size"):
        FrozenLakeEnv(**kwargs)


def test_bad_slippery_is_a_clear_error():
    with pytest.raises(TypeError, match="slippery"):
        FrozenLakeEnv(slippery=1)
