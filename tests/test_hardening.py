"""Regression tests for the hardening of issue 9: durable runs, output paths, input edges.

Each test names the item of the issue it covers.  The CLI runs in process
(``cli.main``), which is the console script minus the start-up cost.
"""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from agent_envs import cli
from agent_envs.evaluation import EvalResult, evaluate
from agent_envs.evaluation.settings import MAX_EPISODES
from baselines.simple_agents import OracleAgent
from wrappers import BudgetMix
from wrappers.chat_history import ChatHistory

GUESS = "agent_envs/GuessNumber-v0"
ROOT = Path(__file__).resolve().parents[1]
QUICK = ["--agent", "oracle", "--k", "1", "--t", "7", "--tasks", "2", "--n-bootstrap", "10"]


def eval_cli(*args: str) -> int:
    return cli.main(["eval", GUESS, *QUICK, "--no-progress", *args])


def one_error_line(capsys) -> str:
    printed = capsys.readouterr()
    lines = printed.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agent-envs: error:"), printed.err
    return lines[0]


# ------------------------------------------------------------ durable runs
def test_out_equal_to_log_or_plot_is_refused_before_running(tmp_path, capsys):
    """Item 9: --out equal to --log would overwrite the log; --plot must differ from both."""
    log, out = tmp_path / "run.jsonl", tmp_path / "r.png"
    assert eval_cli("--log", str(log), "--out", str(log)) == 2
    assert "--log" in one_error_line(capsys) and not log.exists()
    assert eval_cli("--out", str(out), "--plot", str(out)) == 2
    assert "same file" in one_error_line(capsys)
    # --plot r writes r.png: the same file as --out r.png.
    assert eval_cli("--out", str(out), "--plot", str(tmp_path / "r")) == 2
    assert "same file" in one_error_line(capsys) and not out.exists()
    assert eval_cli("--log", str(log), "--plot", str(log)) == 2
    capsys.readouterr()
    assert not log.exists()


def test_history_and_its_window_are_part_of_the_resume_check(tmp_path, capsys):
    """Item 10: a log written without --history (or with another window) is not resumed with it."""
    log = str(tmp_path / "run.jsonl")
    assert eval_cli("--log", log) == 0
    assert eval_cli("--log", log, "--history") == 2
    assert "different settings" in one_error_line(capsys)
    windowed = str(tmp_path / "windowed.jsonl")
    assert eval_cli("--log", windowed, "--history", "2") == 0
    assert eval_cli("--log", windowed, "--history", "3") == 2
    assert '"window": 2' in one_error_line(capsys)
    assert eval_cli("--log", windowed, "--history", "2") == 0  # the same settings resume


def test_wrappers_of_a_callable_env_are_part_of_the_resume_check(tmp_path):
    """Item 10: the same goes for wrappers a user's env factory adds."""
    grid = dict(ks=[1], budgets=[7], tasks=2, n_bootstrap=10, log_path=tmp_path / "run.jsonl")
    evaluate(OracleAgent(), lambda: ChatHistory(gym.make(GUESS), window=2), env_name="g", **grid)
    with pytest.raises(ValueError, match="different settings"):
        evaluate(OracleAgent(), lambda: gym.make(GUESS), env_name="g", **grid)


@pytest.mark.parametrize("flag", ["--out", "--log", "--plot"])
def test_an_output_path_under_a_file_fails_before_any_episode(tmp_path, capsys, flag):
    """Item 11: `--out README.md/x.json` used to run everything, then fail and lose the run."""
    a_file = tmp_path / "README.md"
    a_file.write_text("not a folder")
    log = tmp_path / "run.jsonl"
    extra = [] if flag == "--log" else ["--log", str(log)]
    assert eval_cli(*extra, flag, str(a_file / "x.json")) == 2
    assert "is a file, not a folder" in one_error_line(capsys)
    assert not log.exists()  # no episode ran


def test_every_output_is_written_where_it_says(tmp_path, capsys):
    """Items 11 and 18: nested folders are made, and --plot prints the file really written."""
    out, plot = tmp_path / "a" / "r.json", tmp_path / "b" / "surface"
    assert eval_cli("--out", str(out), "--plot", str(plot)) == 0
    err = capsys.readouterr().err
    assert f"wrote {plot}.png" in err and f"wrote {out}" in err
    assert Path(f"{plot}.png").read_bytes()[:4] == b"\x89PNG" and not plot.exists()
    assert eval_cli("--plot", str(tmp_path / "surface.jpg")) == 2
    assert ".png" in one_error_line(capsys)


def test_resume_says_what_it_found(tmp_path, capsys):
    """Item 19: a resumed run says how many finished episodes it found and how many remain."""
    log = str(tmp_path / "run.jsonl")
    assert cli.main(["eval", GUESS, *QUICK, "--samples", "2", "--log", log]) == 0
    assert "Resuming" not in capsys.readouterr().err
    lines = Path(log).read_text().splitlines()
    Path(log).write_text("\n".join(lines[:-1]) + "\n")  # as if stopped before the last episode
    assert cli.main(["eval", GUESS, *QUICK, "--samples", "2", "--log", log]) == 0
    assert f"Resuming {log}: 3 finished episodes found, 1 to run." in capsys.readouterr().err


# ------------------------------------------------------ results that lie
def _result_dict() -> dict:
    result = evaluate(OracleAgent(), GUESS, ks=[1, 2], budgets=[3, 7], tasks=3, samples=2)
    return result.to_dict()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(success_counts=d["success_counts"][:2]), "success_counts is not 3x2"),
        (lambda d: d.update(success_counts=[[1, 1]] * 3), "not what its success_counts give"),
        (lambda d: d.update(success_counts=[[0, 5]] * 3), "success_counts must lie in"),
        (lambda d: d.update(success_counts=[[0.5, 2]] * 3), "whole numbers"),
        (lambda d: d["surface"][0].__setitem__(0, 1.5), "surface must hold numbers in"),
        (lambda d: d.update(ks=[2, 1]), "sorted"),
        (lambda d: d.update(samples=1), "samples must be"),
        (lambda d: d.update(task_ids=[0, 0, 1]), "distinct"),
        (lambda d: d.update(errors=9), "errors <= episodes"),
    ],
)
def test_a_malformed_result_is_refused(change, message):
    """Item 13: a loaded result must agree with itself, or compare would print nonsense."""
    data = _result_dict()
    EvalResult.from_dict(json.loads(json.dumps(data)))  # the untouched one loads
    change(data)
    with pytest.raises(ValueError, match=message):
        EvalResult.from_dict(data)


def test_compare_refuses_a_malformed_result_file(tmp_path, capsys):
    """Item 13: through the CLI, a clear one-line error."""
    data = _result_dict()
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(data))
    data["success_counts"] = data["success_counts"][:1]
    bad.write_text(json.dumps(data))
    assert cli.main(["compare", str(good), str(bad)]) == 2
    assert "bad.json: malformed result: success_counts" in one_error_line(capsys)


def test_the_committed_study_results_still_load():
    """Item 13: the stricter check accepts every result the project has written."""
    study = json.loads((ROOT / "docs" / "budgetmix" / "results.json").read_text())
    loaded = 0
    for runs in study.values():
        for data in runs.values():
            if data.get("format") == "agent-envs-result/1":
                EvalResult.from_dict(data)
                loaded += 1
    assert loaded > 0


# ---------------------------------------------------------------- input edges
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tasks", "2147483647"], f"at most {MAX_EPISODES:,}"),
        (["--tasks", "0:2147483647"], f"at most {MAX_EPISODES:,}"),
        (["--samples", "1000000000"], "more than the"),
        (["--seed", "-1"], "seed"),
    ],
)
def test_huge_or_negative_eval_arguments_fail_at_once(args, message, capsys):
    """Item 14: a one-line error, not a MemoryError or a hang while planning."""
    assert cli.main(["eval", GUESS, "--agent", "oracle", "--k", "1", "--t", "7", *args]) == 2
    assert message in one_error_line(capsys)


def test_budget_mix_normalises_huge_weights_safely():
    """Item 15: weights of 1e308 used to overflow to inf and fail inside numpy on reset."""
    env = BudgetMix(gym.make(GUESS), [5, 10], weights=[1e308, 1e308])
    assert np.allclose(env.weights, [0.5, 0.5])
    _, info = env.reset(seed=0)
    assert info["budget"] in (5, 10)
    tiny = BudgetMix(gym.make(GUESS), [5, 10], weights=[5e-324, 0.0])
    assert tiny.weights.tolist() == [1.0, 0.0]
    for bad in ([float("inf"), 1.0], [float("nan"), 1.0], [-1.0, 2.0], [0.0, 0.0]):
        with pytest.raises(ValueError):
            BudgetMix(gym.make(GUESS), [5, 10], weights=bad)
