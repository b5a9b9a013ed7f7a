"""Maze's own rules: a local view only, walls that block, a stated exit, perfect mazes."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

import agent_envs
from agent_envs.envs.common.grid import OPPOSITE
from agent_envs.envs.maze import MazeEnv, draw_maze, generate_maze, min_exit_distance

gym.register_envs(agent_envs)


def view_of(observation: str) -> str:
    """Return the view: the last paragraph of an observation."""
    return observation.rsplit("\n\n", 1)[1]


def test_the_view_depends_only_on_the_local_surroundings():
    env = MazeEnv(size=7)
    seen: dict[tuple[int, int], tuple[tuple[int, ...], str]] = {}
    for task_id in range(300):
        observation, _ = env.reset(seed=0, options={"task_id": task_id})
        task = env.task
        key = (task.start, task.open_sides[task.start])
        if key in seen and task.open_sides != seen[key][0]:
            break
        seen.setdefault(key, (task.open_sides, observation))
    else:
        pytest.fail("no two mazes in 0..299 share a start cell and its walls")
    other_maze, other_observation = seen[key]
    assert other_maze != task.open_sides
    # Two different mazes, the same cell and walls: the agent sees the same line.
    assert view_of(observation) == view_of(other_observation)
    assert "\n" not in view_of(observation)


def test_the_view_states_position_and_open_sides():
    env = MazeEnv(size=7)
    observation, _ = env.reset(seed=0, options={"task_id": 0})
    row, col = divmod(env.task.start, 7)
    view = view_of(observation)
    assert view.startswith(f"You are at row {row}, column {col}. Open: ")
    opened = view.split("Open: ")[1].split(".")[0].split(", ")
    assert opened == env.admissible_actions()


def test_the_exit_is_stated_once_in_the_reset_observation():
    env = MazeEnv(size=15)
    for task_id in range(10):
        observation, _ = env.reset(seed=0, options={"task_id": task_id})
        row, col = divmod(env.task.exit, 15)
        assert f"Find the exit at row {row}, column {col}." in observation
        # Step observations carry no map knowledge: the agent must remember the goal.
        step = env.step(env.admissible_actions()[0])[0]
        assert "exit" not in step or env.oracle_turns() == 0


def test_walls_block_and_waste_the_turn():
    env = MazeEnv(size=7)
    env.reset(seed=0, options={"task_id": 0})
    blocked = [a for a in env.action_vocabulary if a not in env.admissible_actions()]
    assert blocked, "a start cell with four open sides: pick another task"
    before = (env._position, env.oracle_turns())
    observation, reward, terminated, _, info = env.step(blocked[0])
    assert info["valid_action"] is False and reward == 0.0 and not terminated
    assert f"There is a wall to the {blocked[0]}" in observation
    assert (env._position, env.oracle_turns()) == before


def test_admissible_actions_are_exactly_the_valid_moves():
    env = MazeEnv(size=7)
    env.reset(seed=0, options={"task_id": 4})
    rng = np.random.default_rng(0)
    for _ in range(60):
        admissible = env.admissible_actions()
        for action in env.action_vocabulary:
            clone = copy.deepcopy(env)
            assert clone.step(action)[-1]["valid_action"] is (action in admissible)
        if env.step(admissible[int(rng.integers(len(admissible)))])[2]:
            break


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("N", "north"),
        ("  Action: North ", "north"),
        ("go up", "north"),
        ("s", "south"),
        ("move EAST", "east"),
        ("right", "east"),
        ("w", "west"),
        ("walk left", "west"),
    ],
)
def test_lenient_parsing(text, expected):
    env = MazeEnv(size=7)
    env.reset(seed=0, options={"task_id": 0})
    reference = copy.deepcopy(env)
    assert env.step(text)[0] == reference.step(expected)[0]


@pytest.mark.parametrize("size", [7, 15])
def test_mazes_are_perfect_with_a_far_exit(size):
    for task_id in range(50):
        task = generate_maze(size, np.random.default_rng(task_id))
        passages = sum(bin(mask).count("1") for mask in task.open_sides) // 2
        assert passages == size * size - 1  # a spanning tree: one path between any two cells
        assert min(task.distances) == 0 and task.distances[task.exit] == 0
        assert task.distances[task.start] >= min_exit_distance(size)
        # Walls are consistent from both sides and the border is closed.
        for cell in range(size * size):
            for direction, neighbour in enumerate(task.steps(cell)):
                if neighbour >= 0:
                    assert task.steps(neighbour)[OPPOSITE[direction]] == cell
        lines = draw_maze(task).splitlines()
        assert "".join(lines).count("S") == "".join(lines).count("E") == 1
        border = lines[0] + lines[-1] + "".join(line[0] + line[-1] for line in lines)
        assert set(border) == {"#"}


def test_the_large_maze_is_a_long_horizon_task():
    env = gym.make("agent_envs/Maze-15x15-v0").unwrapped
    turns = []
    for task_id in range(30):
        env.reset(seed=0, options={"task_id": task_id})
        turns.append(env.oracle_turns())
    assert min(turns) >= 30 and max(turns) >= 60


def test_the_oracle_reads_the_true_map():
    env = MazeEnv(size=7)
    env.reset(seed=0, options={"task_id": 2})
    art = draw_maze(env.task, env._position)
    assert "@" in art and "E" in art
    for _ in range(env.oracle_turns()):
        (action,) = env.oracle_actions()  # a perfect maze has one shortest path
        env.step(action)
    assert env._position == env.task.exit and env.admissible_actions() == []
    assert env.step("north")[-1]["valid_action"] is False


# A value out of range is a ValueError, a wrong type a TypeError (wrappers.utils.validators).
@pytest.mark.parametrize(
    ("size", "error"),
    [(1, ValueError), (41, ValueError), (7.0, TypeError), (True, TypeError), ("7", TypeError)],
)
def test_bad_size_is_a_clear_error(size, error):
    with pytest.raises(error, match="size"):
        MazeEnv(size=size)
