"""``agent-envs bench``: the released suite's rules, the score, durability, the reference rows."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from agent_envs.bench import BENCH_FORMAT, bench_score, run_bench
from agent_envs.core import FIRST_EXAMPLE_ID, MAX_TASK_ID
from agent_envs.instances import instance_keys
from agent_envs.registration import FAMILIES
from agent_envs.suites import Suite, SuiteEntry, load_suite

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "bench" / "v1"


@pytest.fixture(scope="module")
def suite():
    return load_suite("v1")


def test_every_family_has_a_row_with_held_out_distinct_tasks_none_an_examples(suite):
    # Every family, one row each, and FrozenLake's slippery ice as a second row.
    families = [e.family.removesuffix("-Slippery") for e in suite.entries]
    assert sorted(families) == sorted([*FAMILIES, "FrozenLake"])
    pool = range(FIRST_EXAMPLE_ID, MAX_TASK_ID)  # every task a few-shot example can come from
    for entry, family in zip(suite.entries, families, strict=True):
        assert entry.env_id in FAMILIES[family]
        keys = instance_keys(entry.env_id, entry.tasks)
        assert len(set(keys.values())) == len(entry.tasks) == 20, entry.env_id
        assert not set(keys.values()) & set(instance_keys(entry.env_id, pool).values())
        assert min(entry.tasks) >= 50_000  # far above the ids training counts from 0


def test_each_t_grid_is_the_oracles_median_turns_then_twice_and_four_times(suite):
    for entry in suite.entries:
        env = gym.make(entry.env_id).unwrapped
        turns = []
        for task in entry.tasks:
            env.reset(seed=0, options={"task_id": task})
            turns.append(env.oracle_turns())
        tight = math.ceil(statistics.median(turns))
        assert entry.budgets == (tight, 2 * tight, 4 * tight), entry.env_id
        assert (entry.tight, entry.generous) == (tight, 4 * tight)
    assert (suite.samples, suite.ks) == (4, (1, 2, 4))


def test_an_unreleased_suite_is_refused_in_one_line():
    from wrappers.errors import InvalidValue

    with pytest.raises(InvalidValue, match="no suite 'v9'; the released suites are v1"):
        load_suite("v9")


def _result(counts, samples, budgets):
    return {
        "settings": {"budgets": list(budgets), "samples": samples},
        "success_counts": counts,
    }


def test_the_score_averages_families_at_their_own_tight_and_generous_budgets():
    entries = (
        SuiteEntry("a", "A", (0, 1), (2, 4, 8)),
        SuiteEntry("b", "B", (0, 1, 2, 3), (5, 10, 20)),
    )
    suite = Suite("test", 4, (1,), entries)
    results = {
        # Family A: tasks at 1/4 and 3/4 when tight, 4/4 and 4/4 when generous.
        "a": _result([[1, 2, 4], [3, 4, 4]], 4, (2, 4, 8)),
        # Family B: 0 when tight, 2/4 on every task when generous.
        "b": _result([[0, 1, 2]] * 4, 4, (5, 10, 20)),
    }
    score = bench_score(suite, results)
    tight, generous = (0.5 + 0.0) / 2, (1.0 + 0.5) / 2
    assert score["tight"]["value"] == pytest.approx(tight)
    assert score["generous"]["value"] == pytest.approx(generous)
    assert score["budget_gap"]["value"] == pytest.approx(generous - tight)
    assert score["per_family"] == {
        "A": {"tight": 0.5, "generous": 1.0},
        "B": {"tight": 0.0, "generous": 0.5},
    }
    # Resampling A's two tasks moves the tight score between 0.125 and 0.375 only.
    assert 0.125 <= score["tight"]["low"] < tight < score["tight"]["high"] <= 0.375
    # Every resample of A's generous side and of B is the same: no width there.
    assert score["generous"]["low"] == score["generous"]["high"] == generous
    assert bench_score(suite, results) == score  # seeded


def _bench(suite, agent, out, **settings):
    from agent_envs.plugins import make_agent

    return run_bench(
        suite, lambda: make_agent(agent), agent, out, log=lambda line: None, **settings
    )


def _measured(result):
    """What a bench measured: every id's counts, diagnostics and surface, and the score."""
    keep = ("success_counts", "surface", "ci_low", "ci_high", "diagnostics", "settings")
    return {
        "score": result["score"],
        "results": {
            env_id: {key: r[key] for key in keep if key != "settings"}
            | {
                "settings": {
                    k: v for k, v in r["settings"].items() if k not in ("log_path", "progress")
                }
            }
            for env_id, r in result["results"].items()
        },
    }


@pytest.mark.parametrize("agent", ["oracle", "random"])
def test_the_committed_reference_rows_are_what_the_bench_measures_now(suite, agent, tmp_path):
    committed = json.loads((REFERENCE / f"{agent}.json").read_text())
    assert committed["format"] == BENCH_FORMAT and committed["suite"] == "v1"
    again = _bench(suite, agent, tmp_path)
    assert _measured(again) == _measured(committed)
    assert bench_score(suite, committed["results"]) == committed["score"]


def test_the_budget_aware_row_plays_every_t_on_its_own_and_recomputes(suite):
    committed = json.loads((REFERENCE / "oracle-visible.json").read_text())
    assert all(r["settings"]["mode"] == "visible" for r in committed["results"].values())
    assert bench_score(suite, committed["results"]) == committed["score"]


def test_a_stopped_bench_resumes_from_its_logs_and_plays_nothing_twice(tmp_path):
    suite = Suite(
        "test", 2, (1,), (SuiteEntry("agent_envs/GuessNumber-v0", "G", (0, 1, 2), (3, 6)),)
    )
    first = _bench(suite, "random", tmp_path)
    log = tmp_path / "logs" / "agent_envs__GuessNumber-v0.jsonl"
    lines = log.read_text().splitlines()
    assert len(lines) == 1 + 3 * 2  # the header, then one line an episode
    log.write_text("\n".join(lines[:4]) + "\n")  # stopped after 3 episodes
    again = _bench(suite, "random", tmp_path)
    assert len(log.read_text().splitlines()) == len(lines)  # the 3 missing ones, once each
    assert _measured(again) == _measured(first)


def test_the_command_writes_one_result_and_refuses_a_file_as_its_folder(tmp_path, capsys):
    from agent_envs.cli import main

    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    assert main(["bench", "v1", "--agent", "oracle", "--out", str(notes)]) == 2
    assert "is a file" in capsys.readouterr().err and notes.read_text() == "mine"
    assert main(["bench", "v9", "--out", str(tmp_path / "b")]) == 2
    out = tmp_path / "b"
    assert main(["bench", "v1", "--agent", "random", "--out", str(out)]) == 0
    result = json.loads((out / "bench.json").read_text())
    assert set(result["results"]) == {e.env_id for e in load_suite("v1").entries}
    assert all(s["cpu"] >= 0 and s["wall"] >= 0 for s in result["seconds"].values())
    printed = capsys.readouterr().out
    assert "budget_gap" in printed and f"{result['score']['tight']['value']:.3f}" in printed
    assert np.isfinite(result["score"]["budget_gap"]["value"])


def test_only_some_rows_give_a_partial_result_that_says_so(tmp_path, capsys):
    from agent_envs.cli import main
    from agent_envs.suites import select

    ids = ["agent_envs/Wordle-v0", "agent_envs/GuessNumber-v0"]
    out = tmp_path / "b"
    assert (
        main(["bench", "v1", "--agent", "oracle", "--only", ",".join(ids), "--out", str(out)]) == 0
    )
    result = json.loads((out / "bench.json").read_text())
    assert result["partial"] and result["rows"] == ids[::-1]  # in the suite's order
    assert set(result["results"]) == set(ids) and "(partial: 2 rows)" in capsys.readouterr().out
    suite = load_suite("v1")
    assert result["score"] == bench_score(select(suite, ids), result["results"])
    assert not select(suite, [e.env_id for e in suite.entries]).partial
    assert main(["bench", "v1", "--only", "agent_envs/Nope-v0", "--out", str(out)]) == 2
    assert "its rows:" in capsys.readouterr().err


def test_with_history_the_agent_reads_the_dialogue(tmp_path):
    """``--history raw``: every turn's info holds the dialogue so far, as eval's does."""
    seen = []

    class Reader:
        def act(self, observation, info):
            seen.append(len(info["messages"]))
            return "50"

    suite = Suite("test", 1, (1,), (SuiteEntry("agent_envs/GuessNumber-v0", "G", (0,), (3,)),))
    result = run_bench(suite, Reader, "reader", tmp_path, log=lambda line: None, history="raw")
    assert result["history"] == "raw" and result["results"]["agent_envs/GuessNumber-v0"]
    assert seen[:3] == [1, 3, 5]  # the first observation, then each reply and answer added


def test_the_result_holds_each_episodes_tokens_and_seconds(tmp_path):
    """Per episode: the tokens the agent counted (``None`` where it cannot) and its seconds."""
    from agent_envs.bench import EPISODE_COST
    from agent_envs.protocol import AgentAction

    class Counting:
        """Guesses 50, then 25: a reply said to cost 10 prompt tokens a turn and 2 reply tokens."""

        def act(self, observation, info):
            return AgentAction("25" if "Lower" in observation else "50", "...", 10, 2)

    suite = Suite(
        "test",
        2,
        (1,),
        (
            SuiteEntry("agent_envs/GuessNumber-v0", "G", (0, 1, 2), (3, 6)),
            SuiteEntry("agent_envs/Wordle-v0", "W", (0,), (2,)),
        ),
    )
    result = run_bench(suite, Counting, "counting", tmp_path, log=lambda line: None)
    assert result["episode_columns"] == list(EPISODE_COST)
    rows = result["episodes"]["agent_envs/GuessNumber-v0"]
    guess = [dict(zip(EPISODE_COST, row, strict=True)) for row in rows]
    log = (tmp_path / "logs" / "agent_envs__GuessNumber-v0.jsonl").read_text().splitlines()[1:]
    turns = {(e["task"], e["sample"]): e["turns"] for e in map(json.loads, log)}
    assert len(guess) == 3 * 2 == len(turns)
    for episode in guess:
        played = turns[episode["task"], episode["sample"]]
        assert (episode["tokens_read"], episode["tokens_generated"]) == (10 * played, 2 * played)
        assert episode["wall_s"] >= 0 and episode["cpu_s"] >= 0
    # The episodes' CPU is part of the row's: it cannot add up to more (the row's is rounded).
    row_cpu = result["seconds"]["agent_envs/GuessNumber-v0"]["cpu"]
    assert sum(e["cpu_s"] for e in guess) <= row_cpu + 0.01
    assert len(result["episodes"]["agent_envs/Wordle-v0"]) == 2
    # An agent that counts nothing (plain strings) leaves the token columns empty.
    plain = _bench(Suite("test", 1, (1,), suite.entries[:1]), "random", tmp_path / "plain")
    rows = plain["episodes"]["agent_envs/GuessNumber-v0"]
    assert len(rows) == 3 and all(row[3] is None and row[4] is None for row in rows)


def test_a_rows_seconds_sum_every_process_and_count_overlapping_wall_once():
    from agent_envs.bench import row_seconds

    earlier = [  # a stopped process: two episodes in lockstep, then a third
        {"cpu_s": 1.0, "wall_s": 4.0, "ended_at": 104.0},
        {"cpu_s": 1.0, "wall_s": 4.0, "ended_at": 104.5},
        {"cpu_s": 0.5, "wall_s": 1.0, "ended_at": 106.0},
    ]
    mine = [{"cpu_s": 0.25, "wall_s": 1.0, "ended_at": 200.0}] * 2
    # Here: this process's own seconds, plus the earlier episodes' CPU and the time they span.
    assert row_seconds([*earlier, *mine], 2, 0.75, 3.0) == {"cpu": 3.25, "wall": 8.5}
    # On Ray this run's episodes ran in workers: their CPU is added, their wall is within ours.
    assert row_seconds([*earlier, *mine], 2, 0.75, 3.0, elsewhere=True) == {
        "cpu": 3.75,
        "wall": 8.5,
    }
    # Uninterrupted: this process's own seconds alone.
    assert row_seconds(mine, 2, 0.75, 3.0) == {"cpu": 0.75, "wall": 3.0}
    # A log written before ended_at: each episode's wall counts whole; no cost recorded: 0.
    old = [{"cpu_s": 1.0, "wall_s": 4.0}, {"cpu_s": 1.0, "wall_s": 4.0}, {"cpu_s": None}]
    assert row_seconds([*old, *mine], 2, 0.75, 3.0) == {"cpu": 2.75, "wall": 11.0}


class StopsAfter:
    """A random agent that is stopped (Ctrl-C) when its episode ``limit + 1`` starts."""

    def __init__(self, limit):
        from baselines import RandomAgent

        self.agent, self.limit, self.started = RandomAgent(), limit, 0
        self.required_info = self.agent.required_info

    def act(self, observation, info):
        if info["turn"] == 0:
            self.started += 1
            if self.started > self.limit:
                raise KeyboardInterrupt
        return self.agent.act(observation, info)


def test_a_row_stopped_and_resumed_costs_the_sum_of_its_parts(tmp_path, monkeypatch):
    """After a resume, a row's CPU was the last process's alone (0.36 s of 0.76 s)."""
    import time

    from baselines import RandomAgent

    ticks = iter(range(1, 1_000_000))
    monkeypatch.setattr(time, "process_time", lambda: float(next(ticks)))  # 1 s a call
    entry = SuiteEntry("agent_envs/GuessNumber-v0", "G", (0, 1, 2), (3, 6))
    suite = Suite("test", 2, (1,), (entry,))
    quiet = dict(log=lambda line: None)
    with pytest.raises(KeyboardInterrupt):
        run_bench(suite, lambda: StopsAfter(3), "random", tmp_path, **quiet)
    log = tmp_path / "logs" / "agent_envs__GuessNumber-v0.jsonl"
    first = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert len(first) == 3 and all(line["cpu_s"] == 1.0 for line in first)
    before = time.process_time()
    result = run_bench(suite, RandomAgent, "random", tmp_path, **quiet)
    here = time.process_time() - before - 2  # the bench's own bracket around the row
    assert result["results"][entry.env_id]["timing"]["episodes_resumed"] == 3
    assert result["seconds"][entry.env_id]["cpu"] == here + 3.0  # its part and the first's
    lines = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert len(lines) == 6 and sum(line["cpu_s"] for line in lines) == 6.0
