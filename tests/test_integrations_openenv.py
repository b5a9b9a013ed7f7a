"""OpenEnv: a registered id served under its budget, played by OpenEnv's own client on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import gymnasium as gym
import pytest

from agent_envs.env_stack import BudgetRegime
from wrappers import TurnBudget
from wrappers.protocol import BUDGET, SUCCESS, TASK_ID, VALID_ACTION

pytest.importorskip("openenv.core")
uvicorn = pytest.importorskip("uvicorn")
from openenv.core import GenericEnvClient  # noqa: E402

from agent_envs.integrations.openenv import create_app  # noqa: E402

ENV_ID = "agent_envs/GuessNumber-v0"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _Server:
    """An OpenEnv app on a free 127.0.0.1 port, in a thread, for the length of a test."""

    def __init__(self, app) -> None:
        self.port = _free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def url():
    with _Server(create_app(ENV_ID, regime=20, client_budgets=(1, 20))) as base_url:
        yield base_url


def test_reset_takes_seed_task_and_budget_and_steps_match_the_local_env(url):
    local = TurnBudget(gym.make(ENV_ID), 20)
    expected, info = local.reset(seed=3, options={TASK_ID: 11, BUDGET: 9})
    with GenericEnvClient(base_url=url).sync() as env:
        result = env.reset(seed=3, task_id=11, budget=9)
        assert result.observation["text"] == expected
        assert result.observation["info"] == info and info[BUDGET] == 9
        assert env.state()[TASK_ID] == 11 and env.state()[BUDGET] == 9
        while True:  # the oracle's moves, sent through the server, in lockstep with the local env
            action = local.unwrapped.oracle_actions()[0]
            expected, reward, terminated, truncated, info = local.step(action)
            result = env.step({"action": action})
            assert result.observation["text"] == expected
            assert result.observation["info"] == info
            assert result.reward == reward
            if terminated or truncated:
                break
        assert result.done and result.observation["success"] and info[SUCCESS]
        assert result.observation["terminated"] and not result.observation["truncated"]
        with pytest.raises(Exception, match="call reset first"):
            env.step({"action": "50"})


def test_running_out_of_turns_is_truncated_not_lost_in_done(url):
    with GenericEnvClient(base_url=url).sync() as env:
        env.reset(seed=0, task_id=4, budget=2)
        first = env.step({"action": "not a number"})
        assert not first.done and first.observation["info"][VALID_ACTION] is False
        last = env.step({"action": "not a number"})
        assert last.done and last.reward == 0.0
        assert last.observation["truncated"] and not last.observation["terminated"]
        assert not last.observation["success"] and last.observation["info"]["turns_left"] == 0


@pytest.fixture
def mix_url():
    with _Server(create_app(ENV_ID, regime=BudgetRegime.mixed([3, 5, 7, 9]))) as base_url:
        yield base_url


def test_a_budget_mix_draws_per_episode_reproducibly(mix_url):
    with GenericEnvClient(base_url=mix_url).sync() as env:
        drawn = [env.reset(seed=seed).observation["info"][BUDGET] for seed in range(12)]
        again = [env.reset(seed=seed).observation["info"][BUDGET] for seed in range(12)]
    assert drawn == again and set(drawn) <= {3, 5, 7, 9} and len(set(drawn)) > 1


def test_cli_serve_round_trip_and_usage_errors():
    command = [sys.executable, "-c", "from agent_envs.cli import main; raise SystemExit(main())"]
    bad = subprocess.run(
        [*command, "serve", "agent_envs/Nope-v0"], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "Nope" in bad.stderr.splitlines()[-1]
    port = _free_port()
    server = subprocess.Popen(
        [*command, "serve", ENV_ID, "--port", str(port), "--budget-mix", "4,8"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert "Serving agent_envs/GuessNumber-v0" in server.stdout.readline()
        result = None
        for _ in range(600):  # wait (up to a minute) for the port to open
            try:
                with GenericEnvClient(base_url=f"http://127.0.0.1:{port}").sync() as env:
                    result = env.reset(seed=1, task_id=2)
                break
            except Exception:
                time.sleep(0.1)
        assert result is not None and result.observation["info"][BUDGET] in (4, 8)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _documented_remote_episode(url: str) -> type:
    """The ``RemoteEpisode`` class of docs/integrations.md, pointed at ``url``."""
    import pathlib
    import re

    doc = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "integrations.md").read_text()
    section = doc.split("### Consuming the server from TRL", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "docs/integrations.md", "exec"), namespace)  # the doc's own code
    namespace["SERVER"] = url  # the one line a user edits
    return namespace["RemoteEpisode"]


def test_the_documented_trl_class_plays_the_server(url):
    from transformers.utils import get_json_schema

    episode = _documented_remote_episode(url)()
    try:
        assert get_json_schema(episode.act)["function"]["name"] == "act"
        assert episode.reset(task_id=519).startswith("I am thinking")  # secret 50
        assert "correct" in episode.act("50") and episode.get_reward() == 1.0
        assert episode.act("50") == "The episode is over."
        episode.reset(task_id=3)
        for _ in range(20):  # the server's budget (20) ends the episode
            episode.act("not a number")
        assert episode.over and episode.get_reward() == 0.0
        assert episode.act("1") == "The episode is over."
    finally:
        episode.client.close()
