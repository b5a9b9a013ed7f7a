"""The design contract, checked for every id registered under ``agent_envs/``.

New families are covered automatically: the tests parametrize over the registry.
"""

from __future__ import annotations

import pickle
import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import example, given
from hypothesis import strategies as st

from agent_envs.core import TextEnv
from tests.conftest import ENV_IDS, action_stream, make_unwrapped

STEP_KEYS = {"task_id", "success", "valid_action", "dead_end"}
RESET_KEYS = {"task_id", "success"}


def rollout(env, seed: int, task_id: int, actions: list[str]) -> list[tuple]:
    """Reset then play ``actions`` (resetting to the next task on termination)."""
    records = [env.reset(seed=seed, options={"task_id": task_id})]
    for action in actions:
        result = env.step(action)
        records.append(result)
        if result[2] or result[3]:
            task_id += 1
            records.append(env.reset(seed=seed, options={"task_id": task_id}))
    return records


def test_registry_is_not_empty():
    assert len(ENV_IDS) >= 1
    assert all(env_id.startswith("agent_envs/") for env_id in ENV_IDS)


def test_check_env_passes_without_warnings(env_id):
    env = make_unwrapped(env_id)
    assert isinstance(env, TextEnv)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env)


def test_render_ansi_returns_text(env_id):
    env = gym.make(env_id, render_mode="ansi")
    env.reset(seed=0, options={"task_id": 1})
    frame = env.render()
    assert isinstance(frame, str) and frame
    assert env.unwrapped.observation_space.contains(frame)


def test_spaces_are_text_with_min_length_zero(env_id):
    env = make_unwrapped(env_id)
    for space in (env.observation_space, env.action_space):
        assert isinstance(space, gym.spaces.Text)
        assert space.min_length == 0


def test_determinism_over_mixed_actions(env_id):
    first, second = make_unwrapped(env_id), make_unwrapped(env_id)
    # Build one action list by playing a probe env, then replay it on both.
    actions: list[str] = []
    probe = make_unwrapped(env_id)
    probe.reset(seed=3, options={"task_id": 11})
    rng = np.random.default_rng(0)
    for action in action_stream(probe, rng, 120):
        actions.append(action)
        *_, terminated, truncated, _ = probe.step(action)
        if terminated or truncated:
            probe.reset(seed=3, options={"task_id": 12})
    a = rollout(first, 3, 11, actions)
    b = rollout(second, 3, 11, actions)
    assert a == b
    for record in a:
        observation, info = record[0], record[-1]
        assert first.observation_space.contains(observation), repr(observation[-200:])
        assert set(info) >= (STEP_KEYS if len(record) == 5 else RESET_KEYS)


def test_pickled_env_continues_identically(env_id):
    env = make_unwrapped(env_id)
    env.reset(seed=5, options={"task_id": 4})
    rng = np.random.default_rng(1)
    for action in action_stream(env, rng, 7, junk_every=3):
        if env.step(action)[2]:
            env.reset(seed=5, options={"task_id": 5})
    clone = pickle.loads(pickle.dumps(env))
    for action in action_stream(env, np.random.default_rng(2), 30, junk_every=3):
        a, b = env.step(action), clone.step(action)
        assert a == b
        if a[2]:
            assert env.reset(seed=6, options={"task_id": 9}) == clone.reset(
                seed=6, options={"task_id": 9}
            )


@pytest.mark.parametrize("env_id", ENV_IDS)
@given(text=st.text(max_size=600))
@example(text="")
@example(text=" \t\n ")
@example(text="\x00\x1b[31m\r")
@example(text="Action: ✓ 日本語 🚀")
@example(text="up" * 2000)
def test_any_string_is_accepted(env_id, text):
    env = _fuzz_env(env_id)
    env.reset(seed=0, options={"task_id": 2})
    observation, reward, _, truncated, info = env.step(text)
    assert env.observation_space.contains(observation)
    assert truncated is False
    assert reward in (0.0, 1.0)
    assert info["valid_action"] in (True, False)
    if len(text) > env.action_space.max_length:
        assert info["valid_action"] is False


_FUZZ_ENVS: dict[str, TextEnv] = {}


def _fuzz_env(env_id: str) -> TextEnv:
    # Building an env per example would dominate the fuzz time.
    if env_id not in _FUZZ_ENVS:
        _FUZZ_ENVS[env_id] = make_unwrapped(env_id)
    return _FUZZ_ENVS[env_id]


@pytest.mark.parametrize("bad", [3, None, b"up", ["up"], 1.5])
def test_non_str_action_raises_type_error(env_id, bad):
    env = make_unwrapped(env_id)
    env.reset(seed=0, options={"task_id": 0})
    with pytest.raises(TypeError, match="str"):
        env.step(bad)


def test_invalid_action_leaves_state_unchanged(env_id):
    env = make_unwrapped(env_id)
    env.reset(seed=0, options={"task_id": 6})
    before = (env._view(), env.oracle_turns(), env.admissible_actions())
    _, reward, terminated, _, info = env.step("zzz not an action zzz")
    assert info["valid_action"] is False
    assert reward == 0.0 and terminated is False
    assert (env._view(), env.oracle_turns(), env.admissible_actions()) == before


@pytest.mark.parametrize("bad", [-1, 2**31, "3", 2.0, True])
def test_bad_task_id_is_a_clear_error(env_id, bad):
    env = make_unwrapped(env_id)
    with pytest.raises((TypeError, ValueError), match="task_id"):
        env.reset(seed=0, options={"task_id": bad})


def _fingerprint(env, task_id: int) -> tuple:
    """What identifies a task: its reset view and the oracle's path through it."""
    observation, _ = env.reset(seed=0, options={"task_id": task_id})
    trail = [observation, env.oracle_turns()]
    for _ in range(4):
        oracle = env.oracle_actions()
        if not oracle:
            break
        step = env.step(oracle[0])
        trail.append(step[0])
        if step[2]:
            break
    return tuple(trail)


def test_task_id_fixes_the_instance_whatever_the_seed(env_id):
    env = make_unwrapped(env_id)
    for task_id in (0, 17):
        obs_a, _ = env.reset(seed=1, options={"task_id": task_id})
        turns_a = env.oracle_turns()
        obs_b, _ = env.reset(seed=999, options={"task_id": task_id})
        assert obs_a == obs_b
        assert turns_a == env.oracle_turns()


def test_task_ids_give_varied_instances(env_id):
    env = make_unwrapped(env_id)
    prints = {_fingerprint(env, task_id) for task_id in range(12)}
    assert len(prints) >= 6


def test_task_without_id_comes_from_the_seed(env_id):
    env = make_unwrapped(env_id)
    _, info_a = env.reset(seed=21)
    _, info_b = env.reset(seed=21)
    _, info_c = env.reset(seed=22)
    assert info_a["task_id"] == info_b["task_id"] != info_c["task_id"]


def test_oracle_solves_in_exactly_oracle_turns(env_id):
    env = make_unwrapped(env_id)
    if env.stochastic:
        pytest.skip("the oracle path is replayed exactly only in deterministic envs")
    for task_id in range(50):
        _, info = env.reset(seed=task_id, options={"task_id": task_id})
        expected = env.oracle_turns()
        assert isinstance(expected, int) and expected >= 1, (task_id, expected)
        for turn in range(1, expected + 1):
            actions = env.oracle_actions()
            assert actions, f"task {task_id}: no oracle action at turn {turn}"
            assert set(actions) <= set(env.admissible_actions())
            _, reward, terminated, truncated, info = env.step(actions[0])
            assert info["valid_action"] is True
            assert not truncated
            assert env.oracle_turns() == expected - turn
            if turn < expected:
                assert (reward, terminated, info["success"]) == (0.0, False, False)
        assert (reward, terminated, info["success"]) == (1.0, True, True), task_id
        assert env.oracle_actions() == []


def test_reward_is_one_exactly_on_success(env_id):
    env = make_unwrapped(env_id)
    rng = np.random.default_rng(7)
    for task_id in range(5):
        env.reset(seed=task_id, options={"task_id": task_id})
        for action in action_stream(env, rng, 60):
            _, reward, terminated, truncated, info = env.step(action)
            assert reward == (1.0 if info["success"] else 0.0)
            assert not truncated
            if info["success"]:
                assert terminated
            if terminated:
                break


def _documented_info_keys(cls: type) -> set[str]:
    """The ``lowercase`` keys in the docstring's ``## Information`` section."""
    doc = cls.__doc__ or ""
    match = re.search(r"## Information\n(.*?)(?:\n\s*## |\Z)", doc, re.S)
    assert match, f"{cls.__name__} has no '## Information' section"
    return set(re.findall(r"``([a-z][a-z0-9_]*)``", match.group(1)))


def test_docstring_lists_exactly_the_info_keys(env_id):
    env = make_unwrapped(env_id)
    cls = type(env)
    for section in (
        "## Description",
        "## Action Space",
        "## Observation Space",
        "## Starting State",
        "## Rewards",
        "## Episode End",
        "## Information",
        "## Arguments",
        "## Version History",
    ):
        assert section in (cls.__doc__ or ""), f"{cls.__name__} docstring lacks {section}"
    emitted = set(env.reset(seed=0, options={"task_id": 0})[1])
    rng = np.random.default_rng(0)
    for action in action_stream(env, rng, 20):
        emitted |= set(env.step(action)[-1])
    assert _documented_info_keys(cls) == emitted


def test_a_finite_task_supply_is_declared_documented_and_true(env_id):
    env = make_unwrapped(env_id)
    supply = env.task_supply
    if supply is None:
        return
    assert isinstance(supply, int) and supply >= 1
    assert "## Task supply" in (type(env).__doc__ or ""), f"{type(env).__name__} hides its supply"
    if supply <= 300:  # small enough to enumerate: the ids give at most that many instances
        tasks = {pickle.dumps(env._make_task(i, env._task_generator(i))) for i in range(2 * supply)}
        assert len(tasks) <= supply


def test_the_parse_memo_is_invisible(env_id):
    # step memoises parse_action on the raw text, which is only sound if every
    # family's parser ignores the state: replaying each action's text later, in
    # other states, through the memo must match an env whose memo is emptied.
    memo, fresh = make_unwrapped(env_id), make_unwrapped(env_id)
    rng = np.random.default_rng(3)
    for task_id in (0, 1):
        results = [env.reset(seed=task_id, options={"task_id": task_id}) for env in (memo, fresh)]
        assert results[0] == results[1]
        seen: list[str] = []
        for action in action_stream(memo, rng, 30):
            seen.append(action)
            for text in (action, seen[int(rng.integers(len(seen)))]):
                fresh._moves.clear()
                results = [env.step(text) for env in (memo, fresh)]
                assert results[0] == results[1], text
                if results[0][2]:
                    break
            if results[0][2]:
                break


def test_the_parse_memo_stays_bounded():
    env = make_unwrapped("agent_envs/GuessNumber-v0")
    env.reset(seed=0, options={"task_id": 0})
    for number in range(5000):
        assert env.step(f"nonsense {number}")[-1]["valid_action"] is False
    assert len(env._moves) == 4096
    assert env.step("37")[-1]["valid_action"] is True  # a full memo still parses
    assert "37" not in env._moves
    long = "1" * (env.action_space.max_length + 1)
    observation, *_, info = env.step(long)
    assert info["valid_action"] is False and "longer than" in observation
    assert long not in env._moves  # over-long text is never kept
