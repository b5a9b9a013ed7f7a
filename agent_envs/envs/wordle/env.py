"""Wordle: find a hidden 5-letter word from per-letter green/yellow/grey feedback."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from agent_envs.core import TextEnv, sanitize
from agent_envs.envs.wordle.words import (
    WordLists,
    choose_guess,
    feedback,
    feedback_code,
    pattern_row,
    solve_turns,
    word_lists,
)

__all__ = ["WordleEnv", "WordleTask", "render_marks"]

_GUESS = re.compile(r"^(?:guess\s*)?([a-z]{5})$")
_MARKS = (".", "Y", "G")
#: How many of the latest guesses the board shows; older ones live on in the letter lists.
BOARD_ROWS = 6


def render_marks(guess: str, marks: tuple[int, ...]) -> str:
    """Return one board row, e.g. ``CRANE -> G Y . . G``.

    >>> render_marks("babes", (1, 1, 2, 2, 0))
    'BABES -> Y Y G G .'
    """
    return f"{guess.upper()} -> {' '.join(_MARKS[mark] for mark in marks)}"


@dataclass(frozen=True)
class WordleTask:
    """One instance: the hidden answer and its index in the answer list."""

    secret: str
    index: int


class WordleEnv(TextEnv[WordleTask]):
    """Find a hidden 5-letter English word from per-letter feedback.

    ## Description
    An information-gathering task, the game Wordle.  Each guess must be a word
    from the allowed list; every letter of it is then marked ``G`` (right
    letter, right place), ``Y`` (in the word, elsewhere) or ``.`` (not in the
    word).  Repeated letters follow the real game: greens are settled first,
    then a letter is ``Y`` only while the word still holds an unmatched copy,
    so guessing ``BABES`` for ``ABBEY`` gives ``Y Y G G .``.  The word lists
    ship with the package (``agent_envs/data/wordle_*.txt``, from SCOWL; see
    ``agent_envs/data/README.md``): about 4,400 allowed guesses and about 870
    common answers, a subset of them.

    ## Action Space
    ``Text``: one word, optionally after ``guess`` (``"crane"``, ``"guess
    CRANE"``, ``"Action: crane"``); case does not matter.  A word that is not
    in the allowed list, or anything that is not five letters, is invalid and
    uses up the turn.  ``action_vocabulary`` is the answer list, not the full
    allowed list: every task is solvable with it and the oracle only plays
    from it, while ~4,400 discrete actions would swamp a classic RL library.
    ``admissible_actions()`` is exact, so it is the whole allowed list.

    ## Observation Space
    ``Text``: the reset observation states the rules, the marks and the action
    format.  The view shows the number of guesses so far, the board of the
    latest six guesses (``CRANE -> G Y . . G``), the letters known to be in the
    word and those known not to be; a step observation starts with the
    feedback row of that guess, or why it was invalid.

    ## Starting State
    The answer is drawn uniformly from the answer list by the task id.

    ## Task supply
    Finite: one task per answer, ``task_supply`` (874) in all.  Since the task
    id draws the answer, fewer task ids than that can already share one.

    ## Rewards
    ``1.0`` on the step that guesses the answer, ``0.0`` otherwise.

    ## Episode End
    ### Termination
    The answer is guessed.  There is no six-guess limit in the env: the turn
    budget belongs to ``wrappers.TurnBudget`` (``TurnBudget(env, 6)`` is the
    classic game).
    ### Truncation
    Never by the env; use ``wrappers.TurnBudget``.

    ## Information
    ``task_id``, ``success``, ``valid_action``, ``dead_end``.  ``dead_end`` is
    always ``False``: the answer stays reachable.

    ## Oracle
    The oracle does not read the answer (the convention of
    :class:`~agent_envs.envs.guess_number.GuessNumberEnv`).  It keeps the
    answers consistent with all feedback so far and guesses one of them (hard
    mode): the one whose feedback leaves the smallest worst-case group of
    candidates, ties going to the smaller sum of squared group sizes, then to
    alphabetical order.  ``oracle_actions()`` is that guess.
    ``oracle_turns()`` is the number of guesses this strategy needs from the
    current feedback for this answer (1 to 7 from the start, 3.2 on average).
    Candidates are filtered only when an oracle method is called, and choices
    are memoised per candidate set, so ``step`` stays cheap.

    ## Arguments
    None beyond ``render_mode``.

    ## Version History
    * v0: initial version.
    """

    action_format = "Reply with one 5-letter English word, for example: crane."
    max_action_length = 64

    @property
    def _words(self) -> WordLists:
        # Process-wide data, loaded once: the env (and its pickle) carries only the episode.
        return word_lists()

    @property
    def task_supply(self) -> int:  # type: ignore[override]
        """One task per answer."""
        return len(word_lists().answers)

    @property
    def action_vocabulary(self) -> tuple[str, ...]:  # type: ignore[override]
        """The answer list: enough to solve every task, and all the oracle ever plays."""
        return word_lists().answers

    def _make_task(self, task_id: int, rng: np.random.Generator) -> WordleTask:
        index = int(rng.integers(len(self._words.answers)))
        return WordleTask(secret=self._words.answers[index], index=index)

    def _start(self, task: WordleTask) -> None:
        self._rows: list[str] = []
        self._history: list[tuple[str, int]] = []
        self._present: set[str] = set()
        self._absent: set[str] = set()
        self._solved = False
        # Answers still consistent with the first ``_filtered`` guesses; None: all of them.
        self._candidates: np.ndarray | None = None
        self._filtered = 0

    def _intro(self) -> str:
        return (
            "Guess the hidden 5-letter English word. After each guess every letter is "
            "marked: G = right letter in the right place, Y = in the word but in another "
            "place, . = not in the word. A repeated letter is marked G or Y only as many "
            "times as the word holds it. Guesses must be real words from the game's word "
            f"list. {self.action_format}"
        )

    def _view(self) -> str:
        count = len(self._rows)
        if not count:
            return "Guesses so far: 0."
        shown = self._rows[-BOARD_ROWS:]
        title = f"Guesses so far: {count}."
        if count > BOARD_ROWS:
            title += f" Latest {BOARD_ROWS}:"
        present = " ".join(sorted(self._present)).upper() or "none yet"
        absent = " ".join(sorted(self._absent)).upper() or "none yet"
        return "\n".join([title, *shown, f"In the word: {present}", f"Not in the word: {absent}"])

    def _parse(self, action: str) -> str | None:
        match = _GUESS.match(action)
        return match.group(1) if match else None

    def _apply(self, move: str) -> tuple[str, bool]:
        if move not in self._words.allowed_set:
            return f"Invalid guess '{sanitize(move)}': not in the word list.", False
        marks = feedback(move, self.task.secret)
        row = render_marks(move, marks)
        self._rows.append(row)
        self._history.append((move, feedback_code(marks)))
        for letter, mark in zip(move, marks, strict=True):
            if mark:
                self._present.add(letter)
        # A grey letter with no G or Y copy in the same guess is not in the word at all.
        self._absent.update(
            letter
            for letter, mark in zip(move, marks, strict=True)
            if not mark and letter not in self._present
        )
        if move == self.task.secret:
            self._solved = True
            return f"{row}  Correct: the word is {move.upper()}.", True
        return row, True

    def _is_success(self) -> bool:
        return self._solved

    def admissible_actions(self) -> list[str]:
        """Every allowed word: any of them is a legal guess, only some are useful."""
        return list(self._words.allowed)

    def _consistent(self) -> np.ndarray:
        """Return the answer indices consistent with every guess so far (no secret read)."""
        if self._candidates is None:
            self._candidates = np.arange(len(self._words.answers), dtype=np.intp)
        words = self._words
        for guess, code in self._history[self._filtered :]:
            encoded = np.frombuffer(guess.encode("ascii"), dtype=np.uint8) - ord("a")
            codes = pattern_row(encoded.astype(np.int8), words.answer_codes[self._candidates])
            self._candidates = self._candidates[codes == code]
        self._filtered = len(self._history)
        return self._candidates

    def oracle_actions(self) -> list[str]:
        """The strategy's next guess, chosen from the feedback alone; ``[]`` once solved."""
        if self._solved:
            return []
        return [self._words.answers[choose_guess(self._consistent())]]

    def answer(self) -> str:
        """Return the secret word."""
        return self.task.secret

    def oracle_turns(self) -> int:
        """The guesses the oracle's strategy needs from the current feedback for this answer."""
        if self._solved:
            return 0
        return solve_turns(self._consistent(), self.task.index)
