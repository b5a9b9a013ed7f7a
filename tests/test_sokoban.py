"""Sokoban's own rules: solvable generation, exact dead ends, illegal pushes, parsing."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

import agent_envs
from agent_envs.envs.sokoban.env import DIRECTIONS, SokobanEnv
from agent_envs.envs.sokoban.rooms import SokobanTask, render

gym.register_envs(agent_envs)

SOKOBAN_IDS = ["agent_envs/Sokoban-v0", "agent_envs/Sokoban-8x8-v0"]

# Box one push from a corner that is not a target; the target is on the same
# wall, so the room is solvable (6 moves) until the box goes left.
CORNER_TRAP = """
######
#_XPO#
#____#
#____#
#____#
######
"""

# Left pushes a box into the wall, down pushes a box into a box, up is a wall.
BLOCKED = """
######
#XP__#
#_X__#
#_X__#
#OOO_#
######
"""


class FixedRoomEnv(SokobanEnv):
    """A SokobanEnv that plays one hand-built room whatever the task id."""

    def __init__(self, layout: str) -> None:
        self.layout = layout
        task = SokobanTask.from_text(layout)
        super().__init__(width=task.width, height=task.height, num_boxes=task.boxes.bit_count())

    def _make_task(self, task_id: int, rng: np.random.Generator) -> SokobanTask:
        return SokobanTask.from_text(self.layout)


def grid_of(observation: str) -> str:
    """The grid: the last block of an observation."""
    return observation.rsplit("\n\n", 1)[-1]


def play_oracle(env: SokobanEnv) -> int:
    """Follow the oracle to success; return the number of turns taken."""
    turns = 0
    while True:
        actions = env.oracle_actions()
        assert actions, "oracle gave up before success"
        _, reward, terminated, _, info = env.step(actions[0])
        turns += 1
        if terminated:
            assert reward == 1.0 and info["success"]
            return turns


@pytest.mark.parametrize(("env_id", "tasks"), [(SOKOBAN_IDS[0], 200), (SOKOBAN_IDS[1], 60)])
def test_generated_tasks_are_solvable_and_not_trivial(env_id, tasks):
    env = gym.make(env_id).unwrapped
    lengths = set()
    for task_id in range(tasks):
        env.reset(seed=0, options={"task_id": task_id})
        expected = env.oracle_turns()
        assert isinstance(expected, int) and expected >= 2, (task_id, expected)
        assert env.task.boxes != env.task.targets
        assert play_oracle(env) == expected
        lengths.add(expected)
    # The optimal solution length spans a range, not a single value.
    assert len(lengths) >= 4, lengths


def test_pushing_a_box_into_a_corner_is_a_dead_end_that_does_not_end_the_episode():
    env = FixedRoomEnv(CORNER_TRAP)
    _, info = env.reset(seed=0, options={"task_id": 0})
    assert env.oracle_turns() == 6
    assert env.oracle_actions() == ["down"]
    observation, reward, terminated, truncated, info = env.step("left")
    assert info["valid_action"] is True
    assert grid_of(observation).splitlines()[1] == "#XP_O#"
    assert info["dead_end"] is True
    assert (reward, terminated, truncated, info["success"]) == (0.0, False, False, False)
    assert env.oracle_turns() is None
    assert env.oracle_actions() == []
    # Only the budget ends it: the agent can keep moving, and it stays dead.
    for action in ["right", "down", "left", "up", "right"]:
        _, reward, terminated, truncated, info = env.step(action)
        assert info["dead_end"] is True and not terminated and not truncated
        assert reward == 0.0


def test_dead_end_is_detected_without_the_oracle():
    # The push-level search (no distance table built) must agree with the oracle.
    env = FixedRoomEnv(CORNER_TRAP)
    env.reset(seed=0, options={"task_id": 0})
    assert env.step("left")[-1]["dead_end"] is True
    assert env.task.distances is None


@pytest.mark.parametrize(
    ("action", "reason"),
    [("left", "into a wall"), ("down", "into another box"), ("up", "wall is in the way")],
)
def test_illegal_move_is_invalid_and_leaves_the_state_unchanged(action, reason):
    env = FixedRoomEnv(BLOCKED)
    first, _ = env.reset(seed=0, options={"task_id": 0})
    assert env.admissible_actions() == ["right"]
    turns = env.oracle_turns()
    observation, reward, terminated, truncated, info = env.step(action)
    assert info["valid_action"] is False
    assert reason in observation.split("\n\n")[0]
    # The grid is the whole state.
    assert grid_of(observation) == grid_of(first)
    assert env.oracle_turns() == turns and env.admissible_actions() == ["right"]
    assert (reward, terminated, truncated) == (0.0, False, False)


@pytest.mark.parametrize(
    "text",
    [
        "up",
        "UP",
        " u ",
        "U",
        "move up",
        "Move Up",
        "Action: up",
        "go up",
        "push up",
        "push u",
        "step up",
        "north",
        "`up`",
        "u.",
    ],
)
def test_lenient_parsing_accepts_every_spelling_of_up(text):
    env = FixedRoomEnv(CORNER_TRAP)
    env.reset(seed=0, options={"task_id": 0})
    env.step("down")
    observation, *_, info = env.step(text)
    assert info["valid_action"] is True
    assert observation.startswith("You moved up.")


@pytest.mark.parametrize("text", ["upward", "move", "up down", "w", "left!", "push"])
def test_other_text_is_invalid(text):
    env = FixedRoomEnv(CORNER_TRAP)
    env.reset(seed=0, options={"task_id": 0})
    observation, *_, info = env.step(text)
    assert info["valid_action"] is False
    assert "up, down, left, right" in observation


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_dead_end_admissible_and_oracle_agree_along_random_play(env_id):
    rng = np.random.default_rng(0)
    verdicts = set()
    for task_id in range(6):
        # `blind` never calls the oracle, so its dead_end comes from the push search.
        blind, seeing = gym.make(env_id).unwrapped, gym.make(env_id).unwrapped
        blind.reset(seed=1, options={"task_id": task_id})
        seeing.reset(seed=1, options={"task_id": task_id})
        was_dead = False
        for _ in range(80):
            legal = seeing.admissible_actions()
            for action in DIRECTIONS:  # admissible means exactly "valid now"
                probe = copy.copy(seeing)
                assert probe.step(action)[-1]["valid_action"] is (action in legal)
            turns = seeing.oracle_turns()
            if turns is None:
                assert seeing.oracle_actions() == []
            else:  # every move that starts a shortest solution, and only those
                optimal = [a for a in legal if _turns_after(seeing, a) == turns - 1]
                assert seeing.oracle_actions() == optimal
            action = legal[int(rng.integers(len(legal)))]
            info = blind.step(action)[-1]
            seeing.step(action)
            if info["success"]:
                break
            assert info["dead_end"] is (seeing.oracle_turns() is None)
            assert info["dead_end"] or not was_dead  # boxes never come back out
            was_dead = info["dead_end"]
            verdicts.add(was_dead)
        assert blind.task.distances is None
    assert verdicts == {False, True}  # random play reaches both kinds of state


def _turns_after(env: SokobanEnv, action: str) -> int | None:
    # A shallow copy is enough: a step rebinds the state attributes, and the
    # shared task only holds exact memos.
    probe = copy.copy(env)
    probe.step(action)
    return probe.oracle_turns()


def test_reset_observation_states_goal_legend_and_actions():
    env = gym.make("agent_envs/Sokoban-8x8-v0").unwrapped
    observation, info = env.reset(seed=0, options={"task_id": 3})
    assert info == {"task_id": 3, "success": False}
    for phrase in ("Push every box onto a target", "2 boxes", "# wall", "V box on a target",
                   "S you on a target", "up, down, left, right"):  # fmt: skip
        assert phrase in observation
    rows = grid_of(observation).splitlines()
    assert len(rows) == 8 and all(len(row) == 8 for row in rows)
    assert env.render() is None  # no render_mode: nothing to render
    ansi = gym.make("agent_envs/Sokoban-8x8-v0", render_mode="ansi")
    ansi.reset(seed=0, options={"task_id": 3})
    assert ansi.render() == grid_of(observation)  # "ansi": the grid the observation shows


def test_render_round_trips_through_from_text():
    env = gym.make("agent_envs/Sokoban-8x8-v0", render_mode="ansi").unwrapped
    env.reset(seed=0, options={"task_id": 5})
    for action in ["up", "left", "down", "right"] * 3:
        if action in env.admissible_actions():
            env.step(action)
        clone = SokobanTask.from_text(env.render())
        assert (clone.floor, clone.targets) == (env.task.floor, env.task.targets)
        assert render(clone, clone.boxes, clone.player) == env.render()


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ("####\n#PX#\n#O_#\n####", "5 to 16"),
        ("#####\n#PXO#\n#___\n#___#\n#####", "every row needs 5"),
        ("#####\n#PXO#\n#_?_#\n#___#\n#####", "Unknown cell"),
        ("#####\n_PXO#\n#___#\n#___#\n#####", "outer ring"),
        ("#####\n#_XO#\n#___#\n#___#\n#####", "one player"),
        ("#####\n#PXX#\n#_O_#\n#___#\n#####", "as many boxes as targets"),
    ],
)
def test_from_text_rejects_bad_layouts(layout, message):
    with pytest.raises(ValueError, match=message):
        SokobanTask.from_text(layout)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"width": 4}, ValueError),
        ({"height": 17}, ValueError),
        ({"width": 6.0}, TypeError),
        ({"num_boxes": 0}, ValueError),
        ({"num_boxes": 5, "width": 16, "height": 16}, ValueError),
        ({"num_boxes": True}, TypeError),
        ({"render_mode": "human"}, ValueError),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, error):
    with pytest.raises(error):
        SokobanEnv(**kwargs)


@pytest.mark.parametrize(("width", "height", "num_boxes"), [(5, 5, 1), (5, 9, 2), (7, 6, 3)])
def test_other_sizes_generate_solvable_rooms(width, height, num_boxes):
    env = SokobanEnv(width=width, height=height, num_boxes=num_boxes)
    for task_id in range(3):
        observation, _ = env.reset(seed=0, options={"task_id": task_id})
        rows = grid_of(observation).splitlines()
        assert (len(rows), len(rows[0])) == (height, width)
        assert grid_of(observation).count("X") + grid_of(observation).count("V") == num_boxes
        expected = env.oracle_turns()
        assert isinstance(expected, int) and expected >= 1
        assert play_oracle(env) == expected
