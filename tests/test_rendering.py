"""render_mode="rgb_array": fixed-shape uint8 frames of the grid families, deterministic."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from agent_envs.envs.common.image import CELL
from wrappers import TurnBudget
from wrappers.observation import ImageObservation

IDS = [
    "agent_envs/Sokoban-v0",
    "agent_envs/Sokoban-8x8-v0",
    "agent_envs/FrozenLake-v0",
    "agent_envs/FrozenLake-8x8-Slippery-v0",
    "agent_envs/Maze-7x7-v0",
    "agent_envs/Hanoi-3-v0",
    "agent_envs/Hanoi-5-RandomStart-v0",
]


def _frames(env_id: str, seed: int, task_id: int, moves: int = 6) -> list[np.ndarray]:
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=seed, options={"task_id": task_id})
    frames = [env.render()]
    for _ in range(moves):
        env.step(env.unwrapped.oracle_actions()[0])
        frames.append(env.render())
    return frames


@pytest.mark.parametrize("env_id", IDS)
def test_frames_have_the_declared_shape_and_are_deterministic(env_id):
    frames = _frames(env_id, seed=1, task_id=4)
    shape = gym.make(env_id).unwrapped.image_shape()
    assert all(f.shape == shape and f.dtype == np.uint8 for f in frames)
    assert shape[2] == 3 and shape[0] % CELL == 0 and shape[1] % CELL == 0
    again = _frames(env_id, seed=1, task_id=4)
    assert all(np.array_equal(a, b) for a, b in zip(frames, again, strict=True))
    assert any(not np.array_equal(frames[0], f) for f in frames[1:])  # moves show


@pytest.mark.parametrize("env_id", IDS)
def test_ansi_is_unchanged(env_id):
    text = gym.make(env_id, render_mode="ansi")
    observation, _ = text.reset(seed=0, options={"task_id": 2})
    assert observation.endswith(text.render())


def test_families_without_pictures_refuse_rgb_array():
    with (
        pytest.warns(UserWarning, match="render_modes"),
        pytest.raises(ValueError, match="render_mode"),
    ):
        gym.make("agent_envs/GuessNumber-v0", render_mode="rgb_array")


def _cell(image: np.ndarray, row: int, col: int, centre: bool = True) -> list[int]:
    offset = CELL // 2 if centre else 1
    return image[row * CELL + offset, col * CELL + offset].tolist()


def test_pictures_show_what_the_text_shows():
    from agent_envs.envs.frozen_lake.env import TILES as LAKE
    from agent_envs.envs.maze import TILES as MAZE
    from agent_envs.envs.sokoban.env import TILES as SOKOBAN

    env = gym.make("agent_envs/Sokoban-v0", render_mode="rgb_array")
    env.reset(seed=0, options={"task_id": 1})
    text = gym.make("agent_envs/Sokoban-v0", render_mode="ansi")
    text.reset(seed=0, options={"task_id": 1})
    image, view = env.render(), text.render().splitlines()
    for r, line in enumerate(view):
        for c, char in enumerate(line):
            tile = SOKOBAN[char]
            assert _cell(image, r, c, centre=False) == list(tile[0])
            assert _cell(image, r, c) == list(tile[1] or tile[0])

    env = gym.make("agent_envs/FrozenLake-v0", render_mode="rgb_array")
    env.reset(seed=0, options={"task_id": 1})  # "You are at row 2, column 3."
    assert _cell(env.render(), 2, 3) == list(LAKE["@"][1])

    env = gym.make("agent_envs/Maze-7x7-v0", render_mode="rgb_array")
    text, _ = env.reset(seed=0, options={"task_id": 1})  # open west; walls north, south, east
    assert "Open: west. Walls: north, south, east." in text
    image = env.render()
    assert _cell(image, 1, 0) == list(MAZE["_"][0])  # west open
    assert _cell(image, 0, 1) == _cell(image, 2, 1) == _cell(image, 1, 2) == list(MAZE["#"][0])
    assert _cell(image, 1, 1) == list(MAZE["A"][1])


def test_hanoi_draws_each_disk_on_its_peg():
    from agent_envs.envs.hanoi import TILES

    env = gym.make("agent_envs/Hanoi-3-v0", render_mode="rgb_array")
    env.reset(seed=0, options={"task_id": 0})
    env.step("move 1 3")  # the smallest disk goes from peg 1 to peg 3
    image = env.render()
    width = 7
    # Row 2 is the bottom level; peg 1 keeps disks 3 and 2, peg 3 holds disk 1.
    assert _cell(image, 2, 3) == list(TILES["c"][0]) and _cell(image, 1, 3) == list(TILES["b"][0])
    assert _cell(image, 2, 2 * (width + 1) + 3) == list(TILES["a"][0])
    assert _cell(image, 0, 3) == list(TILES["|"][0])


def test_image_observation_puts_the_frame_beside_the_text():
    maze = gym.make("agent_envs/Maze-5x5-v0", render_mode="rgb_array")
    env = ImageObservation(TurnBudget(maze, 5))
    observation, _ = env.reset(seed=0, options={"task_id": 3})
    assert env.observation_space.contains(observation)
    observation, *_ = env.step("north")
    assert np.array_equal(observation["image"], env.render())
    assert isinstance(observation["text"], str)
    with pytest.raises(ValueError, match="rgb_array"):
        ImageObservation(gym.make("agent_envs/Maze-5x5-v0"))
