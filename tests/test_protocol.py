"""The contract in code: key constants, the oracle and policy Protocols, the validators."""

from __future__ import annotations

import ast
import pathlib

import gymnasium as gym
import numpy as np
import pytest

import agent_envs
import wrappers.protocol
from agent_envs import protocol
from agent_envs.envs.guess_number import GuessNumberEnv
from wrappers.utils.validators import (
    check_bool,
    check_budget,
    check_grid,
    check_int,
    check_number,
    check_probability,
    parse_float_list,
    parse_int_list,
)

ROOT = pathlib.Path(__file__).resolve().parents[1]
KEYS = {
    name: getattr(wrappers.protocol, name)
    for name in wrappers.protocol.__all__
    if name.isupper() and isinstance(getattr(wrappers.protocol, name), str)
}


def test_each_contract_name_has_one_import_path():
    # The env contract is wrappers.protocol's alone; agent_envs.protocol is the policy's.
    assert not set(wrappers.protocol.__all__) & set(vars(protocol))
    assert not set(protocol.__all__) & set(vars(wrappers.protocol))
    assert set(KEYS.values()) >= {"task_id", "success", "valid_action", "dead_end", "budget"}
    assert len(set(KEYS.values())) == len(KEYS)  # no two constants spell one key


def _key_literals(path: pathlib.Path) -> list[tuple[int, str]]:
    """Return (line, key) for every string constant outside docstrings that spells a key."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    keys = set(KEYS.values())
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in keys
        and id(node) not in docstrings
    ]


# Strings that equal a key but mean something else: a dataclass field of the
# same name, a method name, an OpenAI request field, a name in __all__.
_NOT_KEYS = {
    ("agent_envs/evaluation/episode_record.py", "task_id"),
    ("agent_envs/evaluation/episode_record.py", "budget"),
    ("agent_envs/evaluation/episode_record.py", "success"),
    ("agent_envs/evaluation/__init__.py", "episode_seed"),
    ("wrappers/utils/seeding.py", "episode_seed"),
    ("agent_envs/cli/play.py", "admissible_actions"),
    ("agent_envs/cli/play.py", "oracle_actions"),
    ("baselines/llm/agents/openai_agent.py", "messages"),
}


def test_no_module_spells_an_info_key_as_a_string():
    found, excused = [], set()
    for package in ("agent_envs", "wrappers", "baselines"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative == "wrappers/protocol.py":
                continue
            for line, key in _key_literals(path):
                if (relative, key) in _NOT_KEYS:
                    excused.add((relative, key))
                else:
                    found.append(f"{relative}:{line}: {key!r}")
    assert not found, "use the constants of wrappers.protocol:\n" + "\n".join(found)
    # Each exception is still found: the scan sees keys, and no stale entry hides a new use.
    assert excused == _NOT_KEYS, _NOT_KEYS - excused


def test_every_registered_env_implements_the_whole_oracle_api():
    for env_id in agent_envs.env_ids():
        base = gym.make(env_id).unwrapped
        assert isinstance(base, wrappers.protocol.OracleEnv), env_id


def test_protocols_recognise_shapes_not_base_classes():
    class Echo:
        def act(self, observation, info):
            return observation

    class Batch:
        def act_batch(self, observations, infos):
            return list(observations)

    assert isinstance(Echo(), protocol.Policy) and not isinstance(Echo(), protocol.BatchPolicy)
    assert isinstance(Batch(), protocol.BatchPolicy) and not isinstance(Batch(), protocol.Policy)
    assert not isinstance(gym.make("CartPole-v1").unwrapped, wrappers.protocol.Oracle)
    wanted = {
        wrappers.protocol.ADMISSIBLE_ACTIONS,
        wrappers.protocol.ORACLE_ACTIONS,
        wrappers.protocol.ENV_ID,
    }
    assert wanted == protocol.REQUIRED_INFO_KEYS


def test_parse_action_compares_spellings_of_one_move():
    env = GuessNumberEnv()
    assert env.parse_action("Action: guess 50") == env.parse_action("50") == 50
    assert env.parse_action("fifty") is None


# ------------------------------------------------------------------ validators
@pytest.mark.parametrize(
    ("value", "bounds", "error", "message"),
    [
        (True, (), TypeError, "seed must be an int, got bool True"),
        (2.0, (1,), TypeError, "seed must be an int >= 1, got float 2.0"),
        ("3", (), TypeError, "got str '3'"),
        (0, (1,), ValueError, "seed must be an int >= 1, got 0"),
        (13, (1, 12), ValueError, r"seed must be an int in \[1, 12\], got 13"),
    ],
)
def test_check_int_says_what_to_pass(value, bounds, error, message):
    with pytest.raises(error, match=message):
        check_int(value, "seed", *bounds)


def test_check_int_accepts_numpy_integers_and_returns_python_ints():
    value = check_int(np.int64(4), "n", 1)
    assert value == 4 and type(value) is int
    assert check_budget(np.int32(3)) == 3


def test_numbers_bools_and_probabilities():
    assert check_number(np.float32(0.5), "x") == 0.5
    assert check_probability(1, "p") == 1.0
    assert check_bool(False, "flag") is False
    with pytest.raises(ValueError, match=r"p must be a number in \[0, 1\]"):
        check_probability(1.5, "p")
    with pytest.raises(ValueError, match="finite"):
        check_number(float("inf"), "x")
    with pytest.raises(ValueError, match=r"gamma must be a number in \(0, 1\]"):
        check_number(0.0, "gamma", 0.0, 1.0, open_low=True)
    with pytest.raises(TypeError, match="flag must be a bool"):
        check_bool(1, "flag")


def test_grids_and_comma_lists():
    assert check_grid(5, "T") == (5,)
    assert check_grid(range(3, 0, -1), "T") == (1, 2, 3)
    with pytest.raises(ValueError, match="must not be empty"):
        check_grid([], "T")
    assert parse_int_list("0,1", "--seeds", minimum=0) == (0, 1)
    assert parse_float_list("1, 2.5", "--weights") == (1.0, 2.5)
    for bad in ("", "a,b", " , "):
        with pytest.raises(ValueError, match="--t takes comma-separated integers"):
            parse_int_list(bad, "--t")
    with pytest.raises(ValueError, match="every value of --t must be an int >= 1, got 0"):
        parse_int_list("0,5", "--t")
    with pytest.raises(ValueError, match="--weights takes comma-separated numbers"):
        parse_float_list("x", "--weights")
