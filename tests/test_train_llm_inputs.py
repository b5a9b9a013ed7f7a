"""``train-llm``'s inputs: every one is checked before ``--out`` is written (a
missing model must leave no ``agent_envs_run.json`` or empty ``model/``
behind), and ``--steps 0`` is defined, not refused: no GRPO, and the model GRPO
would start from is saved and evaluated (``--help`` says so, and so does the
run).  The command runs in process (``cli.main``); no test takes a training step.
"""

from __future__ import annotations

import sys

import pytest

from agent_envs import cli

GUESS = "agent_envs/GuessNumber-v0"


def train_llm(out, *args: str) -> int:
    return cli.main(["train-llm", GUESS, "--out", str(out), *args])


def one_error_line(capsys) -> str:
    printed = capsys.readouterr()
    lines = (printed.err + printed.out).strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0], printed
    return lines[0]


# --------------------------------------------------------- 2: nothing written
@pytest.mark.parametrize("kind", ["missing", "folder without config.json", "text file"])
def test_a_model_that_cannot_load_is_refused_before_out_is_written(tmp_path, capsys, kind):
    """Item 2: one line, exit 2, and no run folder, no marker, no ``model/``."""
    model = tmp_path / "nonexistent" / "model"
    if kind == "folder without config.json":
        model.mkdir(parents=True)
    elif kind == "text file":
        model.parent.mkdir()
        model.write_text("my notes\n")
    out = tmp_path / "D"
    assert train_llm(out, "--model", str(model)) == 2
    assert str(model) in one_error_line(capsys)
    assert not out.exists()


def test_a_missing_package_is_refused_before_out_is_written(tmp_path, capsys, monkeypatch):
    """Item 2: a missing dependency of training (here trl) is named before ``--out`` is written."""
    monkeypatch.setitem(sys.modules, "trl", None)  # import trl now raises ImportError
    out = tmp_path / "D"
    assert train_llm(out, "--eval-tasks", "0") == 2
    line = one_error_line(capsys)
    assert "trl" in line and "rl" in line
    assert not out.exists()


def test_an_existing_run_folder_is_untouched_by_a_refused_model(tmp_path, capsys):
    """Item 2: a bad ``--model`` with ``--overwrite`` leaves a previous run's files as they were."""
    out = tmp_path / "D"
    out.mkdir()
    marker = out / "agent_envs_run.json"
    marker.write_text('{"command": "train-llm", "settings": {}, "written": ["result.json"]}\n')
    (out / "result.json").write_text("{}\n")
    before = {path.name: path.read_text() for path in out.iterdir()}
    assert train_llm(out, "--model", str(tmp_path / "none"), "--overwrite") == 2
    one_error_line(capsys)
    assert {path.name: path.read_text() for path in out.iterdir()} == before


@pytest.mark.parametrize(
    "flags",
    [
        ["--lora", "-1"],
        ["--lora", "2", "--lora-layers", "0"],
        ["--lora", "2", "--lora-alpha", "-1"],
        ["--lora", "2", "--lora-dropout", "1"],
        ["--lora", "2", "--lora-targets", ","],
        ["--micro-batch", "3"],
        ["--micro-batch", "0"],
    ],
)
def test_hostile_lora_and_micro_batch_values_are_one_line(tmp_path, capsys, flags):
    """Item 2: each is a user error (one line, exit 2, nothing written), not a traceback."""
    out = tmp_path / "D"
    assert train_llm(out, *flags) == 2
    one_error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize(
    ("tasks", "says"), [("0", "must be an int >= 1, got 0"), ("5:3", "must not be empty")]
)
def test_bad_tasks_say_what_is_wrong(tmp_path, capsys, tasks, says):
    """`--tasks 0` printed "invalid _task_ids value", the name of a private function."""
    out = tmp_path / "D"
    assert train_llm(out, "--tasks", tasks) == 2
    line = one_error_line(capsys)
    assert "--tasks" in line and says in line and "_task_ids" not in line
    assert not out.exists()


# ------------------------------------------------------------ 3: --steps 0
def test_steps_0_is_defined_in_help(capsys):
    """Item 3: ``--help`` says what ``--steps 0`` does (no GRPO: the starting model evaluated)."""
    with pytest.raises(SystemExit):
        cli.main(["train-llm", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "0: no GRPO" in text and "--steps 0 --warm-start 0 evaluates the given model" in text


def test_steps_0_saves_and_evaluates_the_starting_model_and_says_so(tmp_path, capsys):
    """Item 3: ``--steps 0 --warm-start 0`` says so, runs no step, and evaluates the model."""
    pytest.importorskip("trl")
    import json

    out = tmp_path / "D"
    small = ["--tasks", "1", "--group-size", "2", "--tasks-per-step", "1", "--budget", "2"]
    evaluation = ["--eval-tasks", "1", "--eval-samples", "1", "--eval-k", "1"]
    assert train_llm(out, "--steps", "0", "--warm-start", "0", *small, *evaluation) == 0
    assert "--steps 0: no GRPO; the starting model as given is saved and evaluated" in (
        capsys.readouterr().out
    )
    sidecar = json.loads((out / "model" / "train_llm.json").read_text())
    assert sidecar["log"] == [] and sidecar["config"]["steps"] == 0
    assert json.loads((out / "result.json").read_text())
