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
    assert re.fullmatch(r"progress GuessNumber-v0: 3/3 episodes in \d+s", records[3])


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
