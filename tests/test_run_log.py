"""Durable runs: the JSONL log, resuming after a crash, and refusing foreign logs."""

from __future__ import annotations

import contextlib
import json
import os

import numpy as np
import pytest

from agent_envs.evaluation import evaluate
from agent_envs.evaluation.episode_record import EpisodeRecord
from agent_envs.protocol import AgentAction
from baselines.simple_agents import NoisyOracleAgent

GUESS = "agent_envs/GuessNumber-v0"
# The crashing policy is another class: the name in the log says they are the same agent.
GRID = dict(
    ks=[1, 2],
    budgets=[3, 6, 9],
    tasks=5,
    samples=3,
    seed=4,
    n_bootstrap=200,
    agent_name="noisy-oracle 0.4",
)
EPISODE_KEYS = {
    "run",  # the run's fingerprint
    "task",
    "sample",
    "seed",
    "budget",
    "success",
    "first_success_turn",
    "turns",
    "valid",
    "invalid",
    "unparsable",
    "dead_end_turn",
    "error",
    "oracle_turns",
    "judged",
    "judged_valid",
    "optimal",
    "first_non_optimal_turn",
    "oracle_errors",
    "tokens_read",  # the episode's cost: None for an agent that does not count tokens
    "tokens_generated",
    "wall_s",
    "cpu_s",
    "ended_at",  # when it ended (epoch seconds): overlapping episodes count their wall once
}


class DiesAfter(NoisyOracleAgent):
    """A noisy oracle that raises KeyboardInterrupt when episode ``limit + 1`` starts."""

    def __init__(self, limit: int) -> None:
        super().__init__(epsilon=0.4)
        self.limit, self.started = limit, 0

    def act(self, observation, info):
        if info["turn"] == 0:
            self.started += 1
            if self.started > self.limit:
                raise KeyboardInterrupt
        return super().act(observation, info)


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def untimed(episodes):
    """The episodes without their timings, which differ from run to run."""
    for episode in episodes:
        for timing in EpisodeRecord.TIMINGS:
            assert episode.pop(timing) >= 0
    return episodes


def comparable(result):
    data = result.to_dict()
    data.pop("timing")
    data["settings"].pop("log_path")  # where a run was logged changes no number
    return data


def test_every_episode_is_one_json_line_after_a_header(tmp_path):
    log = tmp_path / "run.jsonl"
    result = evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **GRID)
    header, *episodes = lines(log)
    assert header["type"] == "header" and header["format"] == "agent-envs-runlog/6"
    # The header holds the run's EvalSettings, exactly as the result does.
    assert header["settings"] == result.settings.to_json() == result.to_dict()["settings"]
    assert header["settings"]["tasks"] == [0, 1, 2, 3, 4]
    assert len(episodes) == result.episodes == 15
    assert all(set(episode) == EPISODE_KEYS for episode in episodes)
    assert {(e["task"], e["sample"]) for e in episodes} == {
        (t, j) for t in range(5) for j in range(3)
    }


def test_a_killed_run_resumes_to_the_uninterrupted_result(tmp_path):
    whole = evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, **GRID)
    log = tmp_path / "run.jsonl"
    with pytest.raises(KeyboardInterrupt):
        evaluate(DiesAfter(6), GUESS, log_path=log, **GRID)
    assert len(lines(log)) == 1 + 6
    resumed = evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **GRID)
    assert resumed.timing["episodes_resumed"] == 6
    assert resumed.timing["episodes_run"] == 9
    assert comparable(resumed) == comparable(whole)
    # A third run redoes nothing.
    again = evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **GRID)
    assert again.timing["episodes_run"] == 0 and comparable(again) == comparable(whole)
    assert len(lines(log)) == 1 + 15


@pytest.mark.parametrize("torn", ['{"task": 4, "sample": 2, "se', '{"task": 4, "sam\n'])
def test_a_torn_last_line_is_dropped_and_redone(tmp_path, torn):
    whole = evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, **GRID)
    log = tmp_path / "run.jsonl"
    with pytest.raises(KeyboardInterrupt):
        evaluate(DiesAfter(4), GUESS, log_path=log, **GRID)
    with log.open("a") as handle:
        handle.write(torn)
    resumed = evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **GRID)
    assert resumed.timing["episodes_resumed"] == 4
    assert comparable(resumed) == comparable(whole)
    assert all(line for line in lines(log))  # the torn bytes are gone


def test_a_corrupt_line_before_the_end_is_refused(tmp_path):
    log = tmp_path / "run.jsonl"
    evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **GRID)
    text = log.read_text().splitlines()
    text[3] = "garbage"
    log.write_text("\n".join(text) + "\n")
    with pytest.raises(ValueError, match=r"run.jsonl:4 is corrupt"):
        evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **GRID)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ({"turns": 12}, "12 turns under a budget"),
        ({"turns": 2, "first_success_turn": 5}, "valid"),
        ({"success": False}, "first_success_turn"),
        ({"first_success_turn": None}, "first_success_turn None"),
        ({"valid": -1, "invalid": 1}, "valid is -1"),
    ],
)
def test_a_line_edited_by_hand_into_an_impossible_episode_is_refused(tmp_path, edit, says):
    """A line edited to `turns` 12 with `first_success_turn` 1 was accepted and counted."""
    log = tmp_path / "run.jsonl"
    evaluate(NoisyOracleAgent(epsilon=0.0), GUESS, log_path=log, **GRID)
    text = log.read_text().splitlines()
    episode = json.loads(text[3])
    assert episode["success"]  # a won episode
    text[3] = json.dumps({**episode, **edit})
    log.write_text("\n".join(text) + "\n")
    with pytest.raises(
        ValueError, match=r"run.jsonl:4 is corrupt \(the episode contradicts"
    ) as info:
        evaluate(NoisyOracleAgent(epsilon=0.0), GUESS, log_path=log, **GRID)
    assert says in str(info.value)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ({"judged": "x"}, "judged is 'x'"),
        ({"unparsable": [1]}, "unparsable is [1]"),
        ({"first_non_optimal_turn": "2"}, "first_non_optimal_turn is '2'"),
        ({"oracle_errors": 5}, "oracle_errors is 5"),
        ({"oracle_errors": [[1]]}, "oracle_errors holds [1]"),
        ({"error": 7, "success": False, "first_success_turn": None}, "error is 7"),
        ({"wall_s": "slow"}, "wall_s is 'slow'"),
    ],
)
def test_a_line_with_a_field_of_the_wrong_type_is_refused(tmp_path, edit, says):
    """A resume added up `"judged": "x"` and crashed with a TypeError traceback."""
    log = tmp_path / "run.jsonl"
    evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **GRID)
    text = log.read_text().splitlines()
    text[3] = json.dumps({**json.loads(text[3]), **edit})
    log.write_text("\n".join(text) + "\n")
    with pytest.raises(ValueError, match=r"run.jsonl:4 is corrupt") as info:
        evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **GRID)
    assert says in str(info.value)


def test_a_whole_last_line_that_is_impossible_is_refused_not_deleted(tmp_path):
    """Only a line that is not JSON can be a torn write; a whole last line edited into an
    impossible episode was deleted from the log without a word and the episode redone."""
    log = tmp_path / "run.jsonl"
    evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **GRID)
    text = log.read_text().splitlines()
    text[-1] = json.dumps({**json.loads(text[-1]), "turns": 12})
    log.write_text("\n".join(text) + "\n")
    before = log.read_bytes()
    with pytest.raises(ValueError, match=rf"run.jsonl:{len(text)} is corrupt .*12 turns"):
        evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **GRID)
    assert log.read_bytes() == before


@pytest.mark.parametrize(
    ("change", "mentions"),
    [
        ({"seed": 5}, "seed"),
        ({"budgets": [3, 6, 10]}, "budgets"),
        ({"tasks": 6}, "tasks"),
        ({"samples": 4}, "samples"),
        ({"visible_budget": True}, "mode"),
        ({"diagnostics": False}, "diagnostics"),
    ],
)
def test_a_log_with_other_settings_is_refused(tmp_path, change, mentions):
    log = tmp_path / "run.jsonl"
    evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **GRID)
    before = log.read_bytes()
    with pytest.raises(ValueError, match=f"different settings .*{mentions}"):
        evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **{**GRID, **change})
    assert log.read_bytes() == before
    # K is not a setting of the episodes: the same log serves another K grid.
    evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **{**GRID, "ks": [3]})


def test_another_agent_is_refused(tmp_path):
    log = tmp_path / "run.jsonl"
    evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **GRID)
    with pytest.raises(ValueError, match="agent"):
        evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **{**GRID, "agent_name": "x"})


def test_an_agent_with_other_settings_is_refused_by_its_repr(tmp_path):
    log = tmp_path / "run.jsonl"
    grid = {key: value for key, value in GRID.items() if key != "agent_name"}
    evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=log, **grid)
    with pytest.raises(ValueError, match=r"epsilon=0\.1"):
        evaluate(NoisyOracleAgent(epsilon=0.1), GUESS, log_path=log, **grid)


@pytest.mark.parametrize("content", ["", "not json\n", '{"format": "agent-envs-result/1"}\n'])
def test_unusable_files_are_clear_errors(tmp_path, content):
    log = tmp_path / "run.jsonl"
    log.write_text(content)
    if content:
        with pytest.raises(ValueError, match="not an agent-envs run log"):
            evaluate(NoisyOracleAgent(), GUESS, log_path=log, **GRID)
    else:  # an empty file is a new log
        evaluate(NoisyOracleAgent(), GUESS, log_path=log, **GRID)
    with pytest.raises(ValueError, match="is a directory"):
        evaluate(NoisyOracleAgent(), GUESS, log_path=tmp_path, **GRID)


def test_errors_are_logged_and_can_be_retried(tmp_path):
    log = tmp_path / "run.jsonl"
    outage = {"on": True}

    def sometimes(observation):
        if outage["on"] and "too" in observation:
            raise TimeoutError("API timeout")
        return "50"

    grid = dict(ks=[1], budgets=[3], tasks=6, samples=1, n_bootstrap=20, max_error_rate=1.0)
    first = evaluate(sometimes, GUESS, log_path=log, **grid)
    erred = [line for line in lines(log)[1:] if line["error"]]
    assert first.errors == len(erred) > 0
    assert erred[0]["error"] == "TimeoutError: API timeout" and erred[0]["success"] is False
    outage["on"] = False
    kept = evaluate(sometimes, GUESS, log_path=log, **grid)
    assert kept.errors == first.errors and kept.timing["episodes_run"] == 0
    retried = evaluate(sometimes, GUESS, log_path=log, retry_errors=True, **grid)
    assert retried.errors == 0 and retried.timing["episodes_run"] == first.errors


def test_transcripts_hold_observations_actions_and_raw_text(tmp_path):
    log = tmp_path / "run.jsonl"

    class Talker:
        def act(self, observation, info):
            return AgentAction("50", raw="Let me bisect.\nAction: 50")

    evaluate(
        Talker(),
        GUESS,
        ks=[1],
        budgets=[2],
        tasks=1,
        log_path=log,
        transcripts=True,
        n_bootstrap=10,
    )
    episode = lines(log)[1]
    transcript = episode["transcript"]
    assert transcript["observation"].startswith("I am thinking of an integer")
    assert [step["action"] for step in transcript["steps"]] == ["50"] * episode["turns"]
    assert transcript["steps"][0]["raw"] == "Let me bisect.\nAction: 50"
    assert "valid" in transcript["steps"][0] and "observation" in transcript["steps"][0]


def test_batched_and_sequential_logs_hold_the_same_episodes(tmp_path):
    class Batched(NoisyOracleAgent):
        def act_batch(self, observations, infos):
            return [self.act(o, i) for o, i in zip(observations, infos, strict=True)]

    evaluate(NoisyOracleAgent(epsilon=0.4), GUESS, log_path=tmp_path / "a.jsonl", **GRID)
    evaluate(Batched(epsilon=0.4), GUESS, log_path=tmp_path / "b.jsonl", batch_size=4, **GRID)
    key = lambda e: (e["task"], e["sample"], e["budget"])  # noqa: E731
    first = sorted(untimed(lines(tmp_path / "a.jsonl")[1:]), key=key)
    second = sorted(untimed(lines(tmp_path / "b.jsonl")[1:]), key=key)
    assert first == second
    assert np.all([e["seed"] > 0 for e in first])


def test_numpy_oracle_turns_are_logged_as_json(tmp_path):
    # Regression: an env answering oracle_turns() with a numpy integer made the
    # log line (and the result) unserialisable, crashing the run mid-way.
    from agent_envs.envs.guess_number import GuessNumberEnv

    class NumpyTurns(GuessNumberEnv):
        def oracle_turns(self):
            turns = super().oracle_turns()
            return None if turns is None else np.int64(turns)

    log = tmp_path / "run.jsonl"
    result = evaluate(
        NoisyOracleAgent(epsilon=0.4),
        NumpyTurns,
        ks=[1],
        budgets=[7],
        tasks=3,
        log_path=log,
        n_bootstrap=10,
    )
    assert all(isinstance(line["oracle_turns"], int) for line in lines(log)[1:])
    json.dumps(result.to_dict())


def test_a_log_of_an_older_format_is_refused_by_name(tmp_path):
    log = tmp_path / "old.jsonl"
    log.write_text(json.dumps({"type": "header", "format": "agent-envs-runlog/1"}) + "\n")
    with pytest.raises(
        ValueError, match=r"older run log \(agent-envs-runlog/1.*another --log path"
    ):
        evaluate(
            NoisyOracleAgent(0.4),
            "agent_envs/GuessNumber-v0",
            ks=[1],
            budgets=[5],
            tasks=2,
            log_path=log,
        )


def test_a_transcript_entry_is_bounded(tmp_path):
    """A huge agent reply cannot make a huge log line."""
    from agent_envs.evaluation.episode_record import TRANSCRIPT_TEXT_LIMIT

    def chatty(observation):
        return AgentAction("50", raw="x" * 1_000_000)

    log = tmp_path / "run.jsonl"
    evaluate(
        chatty, GUESS, ks=[1], budgets=[2], tasks=1, n_bootstrap=10, log_path=log, transcripts=True
    )
    lines = log.read_text().splitlines()
    step = json.loads(lines[1])["transcript"]["steps"][0]
    assert step["raw"].startswith("x" * 100) and step["raw"].endswith("more characters]")
    assert max(len(line) for line in lines) < 4 * TRANSCRIPT_TEXT_LIMIT


def test_a_second_run_on_a_locked_log_fails_at_once_and_resume_works_after(tmp_path):
    """One run owns its log; the second fails naming it, redoing nothing."""
    from agent_envs.evaluation.run_log import RunLogLocked

    log = tmp_path / "run.jsonl"
    grid = dict(ks=[1], budgets=[3], tasks=2, n_bootstrap=10, agent_name="same", log_path=log)
    refused = []

    def policy(observation):
        if not refused:  # while the first run holds the log, start a second one
            with pytest.raises(RunLogLocked, match=str(log)):
                evaluate(policy, GUESS, **grid)
            refused.append(True)
        return "50"

    first = evaluate(policy, GUESS, **grid)
    assert refused and first.timing["episodes_run"] == 2
    lines = log.read_text().splitlines()
    assert len(lines) == 3  # header + 2 episodes: nothing duplicated
    again = evaluate(policy, GUESS, **grid)  # the lock went with the first run
    assert again.timing["episodes_run"] == 0 and again.timing["episodes_resumed"] == 2


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_names_the_log_it_could_not_write(tmp_path):
    """The disk-full message ("No space left on device") did not say which file."""
    from agent_envs.evaluation.run_log import RunLog
    from agent_envs.evaluation.settings import EvalSettings

    log = tmp_path / "run.jsonl"
    run = RunLog.open(log, EvalSettings(ks=[1], budgets=[3], tasks=1), "test")
    run.close()
    run._handle = open("/dev/full", "a", encoding="utf-8")  # noqa: SIM115 (every write: ENOSPC)
    record = EpisodeRecord(task_id=0, sample=0, seed=0, budget=3)
    with pytest.raises(OSError, match=f"cannot write {log}: No space left on device"):
        run.append(record)
    with contextlib.suppress(OSError):  # closing flushes the unwritten line again
        run.close()
