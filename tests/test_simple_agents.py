"""The random, oracle and noisy-oracle baselines, and the agent spec table."""

from __future__ import annotations

import importlib.metadata
from collections import Counter

import gymnasium as gym
import pytest

from agent_envs.evaluation import evaluate
from agent_envs.plugins import (
    AGENT_GROUP,
    agent_names,
    make_agent,
    parse_agent_kwargs,
    resolve_agent,
)
from baselines.simple_agents import NoisyOracleAgent, OracleAgent, RandomAgent
from wrappers import ActionHints, TurnBudget

ACTIONS = ["a", "b", "c", "d", "e"]


def hinted(**extra):
    return {"admissible_actions": list(ACTIONS), "oracle_actions": ["c", "d"], **extra}


def test_random_agent_is_a_function_of_episode_seed_and_turn():
    agent = RandomAgent(seed=3)
    info = hinted(episode_seed=11, turn=4)
    picks = {agent.act("obs", info) for _ in range(5)}
    assert len(picks) == 1
    # A fresh agent with the same seed agrees: no hidden state between calls.
    assert RandomAgent(seed=3).act("other obs", info) in picks
    by_turn = [agent.act("", hinted(episode_seed=11, turn=turn)) for turn in range(40)]
    assert len(set(by_turn)) > 1
    other_seed = [RandomAgent(seed=4).act("", hinted(episode_seed=11, turn=t)) for t in range(40)]
    assert by_turn != other_seed


def test_random_agent_is_uniform_over_admissible_actions():
    agent = RandomAgent(seed=0)
    counts = Counter(
        agent.act("", hinted(episode_seed=seed, turn=turn))
        for seed in range(200)
        for turn in range(25)
    )
    assert set(counts) == set(ACTIONS)
    # 5000 draws: each count is 1000 +- 4 standard deviations (about 113).
    assert all(abs(count - 1000) < 115 for count in counts.values()), counts


def test_random_agent_falls_back_to_its_own_generator():
    first, second = RandomAgent(seed=5), RandomAgent(seed=5)
    info = {"admissible_actions": list(ACTIONS)}
    draws = [first.act("", info) for _ in range(30)]
    assert draws == [second.act("", info) for _ in range(30)]
    assert len(set(draws)) > 1


def test_random_agent_plays_a_plain_gym_loop_with_action_hints():
    env = ActionHints(TurnBudget(gym.make("agent_envs/GuessNumber-v0"), 30))
    agent = RandomAgent()
    _, info = env.reset(seed=0, options={"task_id": 3})
    for _ in range(30):
        _, _, terminated, truncated, info = env.step(agent.act("", info))
        assert info["valid_action"] is True
        if terminated or truncated:
            break


def test_missing_info_key_is_a_clear_error():
    with pytest.raises(KeyError, match="ActionHints"):
        RandomAgent().act("", {})
    with pytest.raises(KeyError, match="oracle_actions"):
        OracleAgent().act("", {"admissible_actions": ACTIONS})


def test_oracle_agent_first_and_random_choice():
    assert OracleAgent().act("", hinted()) == "c"
    agent = OracleAgent(choice="random", seed=1)
    picks = {agent.act("", hinted(episode_seed=s, turn=0)) for s in range(50)}
    assert picks == {"c", "d"}
    assert OracleAgent().act("", {"oracle_actions": []}) == ""


def test_noisy_oracle_extremes():
    assert all(
        NoisyOracleAgent(epsilon=0.0).act("", hinted(episode_seed=s, turn=0)) == "c"
        for s in range(100)
    )
    noisy = [
        NoisyOracleAgent(epsilon=1.0).act("", hinted(episode_seed=s, turn=0)) for s in range(200)
    ]
    assert set(noisy) == set(ACTIONS)
    # In a dead end (no oracle action) it falls back to a random admissible action.
    dead = {"admissible_actions": ["x"], "oracle_actions": [], "episode_seed": 1, "turn": 0}
    assert NoisyOracleAgent(epsilon=0.0).act("", dead) == "x"


def test_noisy_oracle_rate_matches_epsilon():
    agent = NoisyOracleAgent(epsilon=0.3)
    info = {"admissible_actions": ["good", *map(str, range(99))], "oracle_actions": ["good"]}
    picks = [agent.act("", {**info, "episode_seed": s, "turn": 2}) for s in range(4000)]
    random_share = sum(pick != "good" for pick in picks) / len(picks)
    # P(not good) = 0.3 * 99/100; 4000 draws give a standard deviation of about 0.007.
    assert abs(random_share - 0.297) < 0.03


@pytest.mark.parametrize(
    ("factory", "error"),
    [
        (lambda: NoisyOracleAgent(epsilon=1.5), ValueError),
        (lambda: NoisyOracleAgent(epsilon="0.1"), TypeError),
        (lambda: OracleAgent(choice="best"), ValueError),
        (lambda: RandomAgent(seed=-1), ValueError),
        (lambda: RandomAgent(seed=1.5), TypeError),
    ],
)
def test_bad_arguments_are_clear_errors(factory, error):
    with pytest.raises(error):
        factory()


def test_decision_quality_falls_as_epsilon_grows():
    quality = []
    for epsilon in (0.0, 0.3, 0.7):
        result = evaluate(
            NoisyOracleAgent(epsilon=epsilon),
            "agent_envs/GuessNumber-v0",
            ks=[1],
            budgets=[10, 30],
            tasks=20,
            samples=4,
            n_bootstrap=50,
        )
        quality.append(result.diagnostics["decision_quality"])
        recovery = result.diagnostics["error_recovery"]
        if epsilon == 0.0:
            assert recovery[0]["errors"] == 0
        else:
            # Mistakes happen, and the oracle-driven agent wins back the lost ground.
            assert recovery[-1]["rate"] > 0.9
    assert quality[0] == 1.0
    assert quality[0] > quality[1] > quality[2]


# ----------------------------------------------------------------- agent specs
def test_short_names_resolve_lazily_through_entry_points():
    installed = importlib.metadata.entry_points(group=AGENT_GROUP)
    assert {entry.name: entry.value for entry in installed}["random"] == (
        "baselines.simple_agents:RandomAgent"
    )
    assert resolve_agent("oracle") is OracleAgent
    assert resolve_agent("baselines.simple_agents:RandomAgent") is RandomAgent
    agent = make_agent("noisy-oracle", {"epsilon": 0.25, "seed": 2})
    assert (agent.epsilon, agent.seed) == (0.25, 2)
    assert set(agent_names()) >= {"random", "oracle", "noisy-oracle", "sb3", "hf", "openai"}


@pytest.mark.parametrize(
    ("spec", "kwargs", "match"),
    [
        ("rando", None, "Unknown agent 'rando'"),
        ("no_such_module_xyz:Agent", None, "cannot import agent module"),
        ("baselines.simple_agents:Missing", None, "has no attribute"),
        ("baselines.simple_agents:", None, "must look like"),
        ("random", {"epsilon": 0.1}, "cannot build agent 'random'"),
        ("noisy-oracle", {"epsilon": 3}, "cannot build agent"),
    ],
)
def test_bad_agent_specs_are_one_line_errors(spec, kwargs, match):
    with pytest.raises(ValueError, match=match) as caught:
        make_agent(spec, kwargs)
    assert "\n" not in str(caught.value)


def test_agent_kwargs_parsing():
    assert parse_agent_kwargs('{"epsilon": 0.1}') == {"epsilon": 0.1}
    assert parse_agent_kwargs(None) == {}
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_agent_kwargs("{epsilon: 0.1}")
    with pytest.raises(ValueError, match="JSON object"):
        parse_agent_kwargs("[1, 2]")


def test_describe_agent_masks_secrets_but_keeps_what_changes_behaviour():
    """The recorded agent name holds no secret, yet tells agents apart."""
    from agent_envs.plugins import describe_agent

    def name(model, key, password):
        return describe_agent(
            "openai", {"model": model, "api_key": key, "db": {"password": password}}
        )

    first = name("a", "sk-1", "p")
    assert "sk-1" not in first and '"p"' not in first
    assert first == name("a", "sk-2", "q")
    assert first != name("b", "sk-1", "p")
    assert "u:pw" not in describe_agent("openai", {"base_url": "http://u:pw@h/v1"})
    for name in ("api_key", "token", "password", "hf_token", "my_key", "secret"):
        assert "s3cr3t" not in describe_agent("x:Y", {name: "s3cr3t"})


def test_sb3_docs_warn_that_loading_a_model_runs_code():
    """SB3 model files are cloudpickle; load only models you trust."""
    from pathlib import Path

    from baselines.sb3.agent import SB3Agent

    assert "load only models you trust" in SB3Agent.__doc__.lower()
    docs = (Path(__file__).resolve().parents[1] / "docs" / "classic_rl.md").read_text()
    assert "load only models you trust" in docs.lower() and "cloudpickle" in docs
