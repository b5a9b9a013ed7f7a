"""Long runs are never silent: one-line records where no bar can be drawn."""

from __future__ import annotations

import io
import re
import threading

import pytest

from agent_envs import progress
from agent_envs.cli import main
from agent_envs.evaluation import evaluate, session
from agent_envs.progress import ProgressLines
from baselines import OracleAgent


class Clock:
    """A clock that a test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_records_come_at_a_steady_interval_with_rate_and_time_left():
    clock, out = Clock(), io.StringIO()
    lines = ProgressLines(20, 0, "GuessNumber-v0", interval=30.0, stream=out, clock=clock)
    for _ in range(10):  # one episode every 12 s: a record at 36 s, 72 s and 108 s
        clock.now += 12.0
        lines.update(errors=0)
    lines.close()
    assert out.getvalue().splitlines() == [
        "progress GuessNumber-v0: 3/20 episodes (15%), 5.0 episodes/min, about 3m 24s left",
        "progress GuessNumber-v0: 6/20 episodes (30%), 5.0 episodes/min, about 2m 48s left",
        "progress GuessNumber-v0: 9/20 episodes (45%), 5.0 episodes/min, about 2m 12s left",
        "progress GuessNumber-v0: 10/20 episodes in 2m 00s",
    ]


def test_a_resumed_run_counts_only_new_episodes_toward_the_rate():
    clock, out = Clock(), io.StringIO()
    lines = ProgressLines(10, 6, "Maze", interval=30.0, stream=out, clock=clock)
    clock.now += 60.0
    lines.update(errors=2)
    assert out.getvalue() == (
        "progress Maze: 7/10 episodes (70%), 1.0 episodes/min, about 3m 00s left, 2 errors\n"
    )


def test_a_run_shorter_than_the_interval_prints_nothing():
    clock, out = Clock(), io.StringIO()
    lines = ProgressLines(5, 0, "x", interval=30.0, stream=out, clock=clock)
    for _ in range(5):
        clock.now += 1.0
        lines.update(errors=0)
    lines.close()
    assert out.getvalue() == ""


def every_episode(monkeypatch):
    """A record after every episode, from the episodes alone (no heartbeat thread)."""
    monkeypatch.setattr(progress, "INTERVAL", 0.0)
    monkeypatch.setattr(
        session, "ProgressLines", lambda *a, **k: ProgressLines(*a, **{**k, "heartbeat": False})
    )


def test_the_evaluator_writes_records_when_stderr_is_no_terminal(monkeypatch, capsys):
    every_episode(monkeypatch)
    evaluate(OracleAgent(), "agent_envs/GuessNumber-v0", ks=[1], budgets=[8], tasks=3, samples=1,
             diagnostics=False, progress=True)  # fmt: skip
    records = capsys.readouterr().err.splitlines()
    assert records[:3] == [
        line for line in records[:3] if re.fullmatch(r"progress GuessNumber-v0: \d/3 .*", line)
    ]
    assert [record.split(":")[1].split()[0] for record in records[:3]] == ["1/3", "2/3", "3/3"]
    assert re.fullmatch(r"progress GuessNumber-v0: 3/3 episodes, \d+ turns in \d+s", records[3])


@pytest.mark.parametrize(("flag", "shown"), [((), True), (("--no-progress",), False)])
def test_the_cli_reports_progress_by_default_when_stderr_is_a_file(monkeypatch, capsys, flag,
                                                                   shown):  # fmt: skip
    every_episode(monkeypatch)
    grid = ["--k", "1", "--t", "8", "--tasks", "2", "--samples", "1", "--no-diagnostics"]
    status = main(["eval", "agent_envs/GuessNumber-v0", "--agent", "oracle", *grid, *flag])
    assert status == 0
    err = capsys.readouterr().err
    assert ("progress GuessNumber-v0: 2/2 episodes (100%)" in err) is shown, err


def test_the_heartbeat_writes_while_no_episode_finishes():
    """Episodes played in lockstep finish together: records must come anyway."""
    out = io.StringIO()
    lines = ProgressLines(20, 0, "Batch", interval=0.01, stream=out, heartbeat=True)
    try:
        for _ in range(1000):  # wait until the thread has written (liveness, not speed)
            if out.getvalue():
                break
            threading.Event().wait(0.01)
    finally:
        lines.close()
    first = out.getvalue().splitlines()[0]
    pattern = r"progress Batch: 0/20 episodes \(0%\), 0\.0 episodes/min, running for \d+s"
    assert re.fullmatch(pattern, first), first


def test_records_count_the_turns_while_no_episode_finishes():
    """Lockstep episodes showed "0/80 episodes, 0.0 episodes/min" for minutes: now the turns."""
    clock, out, played = Clock(), io.StringIO(), [0]
    lines = ProgressLines(80, 0, "Wordle-v0", interval=30.0, stream=out, clock=clock,
                          turns=lambda: played[0])  # fmt: skip
    for _ in range(4):  # 64 episodes in lockstep: 64 turns every 10 s, none finished
        clock.now += 10.0
        played[0] += 64
        lines.beat()
    clock.now += 20.0
    lines.update(errors=0)
    lines.close()
    assert out.getvalue().splitlines() == [
        "progress Wordle-v0: 0/80 episodes (0%), 0.0 episodes/min, running for 30s, "
        "192 turns (384.0 turns/min)",
        "progress Wordle-v0: 1/80 episodes (1%), 1.0 episodes/min, about 1h 19m left, "
        "256 turns (256.0 turns/min)",
        "progress Wordle-v0: 1/80 episodes, 256 turns in 1m 00s",
    ]


class LockstepGuesser:
    """Guesses 50 in every live episode at once, and reads the turn count at every call."""

    def __init__(self, seen):
        self.seen = seen

    def act_batch(self, observations, infos):
        self.seen.append(self.turns())
        return ["50"] * len(observations)


def test_the_evaluator_counts_turns_as_they_are_played(monkeypatch):
    """The count the records show grows every lockstep turn, before any episode ends."""
    made = []

    def spy(*args, **kwargs):
        made.append(ProgressLines(*args, **{**kwargs, "heartbeat": False}))
        return made[-1]

    monkeypatch.setattr(session, "ProgressLines", spy)
    monkeypatch.setattr(session, "wants_lines", lambda: True)
    seen = []
    policy = LockstepGuesser(seen)
    policy.turns = lambda: made[0]._turns()
    result = evaluate(policy, "agent_envs/GuessNumber-v0", ks=[1], budgets=[3], tasks=4,
                      samples=1, batch_size=4, diagnostics=False, progress=True)  # fmt: skip
    assert seen == [4, 8, 12]  # 4 episodes in lockstep, 3 turns: no episode ended before
    assert made[0]._turns() == result.timing["env_steps"] == 12
