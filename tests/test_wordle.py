"""Wordle's own rules: real-game feedback, shipped word lists, and a secret-blind oracle."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

from agent_envs.envs.wordle.env import BOARD_ROWS, WordleEnv, render_marks
from agent_envs.envs.wordle.words import (
    _answer_patterns,
    _encode,
    feedback,
    feedback_code,
    pattern_row,
    word_lists,
)


def env_with_secret(secret: str) -> tuple[WordleEnv, int]:
    """Return an env reset to the first task id whose answer is ``secret``."""
    env = WordleEnv()
    for task_id in range(20_000):
        env.reset(seed=0, options={"task_id": task_id})
        if env.task.secret == secret:
            return env, task_id
    raise AssertionError(f"no task id below 20000 hides {secret!r}")


@pytest.mark.parametrize(
    ("guess", "secret", "marks"),
    [
        ("babes", "abbey", (1, 1, 2, 2, 0)),  # two Bs: one green, one yellow
        ("eerie", "crane", (0, 0, 1, 0, 2)),  # three Es, one E in the word: only the green
        ("speed", "abide", (0, 0, 1, 0, 1)),  # two Es, one E: the first is yellow
        ("geese", "those", (0, 0, 0, 2, 2)),  # the green E uses up the only E
        ("llama", "hello", (1, 1, 0, 0, 0)),  # two Ls in both, none in place
        ("crane", "crane", (2, 2, 2, 2, 2)),
    ],
)
def test_feedback_handles_repeated_letters_like_the_real_game(guess, secret, marks):
    assert feedback(guess, secret) == marks
    code = pattern_row(_encode((guess,))[0], _encode((secret,)))[0]
    assert code == feedback_code(marks)


def test_vectorised_feedback_agrees_with_the_reference_rule():
    lists = word_lists()
    rng = np.random.default_rng(0)
    guesses = [lists.allowed[i] for i in rng.integers(len(lists.allowed), size=40)]
    codes = _encode(lists.answers)
    for guess in guesses:
        row = pattern_row(_encode((guess,))[0], codes)
        assert row.tolist() == [feedback_code(feedback(guess, s)) for s in lists.answers]
    patterns = _answer_patterns()
    for i, j in rng.integers(len(lists.answers), size=(500, 2)):
        assert patterns[i, j] == feedback_code(feedback(lists.answers[i], lists.answers[j]))


def test_word_lists_ship_as_package_data():
    lists = word_lists()
    data = resources.files("agent_envs").joinpath("data")
    for name, words in (
        ("wordle_allowed.txt", lists.allowed),
        ("wordle_answers.txt", lists.answers),
    ):
        lines = data.joinpath(name).read_text(encoding="ascii").splitlines()
        assert tuple(line for line in lines if not line.startswith("#")) == words
    assert 3_000 <= len(lists.allowed) <= 6_000
    assert 500 <= len(lists.answers) <= 1_500
    assert set(lists.answers) <= lists.allowed_set
    assert list(lists.allowed) == sorted(set(lists.allowed))
    assert all(len(w) == 5 and w.isascii() and w.isalpha() and w.islower() for w in lists.allowed)
    assert (
        data.joinpath("wordle_scowl_copyright.txt").read_text(encoding="utf-8").startswith("SCOWL")
    )


def test_a_word_outside_the_list_is_invalid_and_uses_the_turn():
    env = WordleEnv(render_mode="ansi")
    env.reset(seed=0, options={"task_id": 0})
    before = (env.render(), env.oracle_turns(), env.oracle_actions())
    for text in ("abcde", "zzzzz", "guess qwert"):
        observation, reward, terminated, _, info = env.step(text)
        assert (info["valid_action"], reward, terminated) == (False, 0.0, False)
        assert "not in the word list" in observation.splitlines()[0]
    for text in ("cat", "cranes", "crane crane", "12345"):
        observation, _, _, _, info = env.step(text)
        assert info["valid_action"] is False
        assert observation.startswith("Invalid action")
    assert (env.render(), env.oracle_turns(), env.oracle_actions()) == before


def test_guess_formats_and_the_board():
    env, _ = env_with_secret("sheep")
    observation, _, _, _, info = env.step("Action: guess GEESE")
    assert info["valid_action"] is True
    # The E in place is green, one more E is yellow, the third E is grey.
    assert observation.splitlines()[0] == "GEESE -> . Y G Y ."
    assert "In the word: E S" in observation
    assert "Not in the word: G" in observation


def test_no_limit_of_six_guesses_and_the_board_keeps_the_latest_rows():
    env, _ = env_with_secret("sheep")
    wrong = ["eerie", "speed", "geese", "llama", "hello", "abide", "those", "babes"]
    for guess in wrong:
        _, reward, terminated, truncated, info = env.step(guess)
        assert (reward, terminated, truncated, info["dead_end"]) == (0.0, False, False, False)
    observation, reward, terminated, _, info = env.step("sheep")
    assert (reward, terminated, info["success"]) == (1.0, True, True)
    assert "Correct: the word is SHEEP." in observation
    rows = [line for line in observation.splitlines() if " -> " in line]
    assert len(rows) == 1 + BOARD_ROWS  # the feedback line, then the board
    assert (
        rows[1:] == [render_marks(g, feedback(g, "sheep")) for g in [*wrong, "sheep"]][-BOARD_ROWS:]
    )
    assert f"Guesses so far: {len(wrong) + 1}. Latest {BOARD_ROWS}:" in observation
    assert env.oracle_actions() == [] and env.oracle_turns() == 0


def test_the_oracle_never_reads_the_secret():
    env = WordleEnv()
    env.reset(seed=0, options={"task_id": 0})
    opening = env.oracle_actions()
    # Group tasks by the feedback the opening guess gets; within a group the
    # secrets differ but everything the oracle may see is the same.
    groups: dict[int, dict[str, int]] = {}
    for task_id in range(300):
        env.reset(seed=0, options={"task_id": task_id})
        assert env.oracle_actions() == opening
        code = feedback_code(feedback(opening[0], env.task.secret))
        groups.setdefault(code, {})[env.task.secret] = task_id
    pairs = [list(group.values())[:2] for group in groups.values() if len(group) >= 2]
    assert len(pairs) >= 5
    for first, second in pairs:
        a, b = WordleEnv(), WordleEnv()
        a.reset(seed=0, options={"task_id": first})
        b.reset(seed=0, options={"task_id": second})
        assert a.task.secret != b.task.secret
        assert a.step(opening[0])[0] == b.step(opening[0])[0]
        assert a.oracle_actions() == b.oracle_actions()


def test_the_oracle_finds_every_answer_in_exactly_oracle_turns():
    env = WordleEnv()
    turns = []
    for secret in word_lists().answers:
        env.reset(seed=0, options={"task_id": 0})
        # Swap the answer in place: faster than hunting a task id for each word.
        env._task = type(env.task)(secret=secret, index=word_lists().answers.index(secret))
        expected = env.oracle_turns()
        for turn in range(1, expected + 1):
            *_, info = env.step(env.oracle_actions()[0])
            assert env.oracle_turns() == expected - turn
        assert info["success"], secret
        turns.append(expected)
    assert min(turns) >= 1 and max(turns) <= 8


def test_the_oracle_follows_up_after_any_guess():
    env, _ = env_with_secret("sheep")
    env.step("geese")  # an allowed word that is not an answer still narrows the set
    expected = env.oracle_turns()
    for _ in range(expected):
        env.step(env.oracle_actions()[0])
    assert env.task.secret == "sheep" and env.oracle_turns() == 0


def test_vocabulary_is_the_answer_list_and_admissible_is_the_allowed_list():
    env = WordleEnv()
    env.reset(seed=0, options={"task_id": 1})
    assert env.action_vocabulary == word_lists().answers
    assert env.admissible_actions() == list(word_lists().allowed)
    assert set(env.oracle_actions()) <= set(env.action_vocabulary)
