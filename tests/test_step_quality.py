"""Step quality: one shared, seeded set of reference states for every policy."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from agent_envs.cli import main
from agent_envs.evaluation import EvalResult, compare, evaluate, step_quality
from baselines.simple_agents import NoisyOracleAgent, OracleAgent, RandomAgent
from tests.test_evaluator import Corridor
from wrappers import ChatHistory
from wrappers.protocol import MESSAGES, TURN

SOKOBAN = "agent_envs/Sokoban-v0"
GRID = dict(tasks=4, states_per_task=5)


def test_the_oracle_scores_one_on_every_kind_of_state():
    result = step_quality(OracleAgent(), SOKOBAN, **GRID)
    assert result["states"] == 20
    assert result["optimal_rate"] == 1.0
    assert result["recovery_optimal_rate"] == result["on_path_optimal_rate"] == 1.0
    assert result["invalid_rate"] == 0.0
    # The default reference (a noisy oracle) makes mistakes, so recovery states exist.
    assert 0 < result["recovery_states"] < result["states"]
    reference = "NoisyOracleAgent(epsilon=0.3, choice='first', seed=0)"
    assert result["state_set"]["reference"] == f"agent_envs.evaluation.reference:{reference}"
    assert sum(row[1] for row in result["per_task"]) == 20


def test_it_is_deterministic_and_every_policy_meets_the_same_states():
    first = step_quality(NoisyOracleAgent(0.5), SOKOBAN, **GRID)
    again = step_quality(NoisyOracleAgent(0.5), SOKOBAN, **GRID)
    random = step_quality(RandomAgent(), SOKOBAN, **GRID)
    assert first == again
    assert first["state_set"] == random["state_set"]
    assert first["recovery_states"] == random["recovery_states"]
    assert random["optimal_rate"] < first["optimal_rate"] < 1.0
    other_seed = step_quality(NoisyOracleAgent(0.5), SOKOBAN, **GRID, seed=1)
    assert other_seed["state_set"] != first["state_set"]


class BatchedNoisyOracle(NoisyOracleAgent):
    """A noisy oracle with act_batch: the evaluator then chunks the states."""

    def __init__(self) -> None:
        super().__init__(0.4)
        self.calls = []

    def act_batch(self, observations, infos):
        self.calls.append(len(observations))
        return [self.act(o, i) for o, i in zip(observations, infos, strict=True)]


def test_the_result_does_not_depend_on_the_batch_size():
    plain = step_quality(NoisyOracleAgent(0.4), SOKOBAN, **GRID)
    results = []
    for batch_size in (1, 3, 64):
        agent = BatchedNoisyOracle()
        results.append(step_quality(agent, SOKOBAN, **GRID, batch_size=batch_size))
        assert max(agent.calls) == min(batch_size, 20)
    for result in results:
        assert {**result, "policy": None} == {**plain, "policy": None}


def test_the_policy_gets_the_exact_history_through_the_evaluators_stack():
    seen = []

    class Reader(OracleAgent):
        def act(self, observation, info):
            # The last message is the current observation, after `turn` exchanges.
            messages = info[MESSAGES]
            assert messages[-1]["content"] == observation
            seen.append((info[TURN], len(messages)))
            return super().act(observation, info)

    result = step_quality(Reader(), lambda: ChatHistory(gym.make(SOKOBAN)), **GRID)
    assert result["optimal_rate"] == 1.0
    assert all(length == 1 + 2 * turn for turn, length in seen)
    assert max(turn for turn, _ in seen) > 0


def test_a_custom_reference_and_bad_arguments():
    perfect = step_quality(OracleAgent(), SOKOBAN, **GRID, reference=NoisyOracleAgent(0.0))
    assert perfect["recovery_states"] == 0 and perfect["recovery_optimal_rate"] is None
    with pytest.raises(ValueError, match="states_per_task"):
        step_quality(OracleAgent(), SOKOBAN, tasks=2, states_per_task=0)


def test_a_raising_policy_counts_as_invalid():
    def broken(observation):
        raise RuntimeError("no")

    result = step_quality(broken, SOKOBAN, **GRID)
    assert result["invalid_rate"] == 1.0 and result["optimal_rate"] == 0.0


def test_evaluate_and_the_cli_report_it_and_compare_shows_the_difference(tmp_path, capsys):
    grid = dict(ks=[1], budgets=[20], tasks=4, n_bootstrap=50)
    oracle = evaluate(OracleAgent(), SOKOBAN, **grid, step_quality=5)
    assert oracle.diagnostics["step_quality"] == step_quality(
        OracleAgent(), SOKOBAN, tasks=4, states_per_task=5, max_turns=20
    )
    assert "step quality on 20 shared reference states" in oracle.table()
    args = ["eval", SOKOBAN, "--agent", "random", "--k", "1", "--t", "20", "--tasks", "4"]
    out = tmp_path / "random.json"
    assert main([*args, "--n-bootstrap", "50", "--step-quality", "5", "--out", str(out)]) == 0
    random = EvalResult.load(out)
    assert (
        random.diagnostics["step_quality"]["state_set"]
        == (oracle.diagnostics["step_quality"]["state_set"])
    )
    difference = compare(oracle, random)
    step = difference.step_quality
    assert step["a"] == 1.0 and step["diff"] == 1.0 - step["b"]
    assert 0 < step["ci_low"] <= step["diff"] <= step["ci_high"]
    oracle.save(tmp_path / "oracle.json")
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "oracle.json"), str(out)]) == 0
    assert "step quality (optimal-action rate on 20 shared reference states, 0 with one" in (
        capsys.readouterr().out
    )
    json.dumps(difference.to_dict())


def test_the_runner_plays_judges_then_counts_and_counting_plays_no_episode(monkeypatch):
    from agent_envs.evaluation import rollout, runner

    phases: list[str] = []
    episodes_started: list[str] = []
    reset = rollout.EpisodeRun.reset

    def counted_reset(self, env):
        episodes_started.append(phases[-1])
        return reset(self, env)

    def traced(name):
        phase = getattr(runner, name)

        def run(*args):
            phases.append(name)
            return phase(*args)

        return run

    monkeypatch.setattr(rollout.EpisodeRun, "reset", counted_reset)
    for name in ("_play", "_judge", "_count"):
        monkeypatch.setattr(runner, name, traced(name))
    result = evaluate(OracleAgent(), SOKOBAN, ks=[1], budgets=[20], tasks=2, step_quality=3)
    assert phases == ["_play", "_judge", "_count"]
    # The episodes' resets, then the reference attempts' and the judged states' resets.
    assert episodes_started.count("_play") == 2 and "_count" not in episodes_started
    assert episodes_started.count("_judge") >= 6
    assert result.diagnostics["step_quality"]["states"] == 6


def test_an_env_without_an_oracle_is_refused_with_a_clear_error():
    class Blind(Corridor):
        def oracle_actions(self):
            raise NotImplementedError

        def oracle_turns(self):
            raise NotImplementedError

    with pytest.raises(ValueError, match="step quality needs an env with an oracle"):
        step_quality(lambda observation: "right", Blind, tasks=2, states_per_task=2)


def test_states_with_one_legal_move_are_left_out_and_counted():
    # Maze dead ends leave one open side: any masked policy plays them right.
    maze = "agent_envs/Maze-5x5-v0"
    result = step_quality(RandomAgent(), maze, tasks=6, states_per_task=10)
    excluded = result["single_move_states_excluded"]
    assert excluded > 0
    assert result["states"] + excluded == 60
    assert sum(row[1] for row in result["per_task"]) == result["states"]
    # The oracle scores 1 on what is left, and meets the same exclusions.
    oracle = step_quality(OracleAgent(), maze, tasks=6, states_per_task=10)
    assert oracle["single_move_states_excluded"] == excluded and oracle["optimal_rate"] == 1.0


def test_every_training_seed_is_judged_on_the_same_states_and_compare_differences_them():
    # The episodes' seed differs per training seed; the step-quality seed is the
    # study's, so every seed's result shares one state set.
    grid = dict(ks=[1], budgets=[20], tasks=4, n_bootstrap=50, step_quality=5)
    runs = {
        name: [evaluate(agent, SOKOBAN, **grid, seed=seed) for seed in range(5)]
        for name, agent in (("good", NoisyOracleAgent(0.1)), ("bad", NoisyOracleAgent(0.6)))
    }
    sets = {
        json.dumps(r.diagnostics["step_quality"]["state_set"]) for g in runs.values() for r in g
    }
    assert len(sets) == 1
    step = compare(runs["good"], runs["bad"]).step_quality
    assert step is not None and step["ci_low"] > 0 and step["diff"] == step["a"] - step["b"]
    other = evaluate(NoisyOracleAgent(0.1), SOKOBAN, **grid, step_quality_seed=7)
    assert other.diagnostics["step_quality"]["state_set"]["seed"] == 7
