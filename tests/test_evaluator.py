"""evaluate(): modes, batching, policies, errors, diagnostics, results and comparison."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest

from agent_envs.core import TextEnv
from agent_envs.envs.guess_number import GuessNumberEnv
from agent_envs.evaluation import (
    EvalResult,
    EvalSettings,
    PerEpisode,
    RunAborted,
    compare,
    episode_seed,
    evaluate,
)
from baselines.simple_agents import NoisyOracleAgent, OracleAgent, RandomAgent
from tests.conftest import ENV_IDS, make_unwrapped
from wrappers import BudgetMix, TurnBudget
from wrappers.utils.seeding import turn_hash

GUESS = "agent_envs/GuessNumber-v0"


def small_guess(max_number: int = 5):
    return lambda: GuessNumberEnv(max_number=max_number)


def counts_of(result: EvalResult) -> np.ndarray:
    return np.asarray(result.success_counts)


class Corridor(TextEnv[int]):
    """Walk right three times to win; "jump" is a valid move into a dead end."""

    action_format = "Reply right, left or jump."

    def _make_task(self, task_id, rng):
        return task_id

    def _start(self, task):
        self.position, self.fallen = 0, False

    def _intro(self):
        return "Reach cell 3."

    def _view(self):
        return "You fell." if self.fallen else f"You are at {self.position}."

    def _parse(self, action):
        return action if action in ("right", "left", "jump") else None

    def _apply(self, move):
        if self.fallen or (move == "left" and self.position == 0):
            return "You cannot.", False
        if move == "jump":
            self.fallen = True
        else:
            self.position += 1 if move == "right" else -1
        return "Ok.", True

    def _is_success(self):
        return self.position == 3

    def _is_dead_end(self):
        return self.fallen

    def admissible_actions(self):
        if self.fallen:
            return []
        return ["right", "jump"] + (["left"] if self.position else [])

    def oracle_actions(self):
        return [] if self.fallen or self._success else ["right"]

    def oracle_turns(self):
        return None if self.fallen else 3 - self.position


class Scripted:
    """Plays a fixed script per attempt (found through the episode seed), then "right"."""

    SCRIPTS = (("right",) * 3, ("left",) + ("right",) * 3, ("jump",))

    def __init__(self, seed: int, task_ids) -> None:
        self.sample_of = {episode_seed(seed, t, j): j for t in task_ids for j in range(3)}

    def act(self, observation, info):
        script = self.SCRIPTS[self.sample_of[info["episode_seed"]]]
        return script[info["turn"]] if info["turn"] < len(script) else "right"


# ---------------------------------------------------------------- correctness
def test_oracle_is_one_above_the_largest_horizon_and_zero_below_the_smallest():
    env = make_unwrapped(GUESS)
    horizons = {}
    for task in range(40):
        env.reset(seed=0, options={"task_id": task})
        horizons[task] = env.oracle_turns()
    tasks = [task for task, turns in horizons.items() if turns >= 3]
    low, high = min(horizons[t] for t in tasks), max(horizons[t] for t in tasks)
    result = evaluate(
        OracleAgent(),
        GUESS,
        ks=[1, 2],
        budgets=[low - 1, high, high + 5],
        tasks=tasks,
        samples=2,
        n_bootstrap=100,
    )
    assert result.pass_at(1, low - 1) == 0.0
    assert result.pass_at(1, high) == result.pass_at(1, high + 5) == 1.0
    assert result.diagnostics["turns"]["mean_ratio"] == 1.0


@pytest.mark.filterwarnings("ignore:.*distinct tasks:UserWarning")  # tiny envs, on purpose
def test_random_agent_matches_the_analytic_success_curve():
    # Uniform guesses among 1..5, independent each turn: P(success within T) = 1 - 0.8**T.
    budgets, tasks, samples = [1, 2, 3, 5, 8], 50, 8
    result = evaluate(
        RandomAgent(seed=0),
        small_guess(5),
        ks=[1, 4],
        budgets=budgets,
        tasks=tasks,
        samples=samples,
        n_bootstrap=100,
    )
    episodes = tasks * samples
    for t in budgets:
        p = 1 - 0.8**t
        assert abs(result.pass_at(1, t) - p) < 4 * np.sqrt(p * (1 - p) / episodes) + 1e-9
        q = 1 - (1 - p) ** 4  # four independent attempts
        assert abs(result.pass_at(4, t) - q) < 4 * np.sqrt(q * (1 - q) / (episodes / 4)) + 1e-9


def test_surface_never_decreases_in_k_or_t_and_lies_in_its_interval():
    result = evaluate(
        NoisyOracleAgent(epsilon=0.5),
        GUESS,
        ks=[1, 2, 3, 6],
        budgets=[2, 4, 6, 8, 12, 20],
        tasks=25,
        samples=6,
        n_bootstrap=200,
    )
    surface = result.surface
    assert np.all(np.diff(surface, axis=0) >= -1e-12)
    assert np.all(np.diff(surface, axis=1) >= -1e-12)
    assert np.all(result.ci_low <= surface + 1e-12) and np.all(surface <= result.ci_high + 1e-12)
    assert np.all(np.diff(counts_of(result), axis=1) >= 0)


@pytest.mark.filterwarnings("ignore:.*distinct tasks:UserWarning")  # tiny envs, on purpose
def test_hidden_shortcut_equals_separate_runs_per_budget():
    grid = dict(ks=[1, 2], tasks=12, samples=4, seed=3, n_bootstrap=100)
    budgets = [1, 2, 3, 5, 8]
    hidden = evaluate(RandomAgent(), small_guess(8), budgets=budgets, **grid)
    assert hidden.mode == "hidden"
    assert hidden.timing["episodes_run"] == 12 * 4
    for column, t in enumerate(budgets):
        single = evaluate(RandomAgent(), small_guess(8), budgets=[t], **grid)
        assert np.array_equal(counts_of(single)[:, 0], counts_of(hidden)[:, column])

    class Aware(RandomAgent):
        visible_budget = True

    visible = evaluate(Aware(), small_guess(8), budgets=budgets, **grid)
    assert visible.mode == "visible"
    assert np.array_equal(counts_of(visible), counts_of(hidden))
    assert np.array_equal(visible.surface, hidden.surface)


def test_the_old_budget_aware_flag_is_refused_not_ignored(tmp_path):
    """Ignored, budget_aware = True measured a budget-reading policy at max(T) only."""

    class OldName(RandomAgent):
        budget_aware = True

    log = tmp_path / "run.jsonl"
    grid = dict(ks=[1], budgets=[3, 7], tasks=2, n_bootstrap=10, log_path=log)
    with pytest.raises(ValueError, match=r"budget_aware.*declare visible_budget = True"):
        evaluate(OldName(), GUESS, **grid)
    assert not log.exists()

    class BothNames(OldName):
        visible_budget = True

    assert evaluate(BothNames(), GUESS, **grid).mode == "visible"


class GivesUpWhenRich:
    """Reads the visible budget: plays the oracle only when T <= 7."""

    required_info = ("oracle_actions",)

    def act(self, observation, info):
        budget = int(re.search(r"\[Turns left: \d+ of (\d+)\]", observation).group(1))
        return info["oracle_actions"][0] if budget <= 7 else "nonsense"


def test_visible_budget_runs_every_budget_separately():
    result = evaluate(
        GivesUpWhenRich(),
        GUESS,
        ks=[1],
        budgets=[7, 20],
        tasks=10,
        visible_budget=True,
        n_bootstrap=50,
    )
    # The shortcut would read T=7 off the T=20 run and report 0 there.
    assert result.mode == "visible"
    assert (result.pass_at(1, 7), result.pass_at(1, 20)) == (1.0, 0.0)
    assert result.timing["episodes_run"] == 2 * 10
    # A visible TurnBudget already in the env stack is detected too.
    stacked = evaluate(
        GivesUpWhenRich(),
        lambda: TurnBudget(gym.make(GUESS), 20, visible=True),
        ks=[1],
        budgets=[7, 20],
        tasks=10,
        n_bootstrap=50,
    )
    assert stacked.mode == "visible" and np.array_equal(stacked.surface, result.surface)
    with pytest.warns(UserWarning, match="the evaluator's T grid"):
        mixed = evaluate(
            GivesUpWhenRich(),
            lambda: BudgetMix(gym.make(GUESS), [5, 50], visible=True),
            ks=[1],
            budgets=[7, 20],
            tasks=10,
            n_bootstrap=50,
        )
    assert mixed.mode == "visible" and np.array_equal(mixed.surface, result.surface)
    with pytest.raises(ValueError, match="hidden TurnBudget"):
        evaluate(
            RandomAgent(),
            lambda: TurnBudget(gym.make(GUESS), 20),
            ks=[1],
            budgets=[5],
            tasks=2,
            visible_budget=True,
        )


def test_a_budget_wrapper_of_the_user_follows_the_grid():
    # Outermost, a BudgetMix draws nothing and a TurnBudget's own max_turns is
    # ignored: reset(options={"budget": T}) sets every episode's budget.
    grid = dict(ks=[1], budgets=[3, 5, 7], tasks=10, samples=2, n_bootstrap=20, agent_name="n")
    plain = evaluate(NoisyOracleAgent(0.3), GUESS, **grid)
    for make in (
        lambda: BudgetMix(gym.make(GUESS), [1, 50]),
        lambda: TurnBudget(gym.make(GUESS), 2),
    ):
        # A BudgetMix is warned about: it draws nothing under the T grid.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = evaluate(NoisyOracleAgent(0.3), make, **grid)
        mix = isinstance(make(), BudgetMix)
        assert any("T grid" in str(warning.message) for warning in caught) == mix
        assert result.mode == "hidden"
        assert np.array_equal(counts_of(result), counts_of(plain))


@pytest.mark.parametrize(
    ("make", "match"),
    [
        # Regression: only the outermost budget wrapper reads options["budget"];
        # the inner BudgetMix drew 1 or 7 turns per episode and cut c_T silently.
        (lambda: TurnBudget(BudgetMix(gym.make(GUESS), [1, 7]), 7), "TurnBudget around BudgetMix"),
        # Regression: the visible inner BudgetMix showed a budget line, yet the
        # mode was read off the outer hidden one only ("hidden").
        (
            lambda: TurnBudget(BudgetMix(gym.make(GUESS), [1, 7], visible=True), 7),
            "keep at most one",
        ),
        # Regression: a TimeLimit outside the TurnBudget ended every episode at 3.
        (lambda: gym.wrappers.TimeLimit(TurnBudget(gym.make(GUESS), 7), 3), "TimeLimit of 3"),
        (lambda: gym.make(GUESS, max_episode_steps=3), "TimeLimit of 3"),
    ],
)
def test_a_stack_that_would_end_episodes_before_t_is_refused(make, match):
    with pytest.raises(ValueError, match=match) as caught:
        evaluate(OracleAgent(), make, ks=[1], budgets=[3, 7], tasks=2, n_bootstrap=10)
    assert "\n" not in str(caught.value)


def test_a_hidden_budget_is_hidden_from_info_too():
    seen = []

    def spy(policy_info):
        seen.append(set(policy_info))
        return "50"

    class Spy:
        def act(self, observation, info):
            return spy(info)

    class AwareSpy(Spy):
        visible_budget = True

    evaluate(Spy(), GUESS, ks=[1], budgets=[2, 3], tasks=1, n_bootstrap=10)
    assert seen and all("budget" not in keys and "turns_left" not in keys for keys in seen)
    assert all({"episode_seed", "turn"} <= keys for keys in seen)
    seen.clear()
    evaluate(AwareSpy(), GUESS, ks=[1], budgets=[2, 3], tasks=1, n_bootstrap=10)
    assert seen and all({"budget", "turns_left"} <= keys for keys in seen)


# ------------------------------------------------------------------- batching
class HashedPolicy:
    """Draws from (episode_seed, turn) only; optionally batched; counts its calls."""

    required_info = ("admissible_actions",)

    def __init__(self):
        self.calls = 0

    @staticmethod
    def choose(info):
        actions = info["admissible_actions"]
        return actions[turn_hash(info["episode_seed"], info["turn"]) % len(actions)]

    def act(self, observation, info):
        self.calls += 1
        return self.choose(info)


class BatchedHashedPolicy(HashedPolicy):
    def act_batch(self, observations, infos):
        self.calls += 1
        return [self.choose(info) for info in infos]


def test_results_do_not_depend_on_batching():
    grid = dict(ks=[1, 2], budgets=[3, 6, 12], tasks=10, samples=4, n_bootstrap=100)
    plain_policy = HashedPolicy()
    plain = evaluate(plain_policy, small_guess(10), **grid)
    assert plain_policy.calls == plain.timing["env_steps"] == plain.timing["policy_calls"]
    for batch_size in (1, 3, 64):
        policy = BatchedHashedPolicy()
        batched = evaluate(policy, small_guess(10), batch_size=batch_size, **grid)
        assert np.array_equal(counts_of(batched), counts_of(plain))
        assert batched.diagnostics == plain.diagnostics
        assert batched.settings.batch_size == batch_size
        if batch_size == 64:
            # 40 episodes in lockstep: one call per turn of the longest episode.
            assert policy.calls <= 12 < plain.timing["policy_calls"]


# ------------------------------------------------------------ policy shapes
def test_a_class_gets_one_instance_per_episode():
    built = []

    class Stateful(OracleAgent):
        def __init__(self):
            super().__init__()
            built.append(self)
            self.turns = 0

        def act(self, observation, info):
            self.turns += 1
            return super().act(observation, info)

    result = evaluate(Stateful, GUESS, ks=[1], budgets=[7], tasks=5, samples=2, n_bootstrap=20)
    assert result.pass_at(1, 7) == 1.0
    assert len(built) == 10  # one per episode; required_info is read from the class
    assert all(agent.turns <= 7 for agent in built)
    partial = evaluate(
        PerEpisode(functools.partial(OracleAgent, choice="first")),
        GUESS,
        ks=[1],
        budgets=[7],
        tasks=5,
        n_bootstrap=20,
    )
    assert partial.pass_at(1, 7) == 1.0


def test_a_plain_callable_gets_the_observation_only():
    seen = []

    def always_fifty(observation):
        seen.append(observation)
        return "50"

    result = evaluate(always_fifty, GUESS, ks=[1], budgets=[3], tasks=3, n_bootstrap=20)
    assert result.agent.endswith("always_fifty")
    # A call with (observation, info) would be a TypeError that evaluate() counts, not raises.
    assert result.errors == 0 and len(seen) == result.timing["policy_calls"] > 0
    assert all(isinstance(observation, str) for observation in seen)


def test_policy_errors_are_failures_and_the_run_goes_on():
    def flaky(observation):
        if "between 1 and 100" in observation and "too" not in observation:
            raise RuntimeError("model server down")
        return "50"

    first_turn_errors = evaluate(
        flaky, GUESS, ks=[1], budgets=[3], tasks=3, samples=1, n_bootstrap=20, max_error_rate=1.0
    )
    assert first_turn_errors.errors == 3
    assert first_turn_errors.error_examples == ["RuntimeError: model server down"]
    assert first_turn_errors.pass_at(1, 3) == 0.0

    def bad_type(observation):
        return 50

    result = evaluate(bad_type, GUESS, ks=[1], budgets=[3], tasks=2, n_bootstrap=20)
    assert result.errors == 2 and "not a str" in result.error_examples[0]


def test_scalar_diagnostics_do_not_depend_on_the_mode():
    # Regression: visible mode pooled the runs at every T, so the early turns of
    # an attempt counted once per T and decision quality and turns to success
    # changed with the mode (and the T grid) for the same budget-unaware policy.
    class Aware(NoisyOracleAgent):
        visible_budget = True

    grid = dict(ks=[1], budgets=[2, 4, 8], tasks=8, samples=3, n_bootstrap=20, agent_name="n")
    hidden = evaluate(NoisyOracleAgent(0.5), small_guess(20), **grid)
    visible = evaluate(Aware(0.5), small_guess(20), **grid)
    assert (hidden.mode, visible.mode) == ("hidden", "visible")
    assert visible.diagnostics == hidden.diagnostics
    assert hidden.diagnostics["turns"]["episodes"] == int(counts_of(hidden)[:, -1].sum())


def test_an_episode_whose_factory_fails_keeps_its_task_horizon():
    # Regression: the factory ran before reset, so its failed episodes had no
    # oracle_turns and by_horizon filed them under "unreachable".
    built = {"count": 0}

    def factory():
        built["count"] += 1
        if built["count"] % 3 == 0:
            raise RuntimeError("no GPU")
        return OracleAgent()

    result = evaluate(
        PerEpisode(factory),
        GUESS,
        ks=[1],
        budgets=[7],
        tasks=6,
        samples=2,
        max_error_rate=1.0,
        n_bootstrap=20,
    )
    assert result.errors == 4
    horizons = result.diagnostics["by_horizon"]
    assert "unreachable" not in horizons
    assert sum(item["tasks"] for item in horizons.values()) == 6


def test_too_many_errors_stop_the_run():
    def broken(observation):
        raise ConnectionError("no API key")

    with pytest.raises(RunAborted, match="no API key"):
        evaluate(broken, GUESS, ks=[1], budgets=[3], tasks=50, n_bootstrap=20)


def test_act_batch_errors_mark_the_whole_call():
    class Explodes(BatchedHashedPolicy):
        def act_batch(self, observations, infos):
            if any(info["turn"] == 2 for info in infos):
                raise ValueError("boom")
            return super().act_batch(observations, infos)

    result = evaluate(
        Explodes(),
        small_guess(50),
        ks=[1],
        budgets=[5],
        tasks=4,
        samples=2,
        batch_size=8,
        max_error_rate=1.0,
        n_bootstrap=20,
    )
    assert result.errors + int(counts_of(result).sum()) == 8


def test_an_exception_in_an_act_batch_slot_fails_only_that_episode():
    class OneBadSlot(BatchedHashedPolicy):
        def act_batch(self, observations, infos):
            actions = super().act_batch(observations, infos)
            return [
                RuntimeError("request failed")
                if info["episode_seed"] == infos[0]["episode_seed"] and info["turn"] == 1
                else action
                for action, info in zip(actions, infos, strict=True)
            ]

    grid = dict(ks=[1], budgets=[5], tasks=4, samples=2, max_error_rate=1.0, n_bootstrap=20)
    result = evaluate(OneBadSlot(), small_guess(50), batch_size=8, **grid)
    # One slot fails at turn 1 (the first live episode); the other seven play on.
    assert result.errors == 1
    assert "request failed" in result.error_examples[0]


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(env="agent_envs/Nope-v0"), ValueError, "Unknown env id"),
        (dict(ks=[1, 4], samples=2), ValueError, "K=4 is larger than samples=2"),
        (dict(budgets=[0, 5]), ValueError, "budgets"),
        (dict(budgets=[-3]), ValueError, "budgets"),
        (dict(budgets=[2.5]), TypeError, "budgets"),
        (dict(tasks=0), ValueError, "tasks"),
        (dict(tasks=[1, 1]), ValueError, "distinct"),
        (dict(seed=-1), ValueError, "seed"),
        (dict(env=gym.make(GUESS)), TypeError, "not an env instance"),
        (dict(policy=42), TypeError, "policy must have act"),
        (dict(transcripts=True), ValueError, "log_path"),
        (dict(batch_size=0), ValueError, "batch_size"),
    ],
)
def test_bad_input_is_a_one_line_error(kwargs, error, match):
    call = dict(policy=RandomAgent(), env=GUESS, ks=[1], budgets=[5], tasks=3)
    call.update(kwargs)
    with pytest.raises(error, match=match) as caught:
        evaluate(call.pop("policy"), call.pop("env"), **call)
    assert "\n" not in str(caught.value)


def test_short_ids_resolve_in_the_agent_envs_namespace():
    result = evaluate(OracleAgent(), "GuessNumber-v0", ks=[1], budgets=[7], tasks=2, n_bootstrap=10)
    assert result.env_id == GUESS


def test_an_env_made_with_other_arguments_gets_its_own_name():
    # Regression: gym.make(id, max_number=5) was named like id itself, so a run
    # log or compare() took it for the registered env.
    def build():
        return gym.make(GUESS, max_number=5)

    result = evaluate(OracleAgent(), build, ks=[1], budgets=[7], tasks=2, n_bootstrap=10)
    assert result.env_id == GUESS + ' {"max_number": 5}'
    same = evaluate(OracleAgent(), lambda: gym.make(GUESS), ks=[1], budgets=[7], tasks=2)
    assert same.env_id == GUESS


# ---------------------------------------------------------------- diagnostics
def test_diagnostics_on_a_scripted_corridor():
    tasks = [0, 1]
    result = evaluate(
        Scripted(0, tasks),
        Corridor,
        ks=[1, 3],
        budgets=[3, 4, 10],
        tasks=tasks,
        samples=3,
        n_bootstrap=50,
        env_name="corridor",
    )
    assert counts_of(result).tolist() == [[1, 2, 2], [1, 2, 2]]
    diagnostics = result.diagnostics
    # Per task: 3 + 4 + 1 judged turns (the "left" at cell 0 is invalid), 6 optimal.
    assert diagnostics["decision_quality"] == 6 / 8
    assert diagnostics["decision_quality_valid"] == 6 / 7
    assert diagnostics["invalid_action_rate"] == 10 / 17
    assert diagnostics["dead_end_rate"] == [1 / 3] * 3
    # The only errors are the jumps, into a dead end: fatal, nothing to recover.
    fatal_only = {"errors": 2, "fatal": 2, "recoverable": 0, "recovered": 0, "rate": None}
    for item in diagnostics["error_recovery"]:
        assert item == {**fatal_only, "mean_turns_to_recover": None}
    assert [item["success_rate"] for item in diagnostics["success_after_error"]] == [0.0, 0.5, 0.5]
    assert diagnostics["privileged_oracle"] is False
    assert diagnostics["by_horizon"] == {"3": {"tasks": 2, "success_rate": [1 / 3, 2 / 3, 2 / 3]}}
    assert diagnostics["turns"]["mean_ratio"] == pytest.approx((1 + 4 / 3) / 2)
    off = evaluate(
        Scripted(0, tasks),
        Corridor,
        ks=[1],
        budgets=[10],
        tasks=tasks,
        samples=3,
        diagnostics=False,
        n_bootstrap=20,
    )
    assert set(off.diagnostics) == {"invalid_action_rate", "unparsable_rate", "dead_end_rate"}


def test_another_spelling_of_an_oracle_move_is_optimal():
    # Regression: decision quality compared text, so an agent typing "guess 50"
    # or "move up" (moves the envs accept) scored 0 while playing the oracle.
    class Verbose(OracleAgent):
        def __init__(self, prefix):
            super().__init__()
            self.prefix = prefix

        def act(self, observation, info):
            return f"{self.prefix} {super().act(observation, info)}"

    for prefix, env_id, budget in (("guess", GUESS, 7), ("Action: move", "Sokoban-v0", 60)):
        result = evaluate(Verbose(prefix), env_id, ks=[1], budgets=[budget], tasks=3)
        assert result.pass_at(1, budget) == 1.0
        assert result.diagnostics["decision_quality"] == 1.0
        assert result.diagnostics["success_after_error"] == [{"episodes": 0, "success_rate": None}]
        assert result.diagnostics["error_recovery"][0]["errors"] == 0


# ------------------------------------------------------------- result object
def test_result_round_trips_through_json(tmp_path):
    result = evaluate(
        NoisyOracleAgent(0.2),
        GUESS,
        ks=[1, 2],
        budgets=[4, 8],
        tasks=6,
        samples=3,
        n_bootstrap=100,
        agent_name="noisy-oracle",
    )
    data = json.loads(json.dumps(result.to_dict()))
    again = EvalResult.from_dict(data)
    assert again.to_dict() == result.to_dict()
    assert np.array_equal(again.surface, result.surface)
    result.save(tmp_path / "r.json")
    assert EvalResult.load(tmp_path / "r.json").to_dict() == result.to_dict()
    assert again.settings == result.settings  # the one EvalSettings object, rebuilt
    settings = data["settings"]
    assert settings["agent_name"] == "noisy-oracle" and settings["mode"] == "hidden"
    assert data["version"] and settings["n_bootstrap"] == 100
    assert {"wall_s", "episodes_run", "env_steps", "policy_calls"} <= set(data["timing"])
    with pytest.raises(ValueError, match="not an agent-envs result"):
        EvalResult.from_dict({"surface": []})


def test_to_dict_is_a_copy():
    result = evaluate(
        OracleAgent(), GUESS, ks=[1], budgets=[7], tasks=2, n_bootstrap=10, agent_name="o"
    )
    data = result.to_dict()
    data["diagnostics"]["decision_quality"] = 0.0
    data["settings"]["ks"].append(99)
    data["settings"].clear()
    assert result.diagnostics["decision_quality"] == 1.0
    assert result.settings.ks == (1,) and result.ks == [1]


def test_bootstrap_is_deterministic_for_a_seed():
    run = functools.partial(
        evaluate, RandomAgent(), GUESS, ks=[1], budgets=[20], tasks=10, samples=2, n_bootstrap=300
    )
    first, second = run(seed=1), run(seed=1)
    assert np.array_equal(first.ci_low, second.ci_low)
    assert np.array_equal(first.ci_high, second.ci_high)


def test_table_and_plot(tmp_path, monkeypatch):
    result = evaluate(
        OracleAgent(), GUESS, ks=[1, 2], budgets=[3, 7], tasks=4, samples=2, n_bootstrap=20
    )
    table = result.table()
    assert "K=2" in table and "T=7" in table and "1.000 [1.00,1.00]" in table
    result.plot(tmp_path / "surface.png")
    assert (tmp_path / "surface.png").read_bytes()[:4] == b"\x89PNG"
    for name in [m for m in sys.modules if m.startswith("matplotlib")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r'pip install -e "\.\[plot\]"'):
        result.plot(tmp_path / "again.png")


def test_without_tqdm_a_terminal_gets_the_progress_records(monkeypatch, capsys):
    from agent_envs import progress
    from agent_envs.evaluation import session

    # On a terminal (where stderr is a file, one-line records: tests/test_progress_lines.py).
    monkeypatch.setattr(session, "wants_lines", lambda: False)
    grid = dict(ks=[1], budgets=[7], tasks=3, n_bootstrap=10, progress=True)
    assert evaluate(OracleAgent(), GUESS, **grid).pass_at(1, 7) == 1.0
    err = capsys.readouterr().err
    assert "3/3" in err and "progress GuessNumber" not in err  # tqdm's bar, on stderr
    # The main job installs [plot], without tqdm: the run still shows its progress.
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    monkeypatch.setattr(progress, "INTERVAL", 0.0)  # a record after every episode
    monkeypatch.setattr(
        session,
        "ProgressLines",
        lambda *a, **k: progress.ProgressLines(*a, **{**k, "heartbeat": False}),
    )
    assert evaluate(OracleAgent(), GUESS, **grid).pass_at(1, 7) == 1.0
    assert "progress GuessNumber-v0: 3/3 episodes (100%)" in capsys.readouterr().err


# ----------------------------------------------------------------- comparison
@pytest.mark.filterwarnings("ignore:.*distinct tasks:UserWarning")  # tiny envs, on purpose
def test_compare_finds_where_a_beats_b(tmp_path):
    grid = dict(ks=[1, 2], budgets=[2, 7], tasks=12, samples=2, n_bootstrap=200)
    oracle = evaluate(OracleAgent(), GUESS, **grid)
    random = evaluate(RandomAgent(), GUESS, **grid)
    difference = compare(oracle, random)
    assert difference.paired
    assert difference.wins().tolist() == [["", "A"], ["", "A"]]
    assert np.allclose(difference.diff, oracle.surface - random.surface)
    assert "A is better at: (K=1,T=7), (K=2,T=7)" in difference.table()
    assert np.all(compare(oracle, oracle).diff == 0)
    other_tasks = evaluate(RandomAgent(), GUESS, **{**grid, "tasks": list(range(20, 32))})
    assert not compare(oracle, other_tasks).paired
    difference.plot(tmp_path / "diff.png")
    assert (tmp_path / "diff.png").exists()
    with pytest.raises(ValueError, match="T grids differ"):
        compare(oracle, evaluate(OracleAgent(), GUESS, **{**grid, "budgets": [2, 8]}))
    with pytest.raises(ValueError, match="envs differ"):
        compare(oracle, evaluate(OracleAgent(), small_guess(5), **grid))


# ------------------------------------------------------- every registered env
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_oracle_solves_every_registered_env_within_its_horizon(env_id):
    env = make_unwrapped(env_id)
    horizons = []
    for task in range(3):
        env.reset(seed=episode_seed(0, task, 0), options={"task_id": task})
        horizons.append(env.oracle_turns())
    budget = max(horizons) + (10 if env.stochastic else 0)
    result = evaluate(
        OracleAgent(), env_id, ks=[1], budgets=[budget], tasks=3, samples=1, n_bootstrap=20
    )
    assert result.errors == 0
    if not env.stochastic:
        assert result.pass_at(1, budget) == 1.0
        assert result.diagnostics["decision_quality"] == 1.0


# ------------------------------------------------------------------ settings
def test_one_settings_object_serves_python_cli_result_and_log(tmp_path):
    settings = EvalSettings(ks=[1], budgets=[7, 3], tasks=4, n_bootstrap=20, agent_name="o")
    by_object = evaluate(OracleAgent(), GUESS, settings)
    by_keywords = evaluate(
        OracleAgent(), GUESS, ks=[1], budgets=[3, 7], tasks=4, n_bootstrap=20, agent_name="o"
    )
    assert by_object.settings == by_keywords.settings
    # The evaluator fills in what only the run can tell, in a copy.
    assert settings.mode is None and by_object.settings.mode == "hidden"
    assert by_object.settings.env_name == GUESS and by_object.settings.batch_size == 1
    assert dataclasses.replace(by_object.settings, mode=None, env_name=None, batch_size=None) == (
        settings
    )
    with pytest.raises(TypeError, match="not both"):
        evaluate(OracleAgent(), GUESS, settings, ks=[2])
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.seed = 3


def test_asking_for_more_tasks_than_the_env_has_warns():
    grid = {"ks": [1], "budgets": [7], "n_bootstrap": 10, "diagnostics": False}
    with pytest.warns(UserWarning, match="only 6 distinct tasks, so 7 tasks repeat instances"):
        evaluate(OracleAgent(), "agent_envs/Hanoi-3-v0", tasks=7, **grid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = evaluate(OracleAgent(), "agent_envs/Hanoi-3-v0", tasks=6, **grid)
    assert result.pass_at(1, 7) == 1.0


def test_a_policy_that_reads_the_turns_left_gets_them_shown_by_the_budget():
    """The TurnBudget writes the line (as in training); the policy re-adds nothing."""
    seen = []

    class ReadsTheLine:
        visible_budget = True

        def act(self, observation, info):
            seen.append(observation.splitlines()[-1])
            return "50"

    result = evaluate(ReadsTheLine(), GUESS, ks=[1], budgets=[2, 3], tasks=1, n_bootstrap=10)
    assert result.mode == "visible" and result.settings.visible_budget is True
    assert "[Turns left: 2 of 2]" in seen and "[Turns left: 3 of 3]" in seen
