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

from agent_envs.conformance import CHECKS

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


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_the_guides_family_passes_the_conformance_suite(registered, check):
    check(ENV_ID)


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
