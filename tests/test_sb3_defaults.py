"""Tuned per-env defaults: TrainConfig and train-sb3 learn without an expert's flags."""

from __future__ import annotations

import json
import pathlib
import re
from collections import Counter

import gymnasium as gym
import pytest

pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

import agent_envs
from agent_envs.evaluation import evaluate
from baselines.sb3.agent import SB3Agent, read_sidecar
from baselines.sb3.defaults import FALLBACKS, TUNED_FILE, compact_encoding, tuned
from baselines.sb3.env import TrainConfig, make_env
from baselines.sb3.train import COMMAND, MODEL, main, train
from baselines.simple_agents import RandomAgent
from wrappers import TextEncoder
from wrappers.protocol import CompactView

gym.register_envs(agent_envs)

LAKE = "agent_envs/FrozenLake-v0"
TUNED_ENVS = [env_id for env_id in json.loads(TUNED_FILE.read_text()) if "/" in env_id]


def _cli_config(*flags: str) -> TrainConfig:
    return COMMAND.configs(COMMAND.parse([LAKE, *flags]))[0]


# ------------------------------------------------------------- the table
@pytest.mark.parametrize("env_id", TUNED_ENVS)
def test_every_tuned_entry_builds_its_training_stack(env_id):
    for algo in json.loads(TUNED_FILE.read_text())[env_id]:
        config = TrainConfig(env_id, algo=algo)
        assert set(config.tuned) == set(tuned(env_id, algo)) & set(FALLBACKS)
        env = make_env(config)
        observation, _ = env.reset(seed=0)
        assert env.observation_space.contains(observation)
        env.close()


def test_a_setting_given_in_python_replaces_the_tuned_one():
    config = TrainConfig(LAKE, net_arch=(32,), algo_kwargs={"n_steps": 64}, bc_episodes=0)
    assert config.net_arch == (32,) and config.algo_kwargs == {"n_steps": 64}
    assert config.bc_episodes == 0
    assert {"net_arch", "algo_kwargs", "bc_episodes"}.isdisjoint(config.tuned)
    assert config.encoding == compact_encoding(LAKE) and "encoding" in config.tuned


def test_an_env_without_a_tuned_entry_gets_the_generic_defaults_and_its_compact_view():
    config = TrainConfig("agent_envs/Sokoban-8x8-v0", algo="a2c")
    assert config.tuned == ()
    assert config.net_arch == FALLBACKS["net_arch"] and config.bc_episodes == 0
    assert config.encoding["charset"] == "#_OXVPS" and config.encoding["view_only"]


def test_a_budget_mix_is_not_overridden_by_the_tuned_budget():
    config = TrainConfig(LAKE, budget_mix=(4, 8))
    assert config.budget is None and config.training_budgets() == (4, 8)


# --------------------------------------------------------- the command line
def test_flags_are_laid_over_the_tuned_settings():
    config = _cli_config("--algo-kwargs", '{"n_steps": 64}', "--max-length", "40")
    assert config.algo_kwargs == {**tuned(LAKE, "maskable_ppo")["algo_kwargs"], "n_steps": 64}
    assert config.encoding == {**compact_encoding(LAKE), "max_length": 40}
    hashed = _cli_config("--encoding", "hashing", "--dim", "64")
    assert hashed.encoding == {"mode": "hashing", "dim": 64}
    assert _cli_config("--bc-episodes", "0").bc_episodes == 0


def test_train_sb3_prints_and_saves_the_resolved_settings(tmp_path, capsys):
    assert main([LAKE, "--quick", "--no-eval", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "* = tuned" in printed and "warm start from the oracle: ON" in printed
    config = read_sidecar(tmp_path / "model" / "model.zip")["config"]
    assert "bc_episodes" in config["tuned"] and config["encoding"] == compact_encoding(LAKE)
    assert config["net_arch"] == tuned(LAKE, "maskable_ppo")["net_arch"]


def test_the_benchmark_scripts_load_the_model_where_train_sb3_saves_it():
    """benchmarks/sb3_defaults.py and train_sb3_recipe.py read the model from its model/ folder.

    They once read ``OUT/model.zip``, where train-sb3 no longer writes, and so
    failed after minutes of training; the run above checks where it writes.
    """
    root = pathlib.Path(__file__).resolve().parents[1]
    for name in ("sb3_defaults.py", "train_sb3_recipe.py"):
        source = (root / "benchmarks" / name).read_text(encoding="utf-8")
        loads = re.findall(r'Path\(folder\)([^\n]*?)"model\.zip"', source)
        assert loads == [" / MODEL / "], (name, loads)
    assert MODEL == "model/"


# ---------------------------------------------------------- compact views
@pytest.mark.parametrize(
    "env_id",
    ["agent_envs/FrozenLake-8x8-v0", "agent_envs/Sokoban-v0", "agent_envs/GuessNumber-v0",
     "agent_envs/Hanoi-4-v0", "agent_envs/Maze-7x7-v0"],
)  # fmt: skip
def test_the_compact_view_keeps_every_state_character_of_the_view(env_id):
    env = gym.make(env_id)
    assert isinstance(env.unwrapped, CompactView)
    settings = env.unwrapped.compact_view()
    encoder = TextEncoder("chars", **settings)
    charset = set(settings["charset"])
    for task_id in range(10):
        observation, _ = env.reset(seed=task_id, options={"task_id": task_id})
        for turn in range(6):
            view = observation.rsplit("\n\n", 1)[-1]
            kept = encoder.select(observation)
            assert Counter(c for c in kept if c in charset) == Counter(
                c for c in view if c in charset
            )
            moves = env.unwrapped.admissible_actions()
            observation, _, terminated, _, _ = env.step(moves[turn % len(moves)])
            if terminated:
                break


# ---------------------------------------------------------------- learning
def test_the_python_defaults_learn_the_deterministic_lake(tmp_path):
    """The tuned defaults beat random by 0.2 Pass@(1,12) on 30 tasks, greedily."""
    config = TrainConfig(LAKE, algo="maskable_ppo", timesteps=12_000, budget=12, seed=0, n_envs=4)
    agent = SB3Agent(str(train(config, tmp_path)), deterministic=True)
    grid = {"ks": [1], "budgets": [12], "tasks": 30, "samples": 1, "diagnostics": False}
    trained = evaluate(agent, LAKE, **grid).pass_at(1, 12)
    random = evaluate(RandomAgent(), LAKE, **grid).pass_at(1, 12)
    assert trained >= random + 0.2
