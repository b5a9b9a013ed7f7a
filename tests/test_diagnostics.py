"""Diagnostics, computed by hand on scripted policies, and what keeps them honest.

The figures are specified in docs/evaluation.md; every expected value below is
worked out from that text on a five-cell line world.
"""

from __future__ import annotations

import contextlib
import json
import warnings

import pytest

from agent_envs.core import TextEnv
from agent_envs.evaluation import evaluate
from agent_envs.evaluation.rollout import EpisodeRun
from baselines.simple_agents import IntervalGuesser, NoisyOracleAgent, OracleAgent

GRID = dict(ks=[1], tasks=2, samples=1, n_bootstrap=20, env_name="line")


class Line(TextEnv[int]):
    """Cells 0..5: start at 2, win at 5; cell 0 is a pit (a dead end that ends the episode)."""

    action_format = "Reply left or right."

    def _make_task(self, task_id, rng):
        return task_id

    def _start(self, task):
        self.position = 2

    def _intro(self):
        return "Reach cell 5."

    def _view(self):
        return f"You are at {self.position}."

    def _parse(self, action):
        return action if action in ("left", "right") else None

    def _apply(self, move):
        self.position += 1 if move == "right" else -1
        return "Ok.", True

    def _is_success(self):
        return self.position == 5

    def _is_failure(self):
        return self.position == 0

    def admissible_actions(self):
        return ["left", "right"]

    def oracle_actions(self):
        return [] if self.position in (0, 5) else ["right"]

    def oracle_turns(self):
        return None if self.position == 0 else 5 - self.position


class Script:
    """Plays ``moves`` turn by turn, then ``then`` for ever."""

    def __init__(self, moves: str, then: str = "right") -> None:
        self.moves, self.then = moves.split(), then

    def act(self, observation, info):
        turn = info["turn"]
        return self.moves[turn] if turn < len(self.moves) else self.then

    def __repr__(self):
        return f"Script({' '.join(self.moves)!r}, then={self.then!r})"


def run(policy, budgets, **kwargs):
    return evaluate(policy, Line, budgets=budgets, **{**GRID, **kwargs}).diagnostics


def recovery(diagnostics):
    return [
        (item["errors"], item["fatal"], item["recovered"], item["rate"])
        for item in diagnostics["error_recovery"]
    ]


# ------------------------------------------------------------- hand-computed
def test_the_oracle_makes_no_error_and_every_turn_is_optimal():
    diagnostics = run(OracleAgent(), [3, 10])
    assert diagnostics["decision_quality"] == diagnostics["decision_quality_valid"] == 1.0
    assert recovery(diagnostics) == [(0, 0, 0, None), (0, 0, 0, None)]
    assert diagnostics["success_after_error"][-1] == {"episodes": 0, "success_rate": None}


def test_going_back_to_the_oracle_after_a_mistake_recovers_every_error():
    # left (cell 2 -> 1: distance 3 -> 4) at turn 1, right (back to 3) at turn
    # 2, right (2: closer than before the error) at turn 3, left at turn 4
    # (cell 3 -> 2), right at turn 5, right (cell 4) at turn 6; solved at turn 7.
    diagnostics = run(Script("left right right left right"), [2, 3, 5, 10])
    # Per task, by T=2: one error, back where it was but not yet closer; by
    # T=3: recovered in 2 turns; by T=5: a second error, pending; by T=10: both.
    assert recovery(diagnostics) == [
        (2, 0, 0, 0.0),
        (2, 0, 2, 1.0),
        (4, 0, 2, 0.5),
        (4, 0, 4, 1.0),
    ]
    assert [item["mean_turns_to_recover"] for item in diagnostics["error_recovery"]] == [
        None,
        2.0,
        2.0,
        2.0,
    ]
    # 7 judged turns per task, 5 optimal; every action valid.
    assert diagnostics["decision_quality"] == diagnostics["decision_quality_valid"] == 5 / 7
    # Conditional success is another question: every episode erred, so it is Pass@1.
    assert [item["success_rate"] for item in diagnostics["success_after_error"]] == [0, 0, 0, 1]


def test_a_policy_that_never_undoes_a_mistake_recovers_nothing():
    # One step the wrong way, then junk: the distance stays one above.
    diagnostics = run(Script("left", then="junk"), [5, 20])
    assert recovery(diagnostics) == [(2, 0, 0, 0.0), (2, 0, 0, 0.0)]
    assert diagnostics["decision_quality"] == 0.0
    assert diagnostics["decision_quality_valid"] == 0.0


def test_an_error_into_a_dead_end_is_fatal_and_counted_apart():
    # left (2 -> 1) is recoverable, the second left falls into the pit at turn 2.
    diagnostics = run(Script("left left"), [1, 5])
    items = diagnostics["error_recovery"]
    assert [(i["errors"], i["fatal"], i["recoverable"], i["rate"]) for i in items] == [
        (2, 0, 2, 0.0),
        (4, 2, 2, 0.0),
    ]
    assert diagnostics["dead_end_rate"] == [0.0, 1.0]


def test_a_fatal_error_is_left_out_of_the_recovery_rate_denominator():
    # left at turn 1 (2 -> 1), recovered at turn 3 (cell 3); left at turns 4
    # and 5 (cells 2, 1), never undone; left at turn 6 into the pit: fatal.
    # Per task (two of them): four errors, one fatal, one recovered of three
    # recoverable, so the rate is 1/3, not 1/4.
    diagnostics = run(Script("left right right left left", then="left"), [10])
    (item,) = diagnostics["error_recovery"]
    assert (item["errors"], item["fatal"], item["recoverable"], item["recovered"]) == (8, 2, 6, 2)
    assert item["rate"] == pytest.approx(1 / 3)


def test_junk_every_other_turn_halves_decision_quality_but_not_the_valid_share():
    # right, junk, right, junk, right: solved at turn 5; 5 judged turns, 3 optimal.
    diagnostics = run(Script("right junk right junk right"), [10])
    assert diagnostics["decision_quality"] == 3 / 5
    assert diagnostics["decision_quality_valid"] == 1.0
    assert diagnostics["invalid_action_rate"] == 2 / 5
    # Invalid actions are not errors: they leave the state unchanged.
    assert recovery(diagnostics) == [(0, 0, 0, None)]


def test_the_log_records_each_error_with_its_recovery_turn(tmp_path):
    log = tmp_path / "run.jsonl"
    evaluate(Script("left right right left left"), Line, budgets=[10], log_path=log, **GRID)
    episode = json.loads(log.read_text().splitlines()[1])
    # Cells 2 1 2 3 2 1 2 3 4 5.  Turn 1 (from distance 3) is recovered at turn
    # 3 (distance 2); turns 4 (from 2) and 5 (from 3) are pending until turn 7
    # brings distance 2 (below the second one's 3) and turn 8 distance 1.
    assert episode["oracle_errors"] == [[1, 3, False], [4, 8, False], [5, 7, False]]
    assert episode["judged"] == episode["judged_valid"] == episode["turns"] == 9


class WaitingLine(Line):
    """The line world with a "wait" move: valid, not the oracle's, and it loses no ground."""

    def _parse(self, action):
        return action if action in ("left", "right", "wait") else None

    def _apply(self, move):
        if move != "wait":
            return super()._apply(move)
        return "You wait.", True


def test_a_wasted_turn_is_no_recovery():
    # wait, wait (distance 3 both times: two errors, nothing lost), then right
    # (distance 2) at turn 3 recovers both; solved at turn 5.
    diagnostics = evaluate(Script("wait wait"), WaitingLine, budgets=[2, 3, 10], **GRID).diagnostics
    assert recovery(diagnostics) == [(4, 0, 0, 0.0), (4, 0, 4, 1.0), (4, 0, 4, 1.0)]
    assert diagnostics["error_recovery"][-1]["mean_turns_to_recover"] == 1.5


def test_recovery_separates_an_interval_guesser_from_a_guesser_that_wastes_turns():
    # GuessNumber: a guess outside the interval shown loses no ground, so the
    # old same-turn rule scored both policies about 0.9-1.0.  Counting only a
    # later turn that gets strictly closer, the guesser that stays inside the
    # interval recovers almost every error by T=12, and sooner; the noisy
    # oracle, which guesses anywhere in 1..100 three turns in four, does not.
    grid = dict(ks=[1], budgets=[7, 12], tasks=20, samples=4, n_bootstrap=10)
    interval = evaluate(IntervalGuesser(), "agent_envs/GuessNumber-v0", **grid)
    noisy = evaluate(NoisyOracleAgent(0.75), "agent_envs/GuessNumber-v0", **grid)
    good, weak = (r.diagnostics["error_recovery"] for r in (interval, noisy))
    assert good[-1]["rate"] > 0.95 and weak[-1]["rate"] < 0.85
    assert good[0]["rate"] - weak[0]["rate"] > 0.15
    assert good[-1]["mean_turns_to_recover"] + 0.3 < weak[-1]["mean_turns_to_recover"]
    # Both make plenty of errors: the difference is in what follows them.
    assert min(good[-1]["recoverable"], weak[-1]["recoverable"]) > 200


# ----------------------------------------------------- noisy oracle, real envs
@pytest.mark.parametrize("env_id", ["agent_envs/Sokoban-v0", "agent_envs/Maze-7x7-v0"])
def test_per_error_recovery_of_a_noisy_oracle_stays_near_one_at_any_epsilon(env_id):
    rates, quality = [], []
    for epsilon in (0.1, 0.4):
        result = evaluate(
            NoisyOracleAgent(epsilon), env_id, ks=[1], budgets=[80], tasks=8, n_bootstrap=10
        )
        quality.append(result.diagnostics["decision_quality"])
        rates.append(result.diagnostics["error_recovery"][0]["rate"])
    assert quality[0] > quality[1]
    assert min(rates) > 0.9


def test_the_distance_shortcut_of_deterministic_envs_changes_nothing(monkeypatch):
    # An oracle move lowers oracle_turns() by one in a deterministic env, so the
    # evaluator skips asking; asking after every move must give the same records.
    grid = dict(ks=[1], budgets=[12, 40], tasks=6, samples=2, n_bootstrap=10)
    original = EpisodeRun.__init__

    def always_ask(self, *args):
        original(self, *args)
        self._exact_oracle = False

    envs = ("Sokoban-v0", "GuessNumber-v0", "Hanoi-4-v0", "Wordle-v0", "KnowledgeSearch-v0")
    for env_id in envs:
        fast = evaluate(NoisyOracleAgent(0.4), env_id, **grid).diagnostics
        with monkeypatch.context() as patch:
            patch.setattr(EpisodeRun, "__init__", always_ask)
            slow = evaluate(NoisyOracleAgent(0.4), env_id, **grid).diagnostics
        assert fast == slow, env_id


# ------------------------------------------------------ reproducible, both modes
def test_a_resumed_run_gives_identical_diagnostics(tmp_path):
    grid = dict(ks=[1, 2], budgets=[5, 20], tasks=5, samples=2, n_bootstrap=20)
    whole = evaluate(NoisyOracleAgent(0.3), "agent_envs/Sokoban-v0", **grid)
    log = tmp_path / "run.jsonl"
    evaluate(NoisyOracleAgent(0.3), "agent_envs/Sokoban-v0", **grid, log_path=log)
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[: len(lines) // 2]))  # stopped half-way
    resumed = evaluate(NoisyOracleAgent(0.3), "agent_envs/Sokoban-v0", **grid, log_path=log)
    assert resumed.timing["episodes_resumed"] > 0
    assert resumed.diagnostics == whole.diagnostics


def test_hidden_and_visible_modes_agree_for_a_budget_unaware_policy():
    grid = dict(ks=[1], budgets=[4, 9, 30], tasks=6, samples=2, n_bootstrap=10)
    hidden = evaluate(NoisyOracleAgent(0.4), "agent_envs/Maze-7x7-v0", **grid)
    visible = evaluate(NoisyOracleAgent(0.4), "agent_envs/Maze-7x7-v0", visible_budget=True, **grid)
    assert (hidden.mode, visible.mode) == ("hidden", "visible")
    assert hidden.diagnostics == visible.diagnostics


# -------------------------------------------------------------- privileged oracle
@pytest.mark.parametrize(
    ("env_id", "privileged"),
    [
        ("agent_envs/Maze-7x7-v0", True),
        ("agent_envs/Household-v0", True),
        ("agent_envs/WebShop-v0", True),
        ("agent_envs/Sokoban-v0", False),
        ("agent_envs/GuessNumber-v0", False),
    ],
)
def test_privileged_oracles_are_marked_in_json_and_table(env_id, privileged):
    result = evaluate(OracleAgent(), env_id, ks=[1], budgets=[60], tasks=1, n_bootstrap=10)
    assert result.diagnostics["privileged_oracle"] is privileged
    marked = [line for line in result.table().splitlines() if "[privileged oracle]" in line]
    # Every figure judged by the oracle or measured in its turns: none, or all of them.
    judged = ("decision quality", "per-error recovery", "success after an error",
              "oracle horizon", "turns to success", "step quality")  # fmt: skip
    lines = [line for line in result.table().splitlines() if line.strip().startswith(judged)]
    assert lines and marked == (lines if privileged else [])


# ------------------------------------------------------------ hidden-budget reads
class PeeksAtTheBudget(OracleAgent):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def act(self, observation, info):
        if self.how == "get":
            info.get("turns_left")
        elif self.how == "index":
            with contextlib.suppress(KeyError):
                info["budget"]
        elif self.how == "in":
            _ = "budget" in info
        elif self.how == "turn":
            assert info["turn"] >= 0 and info.get("turn") is not None
        return super().act(observation, info)


@pytest.mark.parametrize("how", ["get", "index", "in"])
def test_reading_a_hidden_budget_warns_once_per_run(how):
    with pytest.warns(UserWarning, match="visible_budget = True.*--visible-budget") as caught:
        evaluate(PeeksAtTheBudget(how), "agent_envs/Sokoban-v0", ks=[1], budgets=[30], tasks=4)
    assert len([w for w in caught if "budget is hidden" in str(w.message)]) == 1
    key = "turns_left" if how == "get" else "budget"
    assert f"info[{key!r}]" in str(caught[0].message)


@pytest.mark.parametrize("policy", [OracleAgent(), PeeksAtTheBudget("turn")])
def test_a_policy_that_never_reads_the_budget_gets_no_warning(policy):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = evaluate(
            policy, "agent_envs/Sokoban-v0", ks=[1], budgets=[30], tasks=4, batch_size=3
        )
    # A warning raised inside act() is an error there, which evaluate() counts, not raises.
    assert result.errors == 0 and result.surface[0, 0] == 1.0


def test_a_visible_budget_is_readable_without_warning():
    class Reads(OracleAgent):
        visible_budget = True

        def act(self, observation, info):
            assert info["turns_left"] >= 1 and info.get("budget") == 30
            return super().act(observation, info)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = evaluate(Reads(), "agent_envs/Sokoban-v0", ks=[1], budgets=[30], tasks=2)
    # The asserts and any warning inside act() would be counted errors, not raised.
    assert result.mode == "visible" and result.errors == 0


def test_the_hidden_info_pickles_as_a_plain_dict():
    import pickle
    import warnings

    from agent_envs.evaluation.hidden_budget import hide_budget

    reads = set()
    info = hide_budget({"turn": 1, "budget": 9, "turns_left": 8}, reads)
    assert dict(info) == {"turn": 1}
    with pytest.warns(UserWarning, match="budget is hidden"):
        assert info.get("budget") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second warning in the run would raise here
        assert "turns_left" not in info
    assert reads == {"budget", "turns_left"}
    again = pickle.loads(pickle.dumps(info))
    assert type(again) is dict and again == {"turn": 1}


# ------------------------------------------------------------ unparsable rate
def test_unparsable_replies_are_told_apart_from_forbidden_moves(tmp_path):
    """'hello' is no guess at all; '500' is a guess the range forbids: both invalid."""
    from agent_envs.evaluation import compare, evaluate

    replies = iter(["hello", "500", "hello", "50"] * 100)
    grid = dict(ks=[1], budgets=[4], tasks=3, n_bootstrap=20)
    log = tmp_path / "run.jsonl"
    mixed = evaluate(lambda obs: next(replies), "agent_envs/GuessNumber-v0", log_path=log, **grid)
    assert mixed.diagnostics["invalid_action_rate"] == pytest.approx(9 / 12)
    assert mixed.diagnostics["unparsable_rate"] == pytest.approx(6 / 12)
    assert "invalid-action rate: 0.750 (unparsable: 0.500)" in mixed.table()
    assert mixed.to_dict()["diagnostics"]["unparsable_rate"] == pytest.approx(0.5)
    clean = evaluate(lambda obs: "50", "agent_envs/GuessNumber-v0", **grid)
    assert clean.diagnostics["unparsable_rate"] == 0.0
    difference = compare(clean, mixed)
    assert difference.reply_rates["b"]["unparsable_rate"] == pytest.approx(0.5)
    assert "replies (A / B): unparsable 0.000 / 0.500" in difference.table()
    assert difference.to_dict()["reply_rates"]["a"]["invalid_action_rate"] == 0.0


def test_a_log_from_before_the_unparsable_count_still_resumes(tmp_path):
    from agent_envs.evaluation.episode_record import EpisodeRecord

    record = EpisodeRecord(1, 0, 5, 4, turns=4, valid=2, invalid=2, unparsable=1)
    line = record.to_json()
    del line["unparsable"]
    old = EpisodeRecord.from_json(line)
    assert old.unparsable is None and old.invalid == 2
