"""Instance keys: which task ids build the same task, for every registered family."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agent_envs
from agent_envs.instances import instance_key, instance_keys
from wrappers.protocol import TASK_ID

ENV_IDS = agent_envs.env_ids()


def _play(env_id: str, task_id: int, actions: list[str]) -> list[tuple]:
    """Return every (observation, reward, terminated, truncated, info) of ``actions`` on a task."""
    env = gym.make(env_id)
    observation, info = env.reset(seed=3, options={TASK_ID: task_id})
    info.pop(TASK_ID)
    trace: list[tuple] = [(observation, info)]
    for action in actions:
        observation, reward, terminated, truncated, info = env.step(action)
        info = {key: value for key, value in info.items() if key != TASK_ID}  # the id differs
        trace.append((observation, reward, terminated, truncated, info))
    env.close()
    return trace


def _actions(env_id: str, task_id: int, turns: int = 6) -> list[str]:
    """Return the oracle's first moves on the task, then its admissible actions' first."""
    env = gym.make(env_id)
    env.reset(seed=3, options={TASK_ID: task_id})
    actions = []
    for _ in range(turns):
        base = env.unwrapped
        moves = base.oracle_actions() or base.admissible_actions()
        if not moves:
            break
        actions.append(moves[0])
        _, _, terminated, _, _ = env.step(moves[0])
        if terminated:
            break
    env.close()
    return [*actions, "not an action"]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_key_is_the_tasks_and_no_memo_changes_it(env_id):
    env = gym.make(env_id)
    env.reset(seed=0, options={TASK_ID: 7})
    fresh = env.unwrapped.instance_key()
    for action in _actions(env_id, 7):  # fills the task's oracle memos
        env.step(action)
    assert env.unwrapped.instance_key() == fresh == instance_key(env_id, 7)
    assert "0x" not in repr(env.unwrapped._instance_data())  # no memory address in the key


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_two_ids_with_equal_keys_play_identically(env_id):
    keys = instance_keys(env_id, range(120))
    by_key: dict[str, list[int]] = {}
    for task_id, key in keys.items():
        by_key.setdefault(key, []).append(task_id)
    pairs = [ids[:2] for ids in by_key.values() if len(ids) > 1]
    # Families with few instances repeat within 120 ids; the others may not.
    supply = gym.make(env_id).unwrapped.task_supply
    if supply is not None and supply <= 30:
        assert len(by_key) == supply and pairs
    for first, second in pairs[:3]:
        actions = _actions(env_id, first)
        assert _play(env_id, first, actions) == _play(env_id, second, actions)


def test_variants_of_one_family_have_different_keys():
    # Secret 5 of GuessNumber-20 and secret 5 of GuessNumber-v0 are different games.
    small, large = gym.make("agent_envs/GuessNumber-20-v0"), gym.make("agent_envs/GuessNumber-v0")
    small.reset(options={TASK_ID: 2147483644})
    for task_id in range(5000):
        large.reset(options={TASK_ID: task_id})
        if large.unwrapped.task == small.unwrapped.task:
            break
    assert large.unwrapped.task == small.unwrapped.task
    assert large.unwrapped.instance_key() != small.unwrapped.instance_key()


def test_guess_number_20_keys_are_its_secrets():
    env = gym.make("agent_envs/GuessNumber-20-v0")
    secrets = {}
    for task_id in range(200):
        env.reset(options={TASK_ID: task_id})
        secrets.setdefault(env.unwrapped.instance_key(), set()).add(env.unwrapped.task)
    assert len(secrets) == 20 and all(len(values) == 1 for values in secrets.values())
