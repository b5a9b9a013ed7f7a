"""One SB3 pipeline: the training stack and SB3Agent share encoder, masks and budget.

Also the pieces the BudgetMix study v2 needs: the turns left as a number,
truncation as termination, fresh held-out-safe tasks, the behaviour-cloning
warm start, a readable default T grid and a small model.zip.
"""

from __future__ import annotations

import zipfile

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

import agent_envs
from agent_envs.evaluation import evaluate
from baselines.sb3.agent import SB3Agent
from baselines.sb3.env import TrainConfig, make_env, stack_settings
from baselines.sb3.sidecar import STACK_SETTINGS_KEYS, read_sidecar
from baselines.sb3.train import default_eval_budgets, train
from baselines.simple_agents import RandomAgent
from tests.sb3_fixtures import word_tokenizer
from wrappers import TaskPool, TextEncoder, TruncationIsTerminal, TurnBudget, action_mask

gym.register_envs(agent_envs)

LAKE = "agent_envs/FrozenLake-v0"
LAKE_ENCODING = {"mode": "chars", "view_only": True, "charset": "FHSG@", "max_length": 60}


def _lake_config(**changes) -> TrainConfig:
    settings = {
        "env_id": LAKE, "algo": "maskable_ppo", "timesteps": 0, "budget": 12,
        "visible_budget": True, "budget_feature": True, "truncation_terminal": True,
        "n_envs": 2, "train_first": 1000, "encoding": LAKE_ENCODING,
        "algo_kwargs": {"n_steps": 32}, "net_arch": (128, 128),
    }  # fmt: skip
    return TrainConfig(**{**settings, **changes})


# ------------------------------------------------------------ budget feature
def test_the_turns_left_are_a_number_at_the_end_of_the_vector():
    env = make_env(_lake_config(budget_mix=(4, 12), budget=None))
    observation, _ = env.reset(seed=0, options={"budget": 12})
    assert env.observation_space.contains(observation)
    assert observation[-1] == pytest.approx(1.0)  # 12 of scale 12
    observation, *_ = env.step(0)
    assert observation[-1] == pytest.approx(11 / 12)
    observation, _ = env.reset(seed=0, options={"budget": 4})
    assert observation[-1] == pytest.approx(4 / 12)


def test_the_budget_line_is_dropped_so_the_view_keeps_its_positions():
    encoder = TextEncoder("chars", max_length=8, charset="ab", budget_scale=20)
    nine = encoder.encode("ab\n[Turns left: 9 of 20]", turns_left=9)
    ten = encoder.encode("ab\n[Turns left: 10 of 20]", turns_left=10)
    assert np.array_equal(nine[:-1], ten[:-1]) and nine[-1] == pytest.approx(9 / 20)
    with pytest.raises(ValueError, match="needs turns_left"):
        encoder.encode("ab")
    with pytest.raises(ValueError, match="budget_scale needs mode"):
        TextEncoder("tokens", tokenizer=None, budget_scale=5)


def test_the_agent_sees_the_maze_heading_exactly_as_the_training_stack(tmp_path):
    encoding = {"mode": "chars", "view_only": True, "keep": "head", "max_length": 72,
                "charset": "abcdefghijklmnopqrstuvwxyz", "feedback_length": 16}  # fmt: skip
    config = _lake_config(env_id="agent_envs/Maze-7x7-v0", budget=40, encoding=encoding)
    agent = SB3Agent(str(train(config, tmp_path)))
    assert agent.settings["encoding"]["feedback_length"] == 16
    stack = make_env(config)
    text_env = TurnBudget(gym.make(config.env_id), 40, visible=True)
    observation, _ = stack.reset(seed=0, options={"task_id": 5})
    text, text_info = text_env.reset(seed=0, options={"task_id": 5})
    for _ in range(6):
        assert np.array_equal(agent._shared.encoder.encode(text, text_info["turns_left"]),
                              observation)  # fmt: skip
        move = text_env.unwrapped.admissible_actions()[0]
        observation, *_ = stack.step(stack.get_wrapper_attr("index_of")(move))
        text, _, _, _, text_info = text_env.step(move)


def test_the_budget_feature_needs_the_budget_visible():
    with pytest.raises(ValueError, match="budget_feature needs visible_budget"):
        TrainConfig(env_id=LAKE, budget_feature=True)


# ------------------------------------------------------------- truncation
def test_truncation_is_terminal_when_asked():
    config = _lake_config(budget=2)
    for terminal in (True, False):
        env = make_env(_lake_config(budget=2, truncation_terminal=terminal))
        for task_id in range(50):
            env.reset(seed=0, options={"task_id": task_id})
            off_lake = np.flatnonzero(~env.get_wrapper_attr("action_masks")())
            if off_lake.size:
                break
        # A move off the lake wastes the turn safely, so the budget runs out.
        env.step(int(off_lake[0]))
        *_, terminated, truncated, info = env.step(int(off_lake[0]))
        if terminal:
            assert (terminated, truncated, info["truncated_by_budget"]) == (True, False, True)
        else:
            assert (terminated, truncated) == (False, True)
    assert config.truncation_terminal
    wrapped = TruncationIsTerminal(TurnBudget(gym.make(LAKE), 1))
    wrapped.reset(seed=0, options={"task_id": 0})
    *_, terminated, truncated, info = wrapped.step("jump")
    assert terminated and not truncated and "truncated_by_budget" in info


# ------------------------------------------------------------------ tasks
def test_task_pool_draws_fresh_tasks_above_the_held_out_ids():
    env = TaskPool(gym.make(LAKE), range(1000, 2**31 - 1))
    ids = {env.reset(seed=seed)[1]["task_id"] for seed in range(50)}
    assert len(ids) == 50 and min(ids) >= 1000
    assert env.reset(seed=0, options={"task_id": 3})[1]["task_id"] == 3
    with pytest.raises(ValueError, match="non-empty"):
        TaskPool(gym.make(LAKE), range(0))


def test_fresh_training_tasks_come_from_train_first_up():
    env = make_env(_lake_config())
    assert min(env.reset(seed=seed)[1]["task_id"] for seed in range(20)) >= 1000


# -------------------------------------------------------- one SB3 pipeline
@pytest.fixture(scope="module")
def cloned(tmp_path_factory):
    """A MaskablePPO policy warm-started by behaviour cloning only (no PPO steps)."""
    config = _lake_config(bc_episodes=400, bc_epochs=15, budget_mix=(8, 12), budget=None)
    return config, train(config, tmp_path_factory.mktemp("bc"))


def test_behaviour_cloning_beats_random_on_held_out_lakes(cloned):
    _config, path = cloned
    agent = SB3Agent(str(path), deterministic=False)
    grid = {"ks": [1], "budgets": [12], "tasks": list(range(40)), "samples": 2}
    learned = evaluate(agent, LAKE, visible_budget=True, **grid)
    random = evaluate(RandomAgent(), LAKE, **grid)
    assert learned.surface[0, 0] > random.surface[0, 0] + 0.2


def test_the_agent_sees_and_masks_exactly_as_the_training_stack(cloned):
    config, path = cloned
    agent = SB3Agent(str(path))
    env = make_env(config)
    encoded, _info = env.reset(seed=5, options={"task_id": 7, "budget": 8})
    text_env = TurnBudget(gym.make(LAKE), 8, visible=True)
    text, text_info = text_env.reset(seed=5, options={"task_id": 7})
    agent_view = agent._shared.encoder.encode(text, text_info["turns_left"])
    assert np.array_equal(agent_view, encoded)
    admissible = text_env.unwrapped.admissible_actions()
    assert np.array_equal(
        action_mask(agent._shared.index, 4, admissible), env.get_wrapper_attr("action_masks")()
    )


def test_from_model_wraps_a_model_in_memory_and_acts_like_the_saved_one(cloned):
    config, path = cloned
    saved = SB3Agent(str(path))
    stack = make_env(config)
    in_memory = SB3Agent.from_model(saved.model, stack_settings(stack, action_masks=True))
    from_env = SB3Agent.from_model(saved.model, stack)
    sidecar = {key: saved.settings[key] for key in STACK_SETTINGS_KEYS}
    same = SB3Agent.from_model(saved.model, sidecar)
    env = TurnBudget(gym.make(LAKE), 12, visible=True)
    text, info = env.reset(seed=0, options={"task_id": 2})
    info = {**info, "admissible_actions": env.unwrapped.admissible_actions()}
    actions = {agent.act(text, info) for agent in (saved, in_memory, from_env, same)}
    assert len(actions) == 1
    assert in_memory.path is None and in_memory.algo == "maskable_ppo"
    assert in_memory.settings == from_env.settings == same.settings
    assert same.settings == {"algo": "maskable_ppo", **sidecar}


def test_stack_settings_are_read_off_a_built_stack():
    config = _lake_config()
    settings = stack_settings(make_env(config), action_masks=True)
    assert settings["visible_budget"] and settings["action_masks"]
    assert settings["action_vocabulary"] == ["left", "down", "right", "up"]
    assert settings["encoding"]["budget_scale"] == 12
    assert stack_settings(make_env(config))["action_masks"] is False  # masks: default off
    with pytest.raises(ValueError, match="EncodeObservation over DiscreteActions"):
        stack_settings(gym.make(LAKE))


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"visible_budget": None}, ValueError, r"lack \['visible_budget'\]"),
        ({"encoding": "chars"}, TypeError, "encoding must be a dict"),
        ({"action_vocabulary": "left"}, TypeError, "action_vocabulary must be a list of str"),
        ({"action_masks": 1}, TypeError, "action_masks must be a bool"),
        ({"visible_budget": "yes"}, TypeError, "visible_budget must be a bool"),
    ],
)
def test_bad_stack_settings_are_a_one_line_error(change, error, message):
    settings = {**stack_settings(make_env(_lake_config())), **change}
    settings = {key: value for key, value in settings.items() if value is not None}
    with pytest.raises(error, match=message) as caught:
        SB3Agent.from_model(object(), settings)
    assert "\n" not in str(caught.value)
    with pytest.raises(TypeError, match="env_stack_settings must be"):
        SB3Agent.from_model(object(), 42)


def test_a_tokens_encoding_is_loaded_by_name_for_training_and_for_the_agent(tmp_path):
    """The tokenizer name travels in the config and the sidecar; baselines load it."""
    pytest.importorskip("transformers")
    folder, _ = word_tokenizer(tmp_path / "words")
    encoding = {"mode": "tokens", "tokenizer": folder, "max_length": 8}
    config = _lake_config(encoding=encoding, budget_feature=False, bc_episodes=0)
    path = train(config, tmp_path / "run")
    assert read_sidecar(path)["encoding"]["tokenizer"] == folder
    assert read_sidecar(path)["config"]["encoding"]["tokenizer"] == folder
    agent = SB3Agent(str(path))
    stack = make_env(config)
    observation, _ = stack.reset(seed=0, options={"task_id": 3})
    text, _ = TurnBudget(gym.make(LAKE), 12, visible=True).reset(seed=0, options={"task_id": 3})
    assert np.array_equal(agent._shared.encoder.encode(text), observation)
    in_memory = SB3Agent.from_model(agent.model, stack)
    assert in_memory.settings["encoding"] == agent.settings["encoding"]


def test_model_zip_holds_no_optimizer_moments(cloned):
    _, path = cloned
    with zipfile.ZipFile(path) as archive:
        optimizer = archive.getinfo("policy.optimizer.pth").file_size
        policy = archive.getinfo("policy.pth").file_size
    # Adam's two moment estimates per weight would make it about twice the policy.
    assert optimizer < policy / 10


# ------------------------------------------------------------- T grid
def test_default_eval_grid_is_short_and_starts_at_the_shortest_path():
    assert default_eval_budgets((8, 15, 30, 60), shortest=12) == (12, 15, 30, 60, 120)
    assert default_eval_budgets((20,), shortest=6) == (6, 11, 20, 40)
    for training in ((5,), (4, 8, 16, 32, 64, 128, 256), (100,)):
        grid = default_eval_budgets(training, shortest=12)
        assert 4 <= len(grid) <= 6 and min(grid) == 12 and list(grid) == sorted(set(grid))
