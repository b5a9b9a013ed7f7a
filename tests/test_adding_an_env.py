"""docs/adding_an_env.md stays true: its example family runs and passes the conformance suite."""

from __future__ import annotations

import importlib
import os
import pathlib
import re
import subprocess
import sys

import gymnasium as gym
import pytest

from tests import test_env_conformance as conformance

ROOT = pathlib.Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "adding_an_env.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", GUIDE, re.S)
MODULE = next(block for block in BLOCKS if block.startswith("# file: "))
TRY_IT = next(block for block in BLOCKS if block.startswith("# try it"))
ENV_ID = "guide/DialLock-v0"


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    folder = tmp_path_factory.mktemp("guide")
    (folder / "guide_dial_lock.py").write_text(MODULE)
    # Imported by name, as a user's own module is: pickling the env needs that.
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module("guide_dial_lock")
    finally:
        sys.path.remove(str(folder))
    gym.register(ENV_ID, entry_point=module.DialLockEnv, max_episode_steps=None)
    yield module
    gym.registry.pop(ENV_ID)
    sys.modules.pop("guide_dial_lock")


CHECKS = [
    conformance.test_check_env_passes_without_warnings,
    conformance.test_render_ansi_returns_text,
    conformance.test_spaces_are_text_with_min_length_zero,
    conformance.test_determinism_over_mixed_actions,
    conformance.test_pickled_env_continues_identically,
    conformance.test_invalid_action_leaves_state_unchanged,
    conformance.test_task_id_fixes_the_instance_whatever_the_seed,
    conformance.test_task_ids_give_varied_instances,
    conformance.test_task_without_id_comes_from_the_seed,
    conformance.test_oracle_solves_in_exactly_oracle_turns,
    conformance.test_reward_is_one_exactly_on_success,
    conformance.test_docstring_lists_exactly_the_info_keys,
    conformance.test_a_finite_task_supply_is_declared_documented_and_true,
    conformance.test_the_parse_memo_is_invisible,
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_the_guides_family_passes_the_conformance_suite(registered, check):
    check(ENV_ID)


@pytest.mark.parametrize("bad", [-1, 2**31, "3", 2.0, True])
def test_the_guides_family_refuses_bad_task_ids(registered, bad):
    conformance.test_bad_task_id_is_a_clear_error(ENV_ID, bad)


def test_the_guides_family_accepts_any_string(registered):
    env = gym.make(ENV_ID).unwrapped
    env.reset(seed=0, options={"task_id": 0})
    texts = {"": False, "Action: DIAL 1 UP": True, "dial 9 up": False, "dial x up": False}
    for text, valid in {**texts, "\x00" * 300: False}.items():
        observation, _, _, truncated, info = env.step(text)
        assert env.observation_space.contains(observation) and not truncated
        assert info["valid_action"] is valid, text


def test_the_guides_try_it_block_runs(tmp_path):
    script = tmp_path / "try_it.py"
    script.write_text(MODULE + "\n\n" + TRY_IT)
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Dial") and "Dials:" in done.stdout
