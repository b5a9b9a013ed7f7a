"""Hanoi's own rules: lenient peg parsing, illegal moves, and an oracle exact from any state."""

from __future__ import annotations

import itertools
from collections import deque

import gymnasium as gym
import numpy as np
import pytest

from agent_envs.envs.hanoi import PEG_PAIRS, HanoiEnv, hanoi_plan


def legal_moves(positions: tuple[int, ...]):
    """Yield ``((source, destination), next_positions)`` for every legal move."""
    tops: dict[int, int] = {}
    for disk in range(len(positions) - 1, -1, -1):
        tops[positions[disk]] = disk  # ends as the smallest disk on each peg
    for source, disk in tops.items():
        for destination in range(3):
            if destination != source and (destination not in tops or tops[destination] > disk):
                nxt = list(positions)
                nxt[disk] = destination
                yield (source, destination), tuple(nxt)


def bfs_distances(n_disks: int, target: int) -> dict[tuple[int, ...], int]:
    """Exact distances to the full tower on ``target`` over all ``3 ** n`` states."""
    goal = (target,) * n_disks
    distances = {goal: 0}
    queue = deque([goal])
    while queue:
        state = queue.popleft()
        for _, nxt in legal_moves(state):
            if nxt not in distances:
                distances[nxt] = distances[state] + 1
                queue.append(nxt)
    return distances


@pytest.mark.parametrize("n_disks", [1, 2, 3, 4])
@pytest.mark.parametrize("target", [0, 1, 2])
def test_plan_is_exact_and_its_move_is_the_only_optimal_one(n_disks, target):
    distances = bfs_distances(n_disks, target)
    assert len(distances) == 3**n_disks
    for state, distance in distances.items():
        turns, move = hanoi_plan(state, target)
        assert turns == distance, state
        optimal = [mv for mv, nxt in legal_moves(state) if distances[nxt] == distance - 1]
        assert optimal == ([] if move is None else [move]), state


@pytest.mark.parametrize("n_disks", [3, 4, 5])
def test_every_task_starts_from_a_full_tower_with_the_headline_horizon(n_disks):
    env = HanoiEnv(n_disks=n_disks)
    seen = set()
    for task_id in range(6):
        observation, _ = env.reset(seed=0, options={"task_id": task_id})
        task = env.task
        seen.add((task.start, task.target))
        tower = " ".join(str(disk) for disk in range(n_disks, 0, -1))
        assert f"Peg {task.start + 1}: {tower}" in observation
        assert f"Goal: all {n_disks} disks on peg {task.target + 1}." in observation
        assert env.oracle_turns() == 2**n_disks - 1
    assert seen == set(PEG_PAIRS)


@pytest.mark.parametrize(
    "text",
    [
        "move 1 3",
        "1 3",
        "13",
        "1->3",
        "Action: Move 1 3.",
        "move disk from 1 to 3",
        "move the top disk from peg A to peg C",
        "move a disk from a to c",
        "A C",
        "`a -> c`",
    ],
)
def test_lenient_parsing_reads_source_then_destination(text):
    env = HanoiEnv(n_disks=3)
    env.reset(seed=0, options={"task_id": 0})  # tower on peg 1, goal peg 3
    observation, _, _, _, info = env.step(text)
    assert info["valid_action"] is True
    assert observation.startswith("Moved disk 1 from peg 1 to peg 3.")
    assert "Peg 3: 1" in observation


@pytest.mark.parametrize("text", ["move 1", "move 1 2 3", "move 1 4", "d e", "left", "1 3 please"])
def test_unparsable_moves_are_invalid(text):
    env = HanoiEnv(n_disks=3)
    env.reset(seed=0, options={"task_id": 0})
    observation, reward, terminated, _, info = env.step(text)
    assert (info["valid_action"], reward, terminated) == (False, 0.0, False)
    assert observation.startswith("Invalid action")
    assert env.oracle_turns() == 7


@pytest.mark.parametrize(
    ("setup", "move", "message"),
    [
        ([], "move 2 3", "peg 2 is empty"),
        ([], "move 1 1", "both peg 1"),
        (["move 1 3"], "move 1 3", "cannot go on top of the smaller disk 1"),
    ],
)
def test_illegal_moves_leave_the_state_unchanged(setup, move, message):
    env = HanoiEnv(n_disks=3, render_mode="ansi")
    env.reset(seed=0, options={"task_id": 0})
    for action in setup:
        env.step(action)
    before = (env.render(), env.oracle_turns(), env.admissible_actions())
    observation, reward, terminated, _, info = env.step(move)
    assert (info["valid_action"], reward, terminated) == (False, 0.0, False)
    assert message in observation.splitlines()[0]
    assert (env.render(), env.oracle_turns(), env.admissible_actions()) == before


def test_admissible_actions_are_exactly_the_legal_vocabulary_moves():
    env = HanoiEnv(n_disks=4)
    rng = np.random.default_rng(0)
    env.reset(seed=0, options={"task_id": 3})
    for _ in range(40):
        legal = env.admissible_actions()
        for action in env.action_vocabulary:
            probe = HanoiEnv(n_disks=4)
            probe.reset(seed=0, options={"task_id": 3})
            probe._pegs = [list(stack) for stack in env._pegs]
            assert probe.step(action)[-1]["valid_action"] is (action in legal)
        env.step(legal[int(rng.integers(len(legal)))])


@pytest.mark.parametrize("task_id", range(6))
def test_oracle_finishes_exactly_from_a_scrambled_state(task_id):
    env = HanoiEnv(n_disks=5)
    env.reset(seed=0, options={"task_id": task_id})
    rng = np.random.default_rng(task_id)
    for _ in range(25):  # wander off the optimal path with random legal moves
        legal = env.admissible_actions()
        if env.step(legal[int(rng.integers(len(legal)))])[2]:
            env.reset(seed=0, options={"task_id": task_id})
    expected = env.oracle_turns()
    for turn in range(1, expected + 1):
        _, reward, terminated, _, info = env.step(env.oracle_actions()[0])
        assert info["valid_action"] and env.oracle_turns() == expected - turn
    assert (reward, terminated, info["success"]) == (1.0, True, True)
    assert env.oracle_actions() == [] and env.oracle_turns() == 0


def test_solving_reports_success_in_the_feedback():
    env = gym.make("agent_envs/Hanoi-3-v0").unwrapped
    env.reset(seed=0, options={"task_id": 0})
    for _ in range(7):
        observation, reward, terminated, _, info = env.step(env.oracle_actions()[0])
    assert "Solved: all 3 disks are on peg 3." in observation
    assert (reward, terminated, info["success"], info["dead_end"]) == (1.0, True, True, False)


@pytest.mark.parametrize(
    ("bad", "error"),
    [(0, ValueError), (13, ValueError), (3.0, TypeError), (True, TypeError), ("3", TypeError)],
)
def test_bad_disk_count_is_a_clear_error(bad, error):
    with pytest.raises(error, match="n_disks"):
        HanoiEnv(n_disks=bad)


@pytest.mark.parametrize("n_disks", [1, 2, 3, 4])
def test_random_starts_cover_every_unsolved_state_once_per_supply(n_disks):
    env = HanoiEnv(n_disks=n_disks, random_start=True)
    supply = env.task_supply
    assert supply == 3**n_disks - 1
    starts, turns = [], []
    for task_id in range(2 * supply):
        observation, _ = env.reset(seed=task_id, options={"task_id": task_id})
        assert env.task.target == 2 and "stack all of them on peg 3" in observation
        for peg, stack in enumerate(env._pegs):  # the observation shows the drawn state
            shown = " ".join(map(str, stack)) if stack else "(empty)"
            assert f"Peg {peg + 1}: {shown}\n" in observation
            assert stack == sorted(stack, reverse=True)
        starts.append(env.task.positions)
        turns.append(env.oracle_turns())
    first, second = starts[:supply], starts[supply:]
    solved = (2,) * n_disks
    assert set(first) == set(itertools.product(range(3), repeat=n_disks)) - {solved}
    assert second == first  # the supply repeats, in the same order
    # k turns away lie 2 ** popcount(k) states: turns 1 .. 2 ** n - 1, mostly long.
    for k in range(1, 2**n_disks):
        assert turns[:supply].count(k) == 2 ** bin(k).count("1")


def test_random_start_is_fixed_by_the_task_id_alone():
    env = HanoiEnv(n_disks=5, random_start=True)
    env.reset(seed=1, options={"task_id": 123})
    positions = env.task.positions
    env.reset(seed=2, options={"task_id": 7})
    env.reset(seed=3, options={"task_id": 123})
    assert env.task.positions == positions
    assert HanoiEnv(n_disks=5, random_start=True)._make_task(123, None).positions == positions


def test_full_tower_ids_keep_six_tasks_and_say_so():
    for n_disks in (3, 4, 5):
        env = gym.make(f"agent_envs/Hanoi-{n_disks}-v0").unwrapped
        assert env.task_supply == 6 and env.random_start is False
        scattered = gym.make(f"agent_envs/Hanoi-{n_disks}-RandomStart-v0").unwrapped
        assert scattered.task_supply == 3**n_disks - 1 and scattered.random_start is True


def test_bad_random_start_is_a_clear_error():
    with pytest.raises(TypeError, match="random_start must be a bool"):
        HanoiEnv(random_start=1)
