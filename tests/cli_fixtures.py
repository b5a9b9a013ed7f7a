"""Helpers shared by the tests of the command line's errors: a quick eval, its one error line."""

from __future__ import annotations

from agent_envs import cli

GUESS = "agent_envs/GuessNumber-v0"
#: The cheapest eval that still plays: the oracle, one K, one T, two tasks.
QUICK = ["--agent", "oracle", "--k", "1", "--t", "7", "--tasks", "2", "--n-bootstrap", "10"]


def eval_cli(*args: str) -> int:
    """Run ``agent-envs eval`` on GuessNumber with :data:`QUICK` and ``args``; its exit status."""
    return cli.main(["eval", GUESS, *QUICK, "--no-progress", *args])


def one_error_line(capsys) -> str:
    """Return the one error line the last command printed (and check that it is one)."""
    printed = capsys.readouterr()
    lines = printed.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agent-envs: error:"), printed.err
    return lines[0]
