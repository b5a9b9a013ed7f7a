"""Wordle's word lists, its feedback rule and its secret-blind solver.

The lists are package data (``agent_envs/data/wordle_*.txt``, built by
``tools/build_wordle_lists.py``) and load once per process, on first use.
Nothing here knows about Gymnasium; :mod:`agent_envs.envs.wordle` builds on it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

import numpy as np

__all__ = [
    "WordLists",
    "choose_guess",
    "feedback",
    "feedback_code",
    "pattern_row",
    "solve_turns",
    "word_lists",
]

GREEN, YELLOW, GREY = 2, 1, 0
_POWERS = np.array([1, 3, 9, 27, 81], dtype=np.int32)
_CACHE_LIMIT = 100_000


def feedback(guess: str, secret: str) -> tuple[int, ...]:
    """Return the per-letter marks of ``guess`` against ``secret``: 2 green, 1 yellow, 0 grey.

    Greens are settled first; then, left to right, a letter is yellow only while
    the secret still has an unmatched copy of it, as in the real game.

    >>> feedback("babes", "abbey")
    (1, 1, 2, 2, 0)
    """
    marks = [GREY] * 5
    unmatched: list[str] = []
    for index in range(5):
        if guess[index] == secret[index]:
            marks[index] = GREEN
        else:
            unmatched.append(secret[index])
    for index in range(5):
        if marks[index] == GREY and guess[index] in unmatched:
            marks[index] = YELLOW
            unmatched.remove(guess[index])
    return tuple(marks)


def feedback_code(marks: tuple[int, ...]) -> int:
    """Encode five marks as one base-3 integer in ``0..242``."""
    return marks[0] + 3 * marks[1] + 9 * marks[2] + 27 * marks[3] + 81 * marks[4]


def _encode(words: tuple[str, ...]) -> np.ndarray:
    """Return the words as an ``(N, 5)`` array of letter indices 0..25."""
    if not words:
        return np.zeros((0, 5), dtype=np.int8)
    data = np.frombuffer("".join(words).encode("ascii"), dtype=np.uint8)
    return (data.reshape(-1, 5) - ord("a")).astype(np.int8)


def _pattern_block(guesses: np.ndarray, secrets: np.ndarray) -> np.ndarray:
    """Return the feedback codes of every guess against every secret, ``(G, S)`` uint8.

    The vectorised twin of :func:`feedback` (tests check they agree): one row
    per (guess, secret) pair, with the secret's unmatched letter counts in ``left``.
    """
    pairs = len(guesses) * len(secrets)
    g = np.repeat(guesses, len(secrets), axis=0).astype(np.intp)
    s = np.tile(secrets, (len(guesses), 1)).astype(np.intp)
    row = np.arange(pairs)
    green = g == s
    left = np.zeros((pairs, 26), dtype=np.int8)
    for index in range(5):
        # One cell per row, so plain fancy-index addition never collides.
        left[row, s[:, index]] += ~green[:, index]
    code = np.zeros(pairs, dtype=np.int32)
    for index in range(5):
        letter = g[:, index]
        yellow = ~green[:, index] & (left[row, letter] > 0)
        left[row, letter] -= yellow
        code += (2 * green[:, index] + yellow) * int(_POWERS[index])
    return code.reshape(len(guesses), len(secrets)).astype(np.uint8)


def pattern_row(guess: np.ndarray, secrets: np.ndarray) -> np.ndarray:
    """Return the feedback codes of one encoded guess against ``secrets``, ``(S,)``."""
    return _pattern_block(guess[None, :], secrets)[0]


@dataclass(frozen=True)
class WordLists:
    """The shipped lists: ``allowed`` guesses and hidden ``answers`` (a subset), sorted."""

    allowed: tuple[str, ...]
    answers: tuple[str, ...]
    allowed_set: frozenset[str]
    answer_codes: np.ndarray


def _read(name: str) -> tuple[str, ...]:
    text = resources.files("agent_envs").joinpath("data", name).read_text(encoding="ascii")
    words = tuple(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )
    bad = [word for word in words if len(word) != 5 or not word.isalpha() or not word.islower()]
    if bad:
        raise ValueError(
            f"agent_envs/data/{name} holds entries that are not 5-letter words: {bad[:5]}"
        )
    return words


@functools.cache
def word_lists() -> WordLists:
    """Load the shipped word lists (once per process)."""
    allowed, answers = _read("wordle_allowed.txt"), _read("wordle_answers.txt")
    allowed_set = frozenset(allowed)
    missing = [word for word in answers if word not in allowed_set]
    if missing:
        raise ValueError(f"Wordle answers missing from the allowed list: {missing[:5]}")
    return WordLists(allowed, answers, allowed_set, _encode(answers))


@functools.cache
def _answer_patterns() -> np.ndarray:
    """Return the ``(A, A)`` feedback codes of every answer as guess against every answer."""
    codes = word_lists().answer_codes
    # Blocks keep the (G, S, 26) work array small.
    blocks = [_pattern_block(codes[i : i + 64], codes) for i in range(0, len(codes), 64)]
    return np.concatenate(blocks, axis=0)


_choices: dict[bytes, int] = {}


def choose_guess(candidates: np.ndarray) -> int:
    """Return the oracle's guess (an answer index) for a set of consistent answers.

    The strategy plays only consistent answers (hard mode) and picks the one whose
    feedback splits the candidates into the smallest largest part; ties go to the
    smaller sum of squared part sizes (fewer candidates left on average), then to
    the earlier word.  It depends on the candidate set alone, never on the secret,
    so choices are memoised per set for the whole process.
    """
    if len(candidates) <= 2:
        return int(candidates[0])
    key = candidates.tobytes()
    choice = _choices.get(key)
    if choice is None:
        size = len(candidates)
        block = _answer_patterns()[np.ix_(candidates, candidates)].astype(np.intp)
        block += 243 * np.arange(size)[:, None]
        counts = np.bincount(block.ravel(), minlength=243 * size).reshape(size, 243)
        worst, squares = counts.max(axis=1), (counts * counts).sum(axis=1)
        choice = int(candidates[np.lexsort((candidates, squares, worst))[0]])
        if len(_choices) >= _CACHE_LIMIT:
            _choices.clear()
        _choices[key] = choice
    return choice


def solve_turns(candidates: np.ndarray, secret: int) -> int:
    """Return how many guesses :func:`choose_guess` needs to hit answer ``secret``."""
    patterns = _answer_patterns()
    turns = 0
    while True:
        guess = choose_guess(candidates)
        turns += 1
        if guess == secret:
            return turns
        row = patterns[guess]
        candidates = candidates[row[candidates] == row[secret]]
