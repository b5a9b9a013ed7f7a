"""The agent-envs command line, end to end through subprocess and in process."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import gymnasium as gym
import pytest

import agent_envs
from agent_envs import cli, plugins

ROOT = Path(__file__).resolve().parents[1]
GUESS = "agent_envs/GuessNumber-v0"


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agent_envs.cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        cwd=ROOT,
        timeout=120,
    )


def assert_one_line_error(process: subprocess.CompletedProcess, match: str) -> None:
    assert process.returncode == 2, process.stderr
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agent-envs: error:"), process.stderr
    assert match in lines[0]


def test_list_groups_ids_by_family_with_oracle_turns():
    process = run_cli("list")
    assert process.returncode == 0, process.stderr
    lines = process.stdout.splitlines()
    assert "GuessNumber" in lines
    row = next(line for line in lines if "agent_envs/GuessNumber-v0 " in line)
    assert "2-7" in row and "bisection" in row
    for env_id in agent_envs.env_ids():
        assert env_id in process.stdout


def test_eval_then_compare_end_to_end(tmp_path):
    common = ["--k", "1,2", "--t", "2,7", "--tasks", "8", "--samples", "2", "--n-bootstrap", "200"]
    oracle = run_cli(
        "eval",
        GUESS,
        "--agent",
        "oracle",
        *common,
        "--out",
        str(tmp_path / "o.json"),
        "--plot",
        str(tmp_path / "o.png"),
        "--log",
        str(tmp_path / "o.jsonl"),
    )
    assert oracle.returncode == 0, oracle.stderr
    assert "Pass@(K,T)" in oracle.stdout and "agent=oracle" in oracle.stdout
    assert (tmp_path / "o.png").read_bytes()[:4] == b"\x89PNG"
    result = json.loads((tmp_path / "o.json").read_text())
    assert result["surface"][0][1] == 1.0 and result["settings"]["agent_name"] == "oracle"
    noisy = run_cli(
        "eval",
        GUESS,
        "--agent",
        "noisy-oracle",
        "--agent-kwargs",
        '{"epsilon": 0.9}',
        *common,
        "--out",
        str(tmp_path / "n.json"),
        "--no-diagnostics",
    )
    assert noisy.returncode == 0, noisy.stderr
    noisy_settings = json.loads((tmp_path / "n.json").read_text())["settings"]
    assert noisy_settings["agent_name"] == 'noisy-oracle {"epsilon": 0.9}'
    compared = run_cli(
        "compare",
        str(tmp_path / "o.json"),
        str(tmp_path / "n.json"),
        "--plot",
        str(tmp_path / "d.png"),
        "--out",
        str(tmp_path / "d.json"),
    )
    assert compared.returncode == 0, compared.stderr
    assert "A is better at:" in compared.stdout and "(K=1,T=7)" in compared.stdout
    assert (tmp_path / "d.png").exists() and (tmp_path / "d.json").exists()


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["eval", "agent_envs/Nope-v0"], "Unknown env id"),
        (["eval", GUESS, "--k", "1,8", "--samples", "4"], "K=8 is larger than samples=4"),
        (["eval", GUESS, "--t", "0,5"], "budgets"),
        (["eval", GUESS, "--t", "five"], "argument --t: the list takes comma-separated integers"),
        (["eval", GUESS, "--samples", "0"], "argument --samples: the value must be an int >= 1"),
        (["eval", GUESS, "--sampels", "3"], "unrecognized arguments: --sampels 3 (did you mean"),
        (["eval", GUESS, "--agent", "nope"], "Unknown agent 'nope'"),
        (["eval", GUESS, "--agent", "no_such_pkg:Agent"], "cannot import agent module"),
        (["eval", GUESS, "--agent-kwargs", "{bad"], "not valid JSON"),
        (["eval", GUESS, "--tasks", "a:b"], "--tasks takes"),
    ],
)
def test_eval_errors_are_one_line(args, match, capsys):
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("agent-envs: error:") and match in err[0], err


def test_errors_through_the_console_entry_point():
    assert_one_line_error(run_cli("eval", "agent_envs/Nope-v0"), "Unknown env id")
    assert_one_line_error(run_cli("eval", GUESS, "--k", "1,8", "--samples", "4"), "K=8 is larger")


def test_file_errors_are_one_line(tmp_path, capsys):
    # In process: the same main() as the console script, minus the start-up cost.
    assert cli.main(["eval", GUESS, "--tasks", "2", "--log", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert cli.main(["compare", str(tmp_path / "missing.json"), str(tmp_path / "x.json")]) == 2
    assert "cannot read result" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{")
    assert cli.main(["compare", str(tmp_path / "bad.json"), str(tmp_path / "bad.json")]) == 2
    assert "is not JSON" in capsys.readouterr().err
    (tmp_path / "log.jsonl").write_text("hello\n")
    assert cli.main(["eval", GUESS, "--tasks", "2", "--log", str(tmp_path / "log.jsonl")]) == 2
    assert "not an agent-envs run log" in capsys.readouterr().err


def test_compare_refuses_incompatible_grids(tmp_path, capsys):
    for name, budgets in (("a", "3,7"), ("b", "3,8")):
        args = [
            "eval",
            GUESS,
            "--agent",
            "oracle",
            "--k",
            "1",
            "--t",
            budgets,
            "--tasks",
            "3",
            "--n-bootstrap",
            "20",
            "--out",
            str(tmp_path / f"{name}.json"),
        ]
        assert cli.main(args) == 0
    capsys.readouterr()
    assert cli.main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err
    assert "Cannot compare" in err and "T grids differ" in err


def test_play_reads_stdin_and_reports_the_outcome():
    process = run_cli(
        "play", GUESS, "--task", "0", "--budget", "10", stdin=":hint\n50\nhello\n:actions\n"
    )
    assert process.returncode == 0, process.stderr
    out = process.stdout
    assert "I am thinking of an integer" in out and "[Turns left: 10 of 10]" in out
    assert "[Turns left: 8 of 10]" in out  # "50" and "hello" each used a turn
    assert "Invalid action 'hello'" in out
    assert "End of input: stopped." in out


def test_play_until_solved(capsys, monkeypatch):
    import io

    # Bisection on task 0: the oracle's guesses, typed by a person.
    from agent_envs.evaluation.stack import resolve_env

    env = resolve_env(GUESS, None)[0].env().unwrapped
    env.reset(seed=0, options={"task_id": 0})
    guesses = []
    while env.oracle_actions():
        guesses.append(env.oracle_actions()[0])
        env.step(guesses[-1])
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(guesses) + "\n"))
    assert cli.main(["play", GUESS, "--task", "0"]) == 0
    assert f"Solved in {len(guesses)} turns." in capsys.readouterr().out

    monkeypatch.setattr(sys, "stdin", io.StringIO("1\n1\n"))
    assert cli.main(["play", GUESS, "--task", "0", "--budget", "2"]) == 0
    assert "Out of turns: not solved within 2." in capsys.readouterr().out


@pytest.fixture
def budgeted_ids():
    """Two ids whose stacks carry their own TurnBudget(50): one visible, one hidden."""
    from wrappers import TurnBudget

    ids = {"test/PlayVisible-v0": True, "test/PlayHidden-v0": False}
    for env_id, visible in ids.items():
        gym.register(env_id, entry_point=lambda visible=visible: TurnBudget(
            gym.make(GUESS), 50, visible=visible))  # fmt: skip
    yield list(ids)
    for env_id in ids:
        del gym.registry[env_id]


def test_play_uses_a_stacks_own_budget_wrapper_or_refuses_it(budgeted_ids, capsys, monkeypatch):
    import io

    visible, hidden = budgeted_ids
    monkeypatch.setattr(sys, "stdin", io.StringIO("1\n1\n"))
    assert cli.main(["play", visible, "--task", "0", "--budget", "2"]) == 0
    out = capsys.readouterr().out
    # --budget sets the stack's own wrapper: one budget line a turn, not two wrappers' two.
    assert out.count("[Turns left:") == 3 and "[Turns left: 0 of 2]" in out
    assert "Out of turns: not solved within 2." in out
    assert cli.main(["play", hidden, "--task", "0", "--budget", "2"]) == 2
    assert "already has a hidden TurnBudget" in capsys.readouterr().err


def test_train_sb3_dispatches_lazily(monkeypatch, capsys):
    seen = []
    fake = types.SimpleNamespace(main=lambda argv: seen.append(argv) or 0)
    monkeypatch.setitem(sys.modules, "baselines.sb3.train", fake)
    assert cli.main(["train-sb3", "--env", GUESS, "--steps", "10"]) == 0
    assert seen == [["--env", GUESS, "--steps", "10"]]

    monkeypatch.setitem(sys.modules, "baselines.sb3.train", None)
    assert cli.main(["train-sb3"]) == 2
    assert "train-sb3 is not available: cannot import command module" in capsys.readouterr().err

    def missing_torch(name):
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    monkeypatch.setattr(plugins.importlib, "import_module", missing_torch)
    assert cli.main(["train-sb3"]) == 2
    assert 'pip install -e ".[sb3]" in the agent-envs checkout' in capsys.readouterr().err


class NeedsHistory:
    """A ``module:Class`` agent for the CLI: plays the oracle, but only with a dialogue."""

    required_info = ("oracle_actions",)

    def act(self, observation, info):
        messages = info["messages"]
        assert messages[-1]["content"] == observation
        assert "[Turns left:" in observation  # the history sits outside the visible budget
        return info["oracle_actions"][0]


def test_bring_your_own_agent_with_chat_history(tmp_path, capsys):
    args = [
        "eval",
        GUESS,
        "--agent",
        "tests.test_cli:NeedsHistory",
        "--k",
        "1",
        "--t",
        "7",
        "--tasks",
        "4",
        "--n-bootstrap",
        "20",
        "--visible-budget",
        "--out",
        str(tmp_path / "r.json"),
    ]
    assert cli.main([*args, "--history", "3"]) == 0
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["errors"] == 0 and result["surface"] == [[1.0]]
    settings = result["settings"]
    assert settings["env_name"] == GUESS and settings["agent_name"] == "tests.test_cli:NeedsHistory"
    capsys.readouterr()
    # Without --history the agent fails on every episode, and
    # a run in which every episode failed exits non-zero, saying what failed.
    assert cli.main(args) == 2
    printed = capsys.readouterr()
    assert "every episode failed" in printed.err and "4x \"KeyError: 'messages'\"" in printed.err
    assert printed.out == ""  # no table of zeros
    assert json.loads((tmp_path / "r.json").read_text())["errors"] == 0  # not overwritten


def test_an_unusable_out_path_is_refused_before_the_run(tmp_path, capsys):
    # Regression: --out naming a folder failed only after the whole run, losing it.
    log = tmp_path / "run.jsonl"
    for flag in ("--out", "--plot"):
        args = ["eval", GUESS, "--tasks", "2", "--k", "1", "--t", "3", "--log", str(log)]
        assert cli.main([*args, flag, str(tmp_path)]) == 2
        assert f"{flag} {tmp_path} is a directory" in capsys.readouterr().err
    assert not log.exists()  # nothing ran


def test_out_and_plot_create_nested_folders(tmp_path):
    out, plot = tmp_path / "runs" / "a" / "x.json", tmp_path / "plots" / "x.png"
    args = ["eval", GUESS, "--agent", "oracle", "--tasks", "2", "--k", "1", "--t", "7"]
    assert cli.main([*args, "--n-bootstrap", "10", "--out", str(out), "--plot", str(plot)]) == 0
    assert json.loads(out.read_text())["surface"] == [[1.0]]
    assert plot.read_bytes()[:4] == b"\x89PNG"


class RaisesOnTwoLines:
    """A ``module:Class`` agent whose constructor refuses on two lines."""

    def __init__(self) -> None:
        raise ValueError("model not found\nhint: download it first")


def test_a_multi_line_message_is_still_one_line(capsys):
    # Regression: user-side messages with newlines (an agent's, or the last
    # policy error quoted by RunAborted) broke the one-line error contract.
    assert cli.main(["eval", GUESS, "--agent", "tests.test_cli:RaisesOnTwoLines"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model not found hint: download it first" in err[0], err


def _hello(argv: list[str]) -> int:
    """A third-party command for the entry-point test."""
    print("hello", *argv)
    return 0


def test_a_third_party_agent_and_command_plug_in_through_entry_points(monkeypatch, capsys):
    """Agents and commands are found by entry points, as a third party registers."""
    import importlib.metadata

    real = importlib.metadata.entry_points
    extra = {
        plugins.AGENT_GROUP: [
            importlib.metadata.EntryPoint(
                "my-oracle", "baselines.simple_agents:OracleAgent", plugins.AGENT_GROUP
            )
        ],
        plugins.COMMAND_GROUP: [
            importlib.metadata.EntryPoint("hello", "tests.test_cli:_hello", plugins.COMMAND_GROUP)
        ],
    }

    def entry_points(**selection):
        return [*real(**selection), *extra.get(selection.get("group"), [])]

    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", entry_points)
    assert "my-oracle" in plugins.agent_names() and "hello" in plugins.command_names()
    args = ["eval", GUESS, "--agent", "my-oracle", "--k", "1", "--t", "7", "--tasks", "3"]
    assert cli.main([*args, "--n-bootstrap", "10", "--no-progress"]) == 0
    assert "agent=my-oracle" in capsys.readouterr().out
    assert cli.main(["hello", "world"]) == 0
    assert capsys.readouterr().out == "hello world\n"
