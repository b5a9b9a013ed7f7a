"""Stable-Baselines3 agents: vector envs, learning, save/reload, recurrence and the CLI."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from agent_envs.arguments import UsageError
from agent_envs.evaluation import PerEpisode, evaluate
from baselines.sb3.agent import SB3Agent, algorithm_class, sidecar_path
from baselines.sb3.env import TrainConfig, _EnvFactory, make_env
from baselines.sb3.train import build_parser, main, train
from tests.sb3_fixtures import CorridorEnv, RandomPolicy
from wrappers.action import action_key

CORRIDOR = "sb3_tests/Corridor-v0"
if CORRIDOR not in gym.registry:
    gym.register(CORRIDOR, entry_point=CorridorEnv, kwargs={"length": 8})

CORRIDOR_ENCODING = {"mode": "chars", "view_only": True, "charset": "#.@G", "max_length": 10}
LAKE_ENCODING = {"mode": "chars", "view_only": True, "charset": "FHSG@", "max_length": 48}


def _config(algo: str, timesteps: int, **changes) -> TrainConfig:
    settings = {
        "env_id": CORRIDOR,
        "algo": algo,
        "timesteps": timesteps,
        "budget": 12,
        "n_envs": 4,
        "encoding": CORRIDOR_ENCODING,
        "algo_kwargs": {"n_steps": 64} if algo != "dqn" else {"learning_starts": 100},
        **changes,
    }
    return TrainConfig(**settings)


@pytest.fixture(scope="module")
def corridor_model(tmp_path_factory):
    """A MaskablePPO agent trained briefly on the corridor (fixed seed, one thread)."""
    fast = {"n_steps": 64, "learning_rate": 3e-3, "n_epochs": 10}
    config = _config("maskable_ppo", 4_096, algo_kwargs=fast)
    return train(config, tmp_path_factory.mktemp("maskable"))


# ---------------------------------------------------------------- vector envs
@pytest.mark.parametrize("vec_cls", [DummyVecEnv, SubprocVecEnv])
def test_the_wrapper_stack_runs_under_sb3_vector_envs(vec_cls):
    config = TrainConfig(
        env_id="agent_envs/FrozenLake-v0", budget_mix=(3, 6), budget=None, encoding=LAKE_ENCODING
    )
    vec_env = make_vec_env(_EnvFactory(config), n_envs=2, seed=0, vec_env_cls=vec_cls)
    try:
        observations = vec_env.reset()
        assert observations.shape == (2, 48) and observations.dtype == np.int64
        for _ in range(8):
            masks = np.stack(vec_env.env_method("action_masks"))
            assert masks.shape == (2, 4) and masks.any(axis=1).all()
            actions = np.array([np.flatnonzero(mask)[0] for mask in masks])
            observations, _, _, infos = vec_env.step(actions)
            assert vec_env.observation_space.contains(observations[0])
            assert all(info["valid_action"] for info in infos)
    finally:
        vec_env.close()


# ------------------------------------------------------------------- learning
def test_maskable_ppo_beats_the_random_agent_on_a_small_env(corridor_model):
    grid = {"ks": [1], "budgets": [4], "tasks": 40, "samples": 4, "diagnostics": False}
    with warnings.catch_warnings():
        # A hidden budget: a budget-unaware agent must not be told it read one.
        warnings.filterwarnings("error", message=".*budget is hidden")
        trained = evaluate(SB3Agent(str(corridor_model), deterministic=False), CORRIDOR, **grid)
    random = evaluate(RandomPolicy(), CORRIDOR, **grid)
    assert trained.pass_at(1, 4) >= random.pass_at(1, 4) + 0.3


# ------------------------------------------------------------ save and reload
def test_reloaded_agent_acts_as_the_model_did_in_its_training_stack(corridor_model):
    """The agent sees raw text; the model saw the training stack's arrays: same actions."""
    model = algorithm_class("maskable_ppo").load(str(corridor_model), device="cpu")
    agent = SB3Agent(str(corridor_model), deterministic=True)
    stack = make_env(_config("maskable_ppo", 1))
    text_env = CorridorEnv(length=8)
    for task_id in range(20):
        observation, _ = stack.reset(seed=task_id, options={"task_id": task_id})
        text, _ = text_env.reset(seed=task_id, options={"task_id": task_id})
        for _ in range(6):
            mask = stack.get_wrapper_attr("action_masks")()
            expected, _ = model.predict(observation, deterministic=True, action_masks=mask)
            info = {"admissible_actions": text_env.admissible_actions()}
            action = agent.act(text, info)
            assert action == stack.get_wrapper_attr("action_text")(int(expected))
            observation, _, terminated, truncated, _ = stack.step(int(expected))
            text, *_ = text_env.step(action)
            if terminated or truncated:
                break


def test_sampling_depends_only_on_episode_seed_and_turn(corridor_model):
    first = SB3Agent(str(corridor_model), deterministic=False)
    second = SB3Agent(str(corridor_model), deterministic=False)
    env = CorridorEnv(length=8)
    observations, infos = [], []
    for task_id in range(16):
        text, _ = env.reset(seed=0, options={"task_id": task_id})
        observations.append(text)
        infos.append(
            {"admissible_actions": env.admissible_actions(), "episode_seed": task_id, "turn": 0}
        )
    batched = first.act_batch(observations, infos)
    one_by_one = [second.act(text, info) for text, info in zip(observations, infos, strict=True)]
    assert batched == one_by_one
    assert all(action in ("left", "right") for action in batched)


def test_masked_agent_never_picks_an_inadmissible_action(corridor_model):
    agent = SB3Agent(str(corridor_model), deterministic=False)
    assert agent.required_info == ("admissible_actions",)
    env = CorridorEnv(length=8)
    text, _ = env.reset(seed=0, options={"task_id": 0})
    for seed in range(30):
        info = {"admissible_actions": ["right"], "episode_seed": seed, "turn": 0}
        assert agent.act(text, info) == "right"


def test_agent_loads_through_the_agent_registry(corridor_model):
    from agent_envs.plugins import make_agent

    agent = make_agent("sb3", {"path": str(corridor_model), "deterministic": True})
    assert isinstance(agent, SB3Agent) and agent.algo == "maskable_ppo"


@pytest.mark.parametrize("algo", ["ppo", "a2c", "dqn"])
def test_other_algorithms_train_save_and_act(algo, tmp_path):
    path = train(_config(algo, 256), tmp_path)
    agent = SB3Agent(str(path), deterministic=False)
    assert agent.required_info == ()  # only MaskablePPO was trained with masks
    result = evaluate(agent, CORRIDOR, ks=[1], budgets=[3], tasks=3, diagnostics=False)
    assert result.errors == 0


# ------------------------------------------------------------------ recurrence
def test_recurrent_agent_keeps_one_state_per_episode(tmp_path):
    path = train(_config("recurrent_ppo", 256), tmp_path)
    factory = SB3Agent.factory(str(path), deterministic=True)
    assert isinstance(factory, PerEpisode)
    shared = factory.factory()
    episodes = []
    for task_id in (3, 4):
        env = CorridorEnv(length=8)
        text, _ = env.reset(seed=0, options={"task_id": task_id})
        texts = [text]
        for action in ("right", "left", "right", "right"):
            texts.append(env.step(action)[0])
        episodes.append(texts)
    alone = []
    for index, texts in enumerate(episodes):
        agent = factory.factory()
        alone.append(
            [agent.act(t, {"episode_seed": index, "turn": n}) for n, t in enumerate(texts)]
        )
    interleaved = [
        shared.act_batch(
            [episodes[0][n], episodes[1][n]],
            [{"episode_seed": 0, "turn": n}, {"episode_seed": 1, "turn": n}],
        )
        for n in range(len(episodes[0]))
    ]
    assert [pair[0] for pair in interleaved] == alone[0]
    assert [pair[1] for pair in interleaved] == alone[1]
    result = evaluate(factory, CORRIDOR, ks=[1], budgets=[4], tasks=2, diagnostics=False)
    assert result.errors == 0


def test_recurrent_state_restarts_at_turn_zero(tmp_path):
    path = train(_config("recurrent_ppo", 256), tmp_path)
    agent = SB3Agent(str(path), deterministic=True)
    agent.act("#@......G#", {"episode_seed": 5, "turn": 0})
    agent.act("#.@.....G#", {"episode_seed": 5, "turn": 1})
    key = (5, None)
    assert list(agent._lstm) == [key]
    h_before = agent._lstm[key][0].copy()
    agent.act("#@......G#", {"episode_seed": 5, "turn": 0})
    fresh = SB3Agent(str(path), deterministic=True)
    fresh.act("#@......G#", {"episode_seed": 5, "turn": 0})
    assert np.array_equal(agent._lstm[key][0], fresh._lstm[key][0])
    assert not np.array_equal(h_before, fresh._lstm[key][0])


# ----------------------------------------------------------------------- budget
def test_visible_budget_agent_appends_the_budget_line(tmp_path):
    path = train(_config("ppo", 128, visible_budget=True), tmp_path)
    agent = SB3Agent(str(path))
    assert agent.visible_budget
    info = {"budget": 9, "turns_left": 4}
    assert agent._visible("view", info) == "view\n[Turns left: 4 of 9]"
    assert agent._visible("view\n[Turns left: 4 of 9]", info) == "view\n[Turns left: 4 of 9]"
    result = evaluate(agent, CORRIDOR, ks=[1], budgets=[2, 4], tasks=2, diagnostics=False)
    assert result.mode == "visible" and result.errors == 0


# -------------------------------------------------------------------------- CLI
def test_train_sb3_cli_runs_end_to_end_in_quick_form(tmp_path, capsys):
    from agent_envs.cli import main as cli_main

    out = tmp_path / "run"
    status = cli_main(
        ["train-sb3", "agent_envs/FrozenLake-v0", "--algo", "maskable_ppo", "--quick",
         "--budget-mix", "4,8", "--view-only", "--charset", "FHSG@", "--seed", "0",
         "--out", str(out)]
    )  # fmt: skip
    assert status == 0
    sidecar = json.loads(sidecar_path(out / "model" / "model.zip").read_text())
    assert sidecar["algo"] == "maskable_ppo" and sidecar["action_masks"] is True
    assert sidecar["config"]["budget_mix"] == [4, 8]
    assert sidecar["encoding"]["charset"] == "FHSG@"
    assert [action_key(a) for a in sidecar["action_vocabulary"]] == ["left", "down", "right", "up"]
    result = json.loads((out / "result.json").read_text())
    assert result["episodes"] == 4 and result["errors"] == 0
    assert "Pass@(K,T)" in capsys.readouterr().out


def test_eval_cli_accepts_the_sb3_agent(corridor_model, tmp_path):
    from agent_envs.cli import main as cli_main

    kwargs = json.dumps({"path": str(corridor_model)})
    out = tmp_path / "result.json"
    status = cli_main(
        ["eval", "agent_envs/FrozenLake-v0", "--agent", "sb3", "--agent-kwargs", kwargs,
         "--k", "1", "--t", "3", "--tasks", "2", "--out", str(out)]
    )  # fmt: skip
    # A corridor model on a lake: it runs (the encoding is rebuilt from the sidecar), badly.
    assert status == 0
    result = json.loads(out.read_text())
    assert result["episodes"] == 2 and result["errors"] == 0  # the model played both, no error
    assert result["settings"]["agent_name"].startswith(f"sb3 {kwargs} [sha256:")


#: A tiny run, so that a check that does not refuse ends soon instead of training for long.
QUICK_SB3 = ["agent_envs/GuessNumber-v0", "--quick", "--no-eval"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["agent_envs/Nope-v0"], "Unknown env id"),
        (["agent_envs/FrozenLake-v0", "--budget", "0"], "must be an int >= 1"),
        (["agent_envs/FrozenLake-v0", "--budget", "5", "--budget-mix", "5,10"], "not allowed"),
        (["agent_envs/FrozenLake-v0", "--weights", "1,2"], "--weights goes with --budget-mix"),
        (["agent_envs/FrozenLake-v0", "--budget-mix", "5,10", "--weights", "1"], "has 1 values"),
        (["agent_envs/FrozenLake-v0", "--algo-kwargs", "{oops"], "not valid JSON"),
        (["agent_envs/FrozenLake-v0", "--encoding", "tokens"], "needs --tokenizer"),
        (["agent_envs/FrozenLake-v0", "--algo", "sac"], "invalid choice"),
        (["agent_envs/FrozenLake-v0", "--gamma", "2"], "argument --gamma: the value must be"),
        (["agent_envs/FrozenLake-v0", "--bc-epsilon", "1.5"], "argument --bc-epsilon"),
        (["agent_envs/FrozenLake-v0", "--eval-samples", "2", "--eval-k", "4"], "K=4 is larger"),
        (["agent_envs/FrozenLake-v0", "--eval-tasks", "x"], "--eval-tasks takes"),
        (["agent_envs/FrozenLake-v0", "--algo-kwargs", "[1]"], "expected a JSON object"),
        (["agent_envs/FrozenLake-v0", "--seed", "-1"], "must be an int >= 0"),
        # JSON's NaN reached torch's Adam (a ValueError traceback); n_steps 0 and batch_size
        # -1 failed inside SB3's rollout; a repeated seed trained twice into one folder.
        ([*QUICK_SB3, "--algo-kwargs", '{"learning_rate": NaN}'], "learning_rate must be"),
        ([*QUICK_SB3, "--algo-kwargs", '{"learning_rate": Infinity}'], "learning_rate must be"),
        ([*QUICK_SB3, "--algo-kwargs", '{"n_steps": 0}'], "n_steps must be a number >= 1"),
        ([*QUICK_SB3, "--algo-kwargs", '{"batch_size": -1}'], "batch_size must be a number >= 1"),
        ([*QUICK_SB3, "--algo-kwargs", '{"gae_lambda": 7}'], "gae_lambda must be a number in"),
        ([*QUICK_SB3, "--seed", "0,1,0"], "--seed lists 0 more than once"),
        ([*QUICK_SB3, "--n-envs", "1025"], "argument --n-envs: the value must be at most 1,024"),
        # A first layer of 10**6 inputs x the tuned width made torch ask for gigabytes.
        ([*QUICK_SB3, "--encoding", "chars", "--max-length", "1000000"], "first layer would"),
        ([*QUICK_SB3, "--encoding", "hashing", "--dim", "1000000"], "first layer would"),
        (
            ["agent_envs/Maze-7x7-v0", "--encoding", "hashing", "--feedback-length", "16"],
            "--feedback-length needs --encoding chars",
        ),
    ],
)
def test_train_sb3_bad_input_gives_one_line_errors(argv, message, capsys, tmp_path):
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert error.startswith("agent-envs train-sb3: error:")
    assert not (tmp_path / "run").exists()  # refused before any training


def test_train_sb3_takes_only_the_eval_flag_spellings(capsys):
    assert main(["agent_envs/FrozenLake-v0", "--samples", "4"]) == 2
    assert "unrecognized arguments: --samples 4" in capsys.readouterr().err
    args = build_parser().parse_args(
        ["agent_envs/FrozenLake-v0", "--eval-samples", "4", "--eval-k", "1,2"]
    )
    settings = args.eval_flags.settings(args, budgets=(5, 10), seed=0)
    assert (settings.samples, settings.ks, settings.tasks) == (4, (1, 2), tuple(range(50)))


def test_missing_sidecar_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="No sidecar"):
        SB3Agent(str(tmp_path / "model.zip"))


def test_bad_sidecar_is_a_clear_error(corridor_model, tmp_path):
    broken = tmp_path / "model.zip"
    broken.write_bytes(corridor_model.read_bytes())
    sidecar_path(broken).write_text(json.dumps({"format": 1, "algo": "ppo"}))
    with pytest.raises(ValueError, match="lacks"):
        SB3Agent(str(broken))


def test_bad_stack_settings_fail_before_the_model_loads(corridor_model, tmp_path):
    # The model file is not a zip at all: had SB3 loaded it first, the error would be
    # about the zip (and loading a model.zip can run code), not about the settings.
    broken = tmp_path / "model.zip"
    broken.write_bytes(b"not a zip")
    sidecar = json.loads(sidecar_path(corridor_model).read_text())
    sidecar_path(broken).write_text(json.dumps({**sidecar, "action_masks": "yes"}))
    with pytest.raises(TypeError, match="action_masks"):
        SB3Agent(str(broken))


def test_the_first_layer_limit_is_inclusive_and_names_what_to_shrink():
    from baselines.sb3.train import MAX_FIRST_LAYER, check_first_layer

    check_first_layer(MAX_FIRST_LAYER // 64, [64, 64])  # exactly the limit: allowed
    with pytest.raises(UsageError, match="--max-length or --dim, or a narrower first"):
        check_first_layer(MAX_FIRST_LAYER // 64 + 1, [64])


def test_a_recurrent_policys_first_layer_is_its_lstm():
    # RecurrentPPO's inputs feed an LSTM of four gates of LSTM_HIDDEN units, not net_arch[0].
    from baselines.sb3.train import MAX_FIRST_LAYER, check_first_layer
    from baselines.sb3.training import LSTM_HIDDEN

    gate_units = 4 * LSTM_HIDDEN
    check_first_layer(MAX_FIRST_LAYER // gate_units, [8], "recurrent_ppo")
    check_first_layer(MAX_FIRST_LAYER // gate_units + 1, [8], "ppo")  # 8 units: fits
    with pytest.raises(UsageError, match=f"x {gate_units} LSTM gate units.*--dim\\.$"):
        check_first_layer(MAX_FIRST_LAYER // gate_units + 1, [8], "recurrent_ppo")
