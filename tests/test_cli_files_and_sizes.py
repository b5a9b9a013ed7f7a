"""The CLI never replaces a user's file, bounds every size it is given, and
reports errors in one line.

The CLI runs in process (``cli.main``).  The serve items are in
``tests/test_serve_session_slots.py``.
"""

from __future__ import annotations

import pytest
from cli_fixtures import GUESS, eval_cli, one_error_line

from agent_envs import cli
from agent_envs.evaluation import settings as settings_module


# ------------------------------------------------------- 7: errors that hide bugs
@pytest.mark.parametrize("error", [KeyError("task"), ValueError("bug"), TypeError("bug")])
def test_a_bug_inside_the_evaluator_keeps_its_traceback(monkeypatch, capsys, error):
    """Item 7: a plain KeyError/ValueError/TypeError is a defect: traceback and exit 1."""

    def broken_plan(self):
        raise error

    monkeypatch.setattr(settings_module.EvalSettings, "plan", broken_plan)
    assert eval_cli() == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert f"{type(error).__name__}: " in err and "agent-envs: error:" not in err


def test_user_errors_are_their_own_types_and_still_the_old_ones():
    """Item 7: checks raise the user-error types, which code catching ValueError still catches."""
    from agent_envs.arguments import USER_ERRORS, UsageError
    from wrappers.errors import InvalidType, InvalidValue, UserInputError
    from wrappers.utils.validators import check_int

    assert not {ValueError, TypeError, KeyError} & set(USER_ERRORS)
    with pytest.raises(InvalidValue):
        check_int(-1, "n", 0)
    with pytest.raises(InvalidType):
        check_int("1", "n")
    assert issubclass(UsageError, UserInputError)
    assert issubclass(InvalidValue, ValueError) and issubclass(InvalidType, TypeError)


# ------------------------------------------------------------- 8: suggestions
def test_an_unknown_namespace_gets_no_suggestion_from_another(capsys):
    """Item 8: foo/Bar-v0 used to suggest MountainCar-v0; an unknown namespace gets none."""
    assert cli.main(["eval", "foo/Bar-v0"]) == 2
    line = one_error_line(capsys)
    assert "Unknown env id 'foo/Bar-v0'" in line and "Did you mean" not in line


def test_a_misspelled_id_in_a_registered_namespace_is_suggested_from_it(capsys):
    """Item 8: suggestions come from the namespace the id names."""
    assert cli.main(["eval", "agent_envs/Sokobn-v0"]) == 2
    line = one_error_line(capsys)
    assert "Did you mean agent_envs/Sokoban-v0" in line and "MountainCar" not in line


# ------------------------------------------------------------------ 4: sizes
@pytest.mark.parametrize(
    ("args", "limit"),
    [
        (["eval", GUESS, "--t", "1000000000"], "1,000,000"),
        (["eval", GUESS, "--t", "100000000000000000000"], "1,000,000"),
        (["eval", GUESS, "--k", "2000000"], "1,000,000"),
        (["eval", GUESS, "--seed", str(2**70)], "9,223,372,036,854,775,807"),
        (["eval", GUESS, "--history", "99999999"], "1,000,000"),
        (["eval", GUESS, "--batch-size", "99999999"], "1,000,000"),
        (["eval", GUESS, "--workers", "99999999"], "1,000,000"),
        (["eval", GUESS, "--max-error-rate", "7"], "[0, 1]"),
        (["play", GUESS, "--budget", "99999999"], "1,000,000"),
        (["play", GUESS, "--seed", str(2**70)], "9,223,372,036,854,775,807"),
    ],
)
def test_every_size_flag_is_bounded_and_names_its_limit(capsys, args, limit):
    """Item 4: --t 1000000000 and --seed 2**70 were accepted and ran past any timeout."""
    assert cli.main(args) == 2
    assert limit in one_error_line(capsys)


def test_the_limits_are_in_the_help_and_one_per_concept(capsys):
    """Item 4: the limit is named in --help, and T's limit is serve's client-budget limit."""
    from agent_envs.integrations import openenv
    from wrappers import TurnBudget
    from wrappers.utils.validators import MAX_TURNS

    with pytest.raises(SystemExit):
        cli.main(["eval", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the T grid (default 5,10,20,40); at most 1,000,000" in text
    assert "base seed, an int >= 0 (default 0); at most 9,223,372,036,854,775,807" in text
    assert openenv.MAX_CLIENT_BUDGET == MAX_TURNS == 1_000_000
    import gymnasium as gym

    with pytest.raises(ValueError, match="at most 1,000,000"):
        TurnBudget(gym.make(GUESS), max_turns=MAX_TURNS + 1)


# ------------------------------------------------------------------ 1: files
NOTES = "my precious notes\n"


@pytest.mark.parametrize("flag,name", [("--out", "notes.txt"), ("--plot", "figure.png")])
def test_eval_never_replaces_a_file_it_did_not_write(tmp_path, capsys, flag, name):
    """Item 1: `eval --out notes.txt` replaced a user's notes (exit 0); --plot a non-image."""
    pytest.importorskip("matplotlib")
    mine = tmp_path / name
    mine.write_text(NOTES)
    assert eval_cli(flag, str(mine)) == 2
    line = one_error_line(capsys)
    assert str(mine) in line and "--overwrite" in line and flag in line
    assert mine.read_text() == NOTES
    assert eval_cli(flag, str(mine), "--overwrite") == 0  # told to: replaced
    assert mine.read_bytes() != NOTES.encode()


def test_a_users_own_png_is_not_replaced_but_our_outputs_are(tmp_path, capsys):
    """Item 1: only a result or plot this project wrote is replaced without --overwrite."""
    pytest.importorskip("matplotlib")
    photo = tmp_path / "photo.png"
    photo.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)  # a PNG, but not ours
    assert eval_cli("--plot", str(photo)) == 2
    assert "--overwrite" in one_error_line(capsys) and photo.read_bytes().endswith(b"\x00" * 64)
    out, plot = tmp_path / "r.json", tmp_path / "p.png"
    assert eval_cli("--out", str(out), "--plot", str(plot)) == 0
    assert eval_cli("--out", str(out), "--plot", str(plot)) == 0  # ours: replaced again


def test_compare_out_never_replaces_a_file_it_did_not_write(tmp_path, capsys):
    """Item 1: `compare --out` replaced a user's file too."""
    result = tmp_path / "r.json"
    assert eval_cli("--out", str(result)) == 0
    mine = tmp_path / "notes.txt"
    mine.write_text(NOTES)
    capsys.readouterr()
    assert cli.main(["compare", str(result), str(result), "--out", str(mine)]) == 2
    assert "--overwrite" in one_error_line(capsys) and mine.read_text() == NOTES


# --------------------------------------------------------------- 9: compare
@pytest.mark.parametrize("a,b,which", [(",", "x.json", "A"), ("x.json", ",,", "B")])
def test_compare_names_the_argument_that_holds_no_file(capsys, a, b, which):
    """Item 9: `compare , x.json` said "a must be an EvalResult", the Python API's words."""
    assert cli.main(["compare", a, b]) == 2
    line = one_error_line(capsys)
    assert f"compare: {which} names no result file" in line and "EvalResult" not in line
