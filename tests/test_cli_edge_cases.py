"""The CLI at its edges: durable runs, output paths, malformed inputs and bad numbers.

The CLI runs in process
(``cli.main``), which is the console script minus the start-up cost.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import gymnasium as gym
import pytest
from cli_fixtures import GUESS, QUICK, eval_cli, one_error_line

from agent_envs import cli
from agent_envs.evaluation import EvalResult, evaluate
from agent_envs.evaluation.settings import MAX_EPISODES
from baselines.simple_agents import OracleAgent
from wrappers.info import ChatHistory

ROOT = Path(__file__).resolve().parents[1]


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


def test_a_history_window_of_0_is_refused_not_read_as_the_whole_dialogue(tmp_path, capsys):
    """`--history 0` was taken as "all"; the flag alone is all, a window is >= 1."""
    log = tmp_path / "run.jsonl"
    assert eval_cli("--log", str(log), "--history", "0") == 2
    assert "argument --history: the value must be an int >= 1, got 0" in one_error_line(capsys)
    assert not log.exists()


@pytest.mark.parametrize(
    ("flag", "value", "reason"),
    [
        ("--n-bootstrap", "0", "an int >= 1, got 0"),
        ("--n-bootstrap", "100001", "at most 100,000, got 100,001"),
        ("--step-quality", "-1", "an int >= 0, got -1"),
        ("--step-quality", "1001", "at most 1,000, got 1,001"),
    ],
)
def test_a_number_out_of_range_is_refused_by_the_flags_name(tmp_path, capsys, flag, value, reason):
    """The error named the setting (``n_bootstrap must be ...``), which no user typed."""
    log = tmp_path / "run.jsonl"
    assert eval_cli("--log", str(log), flag, value) == 2
    assert f"argument {flag}: the value must be {reason}" in one_error_line(capsys)
    assert not log.exists()


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
        (lambda d: d["settings"].update(ks=[2, 1]), "sorted"),
        (lambda d: d["settings"].update(samples=1), "larger than samples=1"),
        (lambda d: d["settings"].update(tasks=[0, 0, 1]), "distinct"),
        (lambda d: d.update(errors=9), "errors <= episodes"),
        (lambda d: d["settings"].update(env_name=None), "env_name must be a non-empty string"),
        (lambda d: d["diagnostics"].update(dead_end_rate=0.5), "dead_end_rate must be a list"),
        (lambda d: d["diagnostics"].update(error_recovery=["x"]), "error_recovery must be"),
        (lambda d: d["diagnostics"].update(success_after_error=1), "success_after_error must"),
        (lambda d: d["diagnostics"].update(by_horizon={"5": 1}), "by_horizon must map"),
        (lambda d: d["diagnostics"].update(decision_quality="high"), "decision_quality must"),
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
    # Every result object anywhere in every committed study (their layouts may change).
    pending = [json.loads(path.read_text()) for path in (ROOT / "docs").rglob("results.json")]
    loaded = 0
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if str(node.get("format", "")).startswith("agent-envs-result/"):
                EvalResult.from_dict(node)
                loaded += 1
            else:
                pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
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


# ------------------------------------------------------------------- play
def play(monkeypatch, capsys, stdin: str, *args: str) -> str:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    assert cli.main(["play", *args]) == 0
    return capsys.readouterr().out


def test_play_lines_that_are_not_actions_use_no_turn(monkeypatch, capsys):
    """Item 16: an empty line, an unknown :command and arrow keys are refused, not played."""
    out = play(monkeypatch, capsys, "\n   \n:undo\n\x1b[A\n50\n", GUESS, "--budget", "3")
    assert out.count("No turn was used.") == 4
    assert "Empty line" in out and "Unknown command ':undo'" in out and "arrow keys" in out
    assert "[Turns left: 2 of 3]" in out and "[Turns left: 1 of 3]" not in out


def test_play_refuses_a_line_that_is_not_utf8_and_keeps_playing(monkeypatch, capsys):
    """Bytes that are not UTF-8 (Latin-1 pasted in) under a strict UTF-8 stdin, as a UTF-8
    locale gives: play ended in a UnicodeDecodeError traceback; now the line uses no turn."""
    import io
    import sys

    strict = io.TextIOWrapper(io.BytesIO(b"caf\xe9\n50\n"), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdin", strict)
    assert cli.main(["play", GUESS, "--budget", "3"]) == 0
    out = capsys.readouterr().out
    assert "not UTF-8 text" in out and out.count("No turn was used.") == 1
    assert "[Turns left: 2 of 3]" in out and "[Turns left: 1 of 3]" not in out


def test_play_shows_wordle_feedback_once(monkeypatch, capsys):
    """Item 16: the guess's feedback line is also the board's last row: print it once."""
    out = play(monkeypatch, capsys, "crane\n", "agent_envs/Wordle-v0", "--budget", "3")
    after_guess = out.split("> ", 1)[1]
    row = next(line for line in after_guess.splitlines() if line.startswith("CRANE -> "))
    assert after_guess.count(row) == 1


@pytest.mark.parametrize(
    ("env_id", "guess"),
    [(GUESS, "1"), ("agent_envs/Wordle-v0", "crane"), ("agent_envs/KnowledgeSearch-v0", "x")],
)
def test_play_reveals_the_answer_when_the_budget_runs_out(monkeypatch, capsys, env_id, guess):
    """Item 16: where the env has an answer, an unsolved game ends by showing it."""
    env = gym.make(env_id).unwrapped
    env.reset(seed=0, options={"task_id": 0})
    out = play(monkeypatch, capsys, f"{guess}\n", env_id, "--budget", "1")
    assert "Out of turns" in out and f"The answer was: {env.answer()}" in out
    assert env.answer() and env.answer() != guess


def test_play_says_nothing_of_an_answer_where_there_is_none(monkeypatch, capsys):
    out = play(monkeypatch, capsys, "up\n", "agent_envs/Maze-7x7-v0", "--budget", "1")
    assert "Out of turns" in out and "The answer was" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed", "-1"], "--seed must be an int >= 0"),
        (["--task", "-1"], "--task must be an int >= 0"),
        (["--task", "2147483647"], "--task must be below"),
        (["--budget", "0"], "--budget must be an int >= 1"),
    ],
)
def test_play_refuses_bad_numbers_at_once(capsys, args, message):
    """Item 14: `play --seed -1` used to end in a Gymnasium traceback."""
    assert cli.main(["play", GUESS, *args]) == 2
    assert message in one_error_line(capsys)


# ------------------------------------------------------------------- help
def test_every_option_says_its_default_and_agent_lists_the_short_names():
    """Item 17: every option of eval, play and compare has help with its default."""
    from agent_envs.plugins import agent_names

    commands = cli._parser()._subparsers._group_actions[0].choices
    for name in ("eval", "play", "compare"):
        for action in commands[name]._actions:
            if action.option_strings and action.dest != "help":
                assert action.help and "default" in action.help, (name, action.dest)
            if not action.option_strings:
                assert action.help, (name, action.dest)
    agent_help = next(a.help for a in commands["eval"]._actions if a.dest == "agent")
    assert all(short in agent_help for short in agent_names())


def _every_parser() -> dict:
    """Each command's parser: the built-in ones and the installed ones (train-*, serve)."""
    from agent_envs.integrations.openenv import _parser as serve_parser
    from baselines.llm.training.train import build_parser as llm_parser
    from baselines.sb3.train import build_parser as sb3_parser

    parsers = dict(cli._parser()._subparsers._group_actions[0].choices)
    parsers.update({"train-sb3": sb3_parser(), "train-llm": llm_parser(), "serve": serve_parser()})
    return parsers


#: A number as a help writes it: 8, 0.99, 5e-4, 1,048,576.
_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?!\d)|(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?")


def _states(text: str, default: object) -> bool:
    """Whether the help ``text`` names ``default`` (a number as a number, a grid as 1,2,4)."""
    if isinstance(default, (tuple, list)):
        return ",".join(map(str, default)) in text
    if isinstance(default, str):
        return default in text
    return float(default) in {float(n.replace(",", "")) for n in _NUMBER.findall(text)}


def test_every_option_of_every_command_has_help_naming_its_real_default():
    """train-sb3's --algo, --encoding and --keep had no help, and --seed hid its default.

    Every option of every command (installed ones too) has help, and an option
    whose default is a value (not ``None`` or a switch) names that value: a
    help that states another default, or none, fails here.
    """
    parsers = _every_parser()
    assert {"train-sb3", "train-llm", "serve", "eval", "bench"} <= set(parsers)
    for name, parser in parsers.items():
        for action in parser._actions:
            if not action.option_strings or action.dest == "help":
                continue
            assert action.help, (name, action.option_strings)
            default = action.default
            if default is None or isinstance(default, bool) or default == []:
                continue
            assert _states(action.help, default), (name, action.option_strings, default)


def test_the_stated_default_check_sees_a_wrong_number():
    assert _states("discount (default 0.99); at most 1", 0.99)
    assert _states("(default: 1,048,576)", 1 << 20) and _states("(5e-4)", 5e-4)
    assert not _states("discount (default 0.9); at most 1", 0.99)
    assert _states("the K grid (default 1,2,4,8)", (1, 2, 4, 8))


def test_traceback_shows_an_installed_commands_trace(capsys):
    """`agent-envs --traceback serve ...` printed one line: no installed command saw the flag."""
    assert cli.main(["--traceback", "serve", "not-an/Env-v0"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err
    assert cli.main(["serve", "not-an/Env-v0"]) == 2  # without it: one line again
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("agent-envs serve: error: Unknown env id"), err


def test_a_flag_of_several_commands_is_declared_once_in_arguments_py():
    """Issue 57: `--backend` and `--workers` were declared in bench and eval, with two helps.

    A flag that more than one command takes is declared in ``agent_envs/arguments.py``
    (``add_backend_flags``, ...), so no flag name is given to ``add_argument`` in two
    modules of ``agent_envs/cli``.
    """
    import ast

    declared: dict[str, set[str]] = {}
    for path in sorted((Path(cli.__file__).parent).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and str(arg.value).startswith("-"):
                        declared.setdefault(arg.value, set()).add(path.name)
    assert declared  # the scan sees the commands' own flags (--only, --task, ...)
    twice = {name: sorted(where) for name, where in declared.items() if len(where) > 1}
    assert not twice, f"declare these once, in agent_envs/arguments.py: {twice}"


@pytest.mark.parametrize("command", [["eval", GUESS], ["play", GUESS], ["compare", "a", "b"]])
def test_a_misspelled_flag_points_at_that_commands_options(capsys, command):
    """Item 17: not the top-level usage, which lists no option of the command; one line."""
    assert cli.main([*command, "--sampels", "3"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "unrecognized arguments: --sampels 3" in err[0]
    assert f"see `agent-envs {command[0]} --help`" in err[0]


# ------------------------------------------------------------------- plots
@pytest.fixture
def figures(monkeypatch):
    """Capture the figures the plots build, to read their labels and scales."""
    from agent_envs.evaluation import plotting

    built = []
    original = plotting.build_figure

    def keep(*args, **kwargs):
        built.append(original(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(plotting, "build_figure", keep)
    return built


def test_difference_plot_names_a_and_b_labels_its_colorbar_and_scales_minus_one_to_one(
    tmp_path, figures
):
    """Item 21: a difference of 0.10 must not look as saturated as 0.97."""
    from agent_envs.evaluation import compare
    from baselines.simple_agents import NoisyOracleAgent

    grid = dict(ks=[1], budgets=[7], tasks=6, samples=2, n_bootstrap=50)
    a = evaluate(OracleAgent(), GUESS, agent_name="oracle", **grid)
    b = evaluate(NoisyOracleAgent(epsilon=0.1), GUESS, agent_name="noisy", **grid)
    compare(a, b).plot(tmp_path / "diff.png")
    axes, colorbar = figures[-1].axes
    assert "A = oracle" in axes.get_title() and "B = noisy" in axes.get_title()
    assert colorbar.get_ylabel() == "Pass@(K,T) of A minus B"
    assert axes.images[0].get_clim() == (-1.0, 1.0)
    a.plot(tmp_path / "a.png")
    assert figures[-1].axes[1].get_ylabel() == "Pass@(K,T)"


def test_compare_cli_names_sides_by_file_when_the_agents_share_a_name(tmp_path, capsys, figures):
    """Item 21: two runs of one agent are told apart by their file stems."""
    grid = dict(ks=[1], budgets=[7], tasks=3, n_bootstrap=10, agent_name="oracle")
    for stem, seed in (("before", 0), ("after", 1)):
        evaluate(OracleAgent(), GUESS, seed=seed, **grid).save(tmp_path / f"{stem}.json")
    argv = ["compare", str(tmp_path / "after.json"), str(tmp_path / "before.json")]
    assert cli.main([*argv, "--plot", str(tmp_path / "d.png")]) == 0
    assert "A = after" in capsys.readouterr().out
    assert "A = after" in figures[-1].axes[0].get_title()


# ---------------------------------------------------------- install hints
def test_install_hints_point_at_the_checkout_not_at_pypi():
    """Item 20: agent-envs is not on PyPI; `pip install agent-envs[...]` would fail or mislead."""
    import agent_envs

    assert agent_envs.install_hint("plot") == 'pip install -e ".[plot]" in the agent-envs checkout'
    texts = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    for package in ("agent_envs", "baselines", "wrappers"):
        texts += (ROOT / package).rglob("*.py")
    for path in texts:
        text = path.read_text(encoding="utf-8")
        assert "agent-envs[" not in text, path
        assert "pip install agent-envs" not in text, path


def test_eval_on_a_log_another_run_holds_fails_at_once_naming_it(tmp_path, capsys):
    """Item 8, through the CLI: the lock another process would hold, held here."""
    import fcntl

    log = tmp_path / "run.jsonl"
    assert eval_cli("--log", str(log)) == 0
    before = log.read_bytes()
    with log.open("a") as other_run:
        fcntl.flock(other_run.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert eval_cli("--log", str(log)) == 2
        line = one_error_line(capsys)
    assert f"run log {log} is in use by another run" in line
    assert log.read_bytes() == before  # nothing read into it, nothing written
    assert eval_cli("--log", str(log)) == 0  # free again: resumes
