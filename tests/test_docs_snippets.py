"""The docs' Python snippets run as written (issue 32, item 1).

Each ``python`` block of the pages below is either run here, in a fresh
interpreter, with a prelude for the names the page defines in its prose and
a postlude that checks what the page says the snippet gives, or listed in
``ELSEWHERE`` with the test that runs it or the reason it cannot run offline.
A new block that is in neither fails the test, so no snippet goes untried.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PRELUDE = """
import warnings
warnings.simplefilter("error", FutureWarning)   # snippets must not lean on the old default
warnings.filterwarnings("ignore", "EncodeObservation now encodes", FutureWarning)
import gymnasium as gym
import agent_envs
from wrappers import DiscreteActions, EncodeObservation, TurnBudget
ENV_ID = "agent_envs/FrozenLake-v0"
"""

#: (page, a string unique to the block) -> (extra prelude, postlude that checks it).
RUN = {
    ("docs/integrations.md", "env = ActionMasker("): (
        "",
        "assert env.observation_space.nvec.sum() == 217   # the compact view\n"
        "from sb3_contrib import MaskablePPO\n"
        "model = MaskablePPO('MlpPolicy', env, n_steps=32, batch_size=16, n_epochs=1, seed=0)\n"
        "model.learn(32)\n",
    ),
    ("docs/integrations.md", 'torchrl_env("agent_envs/FrozenLake-v0"'): (
        "",
        "assert env.observation_spec['observations'].shape[-1] == 217\n"
        "assert rollout['action_mask'].shape[-1] == 4\n",
    ),
    ("docs/integrations.md", 'gym.make_vec("agent_envs/Sokoban-v0"'): (
        "",
        "observations, _ = envs.reset(seed=0)\n"
        "assert all(text.strip() for text in observations)\nenvs.close()\n",
    ),
    ("docs/classic_rl.md", "env = TaskPool(env, range(1000"): (
        "",
        "observation, _ = env.reset(seed=0)\nassert env.observation_space.contains(observation)\n",
    ),
}

#: Blocks run by another test, or that cannot run here, with where or why.
ELSEWHERE = {
    ("docs/integrations.md", "ppo_config(\"agent_envs/FrozenLake-v0\""):
        "starts Ray for a minute: benchmarks/rllib_iteration.py runs this config; "
        "tests/test_integrations_rl.py trains through ppo_config",
    ("docs/integrations.md", "args=GRPOConfig(num_generations=4, max_tool_calling"):
        "a fragment (model, tokenizer, ...): tests/test_integrations_trl.py runs the recipe",
    ("docs/integrations.md", "warm_start_tool_calls(model, tokenizer, ENV_ID"):
        "needs a model: tests/test_integrations_trl.py runs this recipe on the tiny model",
    ("docs/integrations.md", "with GenericEnvClient(base_url="):
        "needs a server: tests/test_integrations_openenv.py plays it with this client",
    ("docs/integrations.md", "class RemoteEpisode:"):
        "tests/test_integrations_openenv.py executes this block against the server",
    ("docs/classic_rl.md", "SB3Agent(path=\"runs/lake-mix/model/model.zip\""):
        "needs a trained model: tests/test_sb3.py evaluates SB3Agent from train-sb3's folder",
}  # fmt: skip


def _blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), re.S)


def _find(page: str, marker: str) -> str:
    found = [block for block in _blocks(page) if marker in block]
    assert len(found) == 1, f"{page}: {len(found)} python blocks contain {marker!r}"
    return found[0]


@pytest.mark.parametrize("page", sorted({page for page, _ in (*RUN, *ELSEWHERE)}))
def test_every_python_block_is_run_or_accounted_for(page):
    markers = [marker for known, marker in (*RUN, *ELSEWHERE) if known == page]
    for block in _blocks(page):
        assert any(marker in block for marker in markers), f"{page}: untried block\n{block}"


@pytest.mark.parametrize("key", sorted(RUN), ids=lambda key: f"{key[0]}:{key[1][:24]}")
def test_snippet_runs_as_written(key, tmp_path):
    page, marker = key
    extra, postlude = RUN[key]
    if "torchrl" in marker:
        pytest.importorskip("torchrl")
    script = tmp_path / "snippet.py"
    script.write_text(PRELUDE + extra + _find(page, marker) + "\n" + postlude)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, f"{page} block {marker!r} failed:\n{done.stderr[-3000:]}"
