"""The design contract, checked for every id registered under ``agent_envs/``.

The checks are the public :mod:`agent_envs.conformance` API, the same that an
env author runs on their own ids; new families are covered automatically:
the tests parametrize over the registry.  The fuzzing of actions is here
(it needs hypothesis).
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agent_envs.conformance import conformance_parameters
from agent_envs.core import TextEnv
from tests.conftest import ENV_IDS, make_unwrapped


def test_registry_is_not_empty():
    assert len(ENV_IDS) >= 1
    assert all(env_id.startswith("agent_envs/") for env_id in ENV_IDS)


@conformance_parameters(ENV_IDS)
def test_the_env_contract(env_id, check):
    check(env_id)


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
