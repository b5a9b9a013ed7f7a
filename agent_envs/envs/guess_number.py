"""GuessNumber: find a secret integer from higher/lower feedback."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from agent_envs.core import TextEnv
from wrappers.utils import seeding
from wrappers.utils.validators import MAX_COUNT, check_at_most, check_bool, check_int

_NUMBER = re.compile(r"^(?:guess\s*)?(-?\d{1,12})$")

#: Every text of the terse format (``terse=True``).  The view is the interval
#: as ``low-high``.  A small model reads a third of the tokens (a 12-token
#: first observation, 9-token later ones, against 54 and 25), so its episodes
#: cost half the CPU; the words were chosen so that no feedback reads like a
#: reply to copy (``docs/real_model_study/README.md``).
TERSE = {
    "intro": "Guess the integer.",
    "higher": "Higher.",
    "lower": "Lower.",
    "correct": "Correct!",
    "outside": "Out of range.",
    "invalid": "Invalid.",
}


class _Verbose:
    """The default format's texts, each a function of the numbers it shows."""

    @staticmethod
    def interval(low: int, high: int) -> str:
        return f"The secret is between {low} and {high}."

    @staticmethod
    def correct(move: int) -> str:
        return f"{move} is correct!"

    @staticmethod
    def higher(move: int) -> str:
        return f"{move} is too low: the secret is higher."

    @staticmethod
    def lower(move: int) -> str:
        return f"{move} is too high: the secret is lower."


class _Terse:
    """The terse format's texts (:data:`TERSE`), with the same arguments as :class:`_Verbose`'s."""

    @staticmethod
    def interval(low: int, high: int) -> str:
        return f"{low}-{high}"

    @staticmethod
    def correct(move: int) -> str:
        return TERSE["correct"]

    @staticmethod
    def higher(move: int) -> str:
        return TERSE["higher"]

    @staticmethod
    def lower(move: int) -> str:
        return TERSE["lower"]


#: A range of at most this many numbers gets the feedback on every legal guess
#: built with its first env (260 kB at this size, shared by the envs of one
#: format and size); a larger one builds each text when the guess is made.
TABULATED = 1000
#: The largest ``max_number``.  Design decision: every legal guess is one entry of
#: ``action_vocabulary`` (a tuple of strings), so 10**12 took the machine's whole
#: memory before failing; a million guesses (about 100 MB, 20 bisection turns) is the
#: same limit as every other count (:data:`~wrappers.utils.validators.MAX_COUNT`).
MAX_NUMBER = MAX_COUNT


class _OnDemand:
    """A feedback table of a range too large to build in advance: each text built when read."""

    __slots__ = ("_say",)

    def __init__(self, say: Callable[[int], str]) -> None:
        self._say = say

    def __getitem__(self, guess: int) -> str:
        return self._say(guess)


class _Texts:
    """One format's texts for the range ``1..max_number``, built once (:func:`_texts`).

    ``interval(low, high)`` is the view.  ``correct``, ``higher`` and ``lower``
    hold the feedback on each legal guess, indexed by the guess.  ``outside``
    is the terse format's one text for every guess outside the range, or
    ``""`` for the default format, whose text names the guess and the range.
    """

    __slots__ = ("correct", "higher", "interval", "lower", "outside")

    def __init__(self, terse: bool, max_number: int) -> None:
        words = _Terse if terse else _Verbose
        self.interval = words.interval
        self.outside = TERSE["outside"] if terse else ""
        says = (words.correct, words.higher, words.lower)
        tables: tuple[Sequence[str], ...]
        if max_number > TABULATED:
            tables = tuple(_OnDemand(say) for say in says)
        else:
            tables = tuple(tuple(say(guess) for guess in range(max_number + 1)) for say in says)
        self.correct, self.higher, self.lower = tables


@functools.lru_cache(maxsize=16)
def _texts(terse: bool, max_number: int) -> _Texts:
    """Return one format's texts for ``1..max_number``, shared by the envs that use them."""
    return _Texts(terse, max_number)


def bisection_guesses(low: int, high: int, secret: int) -> int:
    """Return how many guesses bisection of ``[low, high]`` needs to hit ``secret``."""
    guesses = 0
    while True:
        guesses += 1
        middle = (low + high) // 2
        if middle == secret:
            return guesses
        if middle < secret:
            low = middle + 1
        else:
            high = middle - 1


class GuessNumberEnv(TextEnv[int]):
    """Guess a secret integer in ``1..N`` from "higher" / "lower" feedback.

    ## Description
    An information-gathering task.  The agent must narrow the interval that
    is still consistent with the feedback; the winning strategy is bisection.

    ## Action Space
    ``Text``: an integer, optionally preceded by ``guess`` (``"50"``,
    ``"guess 50"``, ``"Action: 50"``).  A guess outside ``1..N`` or anything
    that is not an integer is invalid and uses up the turn.

    ## Observation Space
    ``Text``: the reset observation states the range and the action format;
    each step observation gives the feedback (``higher``, ``lower`` or
    ``correct``) and the interval still consistent with all feedback so far.

    ## Starting State
    The secret is drawn uniformly from ``1..N`` by the task id.

    ## Task supply
    Finite: one task per secret, ``task_supply`` (``N``) in all.  Since the
    task id draws the secret, fewer task ids than that can already share one.

    ## Rewards
    ``1.0`` on the step that guesses the secret, ``0.0`` otherwise.

    ## Episode End
    ### Termination
    The secret is guessed.
    ### Truncation
    Never by the env; use ``wrappers.TurnBudget``.

    ## Information
    ``task_id``, ``success``, ``valid_action``, ``dead_end``.  ``dead_end`` is
    always ``False``: the secret stays reachable.

    ## Oracle
    The oracle does not read the secret.  ``oracle_actions()`` is the
    bisection guess of the still-consistent interval (the midpoint, rounded
    down).  ``oracle_turns()`` is the number of guesses bisection needs from
    the current interval for this secret.  This is the definition of "optimal"
    for information-gathering envs in this package: the turns a fixed,
    secret-blind optimal strategy needs, not the turns of a lucky guess.

    ## Arguments
    ``max_number`` (int, default 100, at most a million: :data:`MAX_NUMBER`): the
    secret lies in ``1..max_number``.
    ``terse`` (bool, default False): the same game in the fewest words, for
    small models on a CPU (:data:`TERSE`): the first observation is
    ``"Guess the integer.\n\n1-100"``, a later one ``"Lower.\n\n1-49"``.

    ## Version History
    * v0: initial version.
    """

    action_format = "Reply with one integer, for example: 50."
    max_action_length = 64

    def __init__(
        self, max_number: int = 100, render_mode: str | None = None, terse: bool = False
    ) -> None:
        self.max_number = check_at_most(
            check_int(max_number, "max_number", 2), "max_number", MAX_NUMBER
        )
        self.terse = check_bool(terse, "terse")
        # The format is fixed for the env's life, so its texts are chosen here,
        # once, with the feedback on each legal guess built in advance: a step
        # reads the text it needs, without testing ``terse`` or formatting a
        # number.  They sit in one attribute: an instance with a few more would
        # lose CPython's fastest attribute lookups, on every step and reset.
        self._texts = _texts(terse, self.max_number)
        self.task_supply = self.max_number
        # One canonical action per guess, so discrete-action libraries can play.
        self.action_vocabulary = tuple(str(number) for number in range(1, max_number + 1))
        super().__init__(render_mode=render_mode)

    # The secret is the task stream's first draw, taken without building the
    # generator: on a reset that changes task, that is most of the cost.
    uses_task_rng = False

    def _make_task(self, task_id: int, rng: None) -> int:
        return 1 + seeding.first_integer(self.max_number, self._task_salt, task_id)

    def _start(self, task: int) -> None:
        # The task's range: the first interval, and the only legal guesses.
        self._first, self._last = self._range(task)
        self._low, self._high = self._first, self._last
        # Read once an episode: every step compares a guess with it.
        self._goal = self._secret()
        self._last_guess: int | None = None
        self._shown = self._texts.interval(self._low, self._high)

    def _range(self, task: int) -> tuple[int, int]:
        """Return the lowest and highest possible secret of ``task``."""
        return 1, self.max_number

    def _secret(self) -> int:
        """Return the current task's secret."""
        return self._task

    def _intro(self) -> str:
        if self.terse:
            return TERSE["intro"]
        return (
            f"I am thinking of an integer between {self._first} and {self._last}. "
            "Find it. After each guess I say whether the secret is higher or lower. "
            f"{self.action_format}"
        )

    def _view(self) -> str:
        return self._shown  # re-rendered only when the interval changes

    def compact_view(self) -> dict[str, Any]:
        """Return the encoder settings of the interval line (``CompactView``).

        Only its digits count; the constant words ahead of them keep the low
        end at fixed positions.
        """
        if self.terse:
            longest = len(f"{self.max_number}-{self.max_number}")
            return {"view_only": True, "keep": "head", "charset": "0123456789-",
                    "max_length": longest}  # fmt: skip
        longest = len(f"The secret is between {self.max_number} and {self.max_number}.")
        return {"view_only": True, "keep": "head", "charset": "0123456789",
                "max_length": longest}  # fmt: skip

    def _parse(self, action: str) -> int | None:
        match = _NUMBER.match(action)
        return int(match.group(1)) if match else None

    def _unparsable_feedback(self, action: str) -> str:
        return TERSE["invalid"] if self.terse else super()._unparsable_feedback(action)

    def _apply(self, move: int) -> tuple[str, bool]:
        if not self._first <= move <= self._last:
            feedback = (
                self._texts.outside
                or f"Invalid guess {move}: it must be between {self._first} and {self._last}."
            )
            return feedback, False
        self._last_guess = move
        secret = self._goal
        if move == secret:
            self._low = self._high = move
            self._shown = self._texts.interval(move, move)
            return self._texts.correct[move], True
        if move < secret:
            if move >= self._low:
                self._low = move + 1
                self._shown = self._texts.interval(self._low, self._high)
            return self._texts.higher[move], True
        if move <= self._high:
            self._high = move - 1
            self._shown = self._texts.interval(self._low, self._high)
        return self._texts.lower[move], True

    def _is_success(self) -> bool:
        return self._last_guess == self._goal

    def admissible_actions(self) -> list[str]:
        """Every guess in ``1..N``: one outside the consistent interval is legal, only wasteful."""
        return list(self.action_vocabulary)

    def oracle_actions(self) -> list[str]:
        if self._success:
            return []
        return [str((self._low + self._high) // 2)]

    def answer(self) -> str:
        """Return the secret number."""
        return str(self._secret())

    def oracle_turns(self) -> int | None:
        if self._success:
            return 0
        return bisection_guesses(self._low, self._high, self._secret())


class RangeTask(NamedTuple):
    """One GuessNumber-Range instance: the range it states and the secret inside it."""

    low: int
    high: int
    secret: int


class GuessNumberRangeEnv(GuessNumberEnv):
    """Guess a secret in a range that differs per task and is stated in the first observation.

    ## Description
    The study env of GuessNumber: the skill under test (bisect the interval
    you are shown) transfers from one task to the next, and a memorised prior
    does not.  In ``GuessNumber-20`` nothing in the prompt tells the tasks
    apart, so the best policy for a training reward over a few secrets is a
    prior over those secrets.  Here every task draws its own range
    ``low..high`` (stated in the reset observation) and a secret uniform in
    it, so that, given what the agent is shown, every secret of the range is
    equally likely, and tens of thousands of distinct instances make a
    held-out task a new one (``docs/envs/guess_number.md`` measures both).

    ## Action Space
    ``Text``: an integer, as in :class:`GuessNumberEnv`.  A guess outside the
    task's range is invalid and uses up the turn.

    ## Observation Space
    ``Text``: the reset observation states the task's range and the action
    format; each step observation gives the feedback and the interval still
    consistent with it.

    ## Starting State
    The task id draws ``low`` uniformly in ``1..max_low``, the range's size
    ``high - low + 1`` uniformly in ``min_width..max_width``, and the secret
    uniformly in ``low..high``.

    ## Task supply
    ``task_supply`` distinct instances, ``max_low * sum(min_width..max_width)``
    (46 500 by default); task ids can still share one.

    ## Rewards
    ``1.0`` on the step that guesses the secret, ``0.0`` otherwise.

    ## Episode End
    ### Termination
    The secret is guessed.
    ### Truncation
    Never by the env; use ``wrappers.TurnBudget``.

    ## Information
    ``task_id``, ``success``, ``valid_action``, ``dead_end`` (always
    ``False``).

    ## Oracle
    As :class:`GuessNumberEnv`'s: the bisection guess of the consistent
    interval, and the guesses bisection needs from it (1..6 with the default
    sizes).  It reads nothing the agent is not shown.

    ## Arguments
    ``max_low`` (int, default 60), ``min_width`` (int, default 10) and
    ``max_width`` (int, default 40): the ranges drawn, as above.  The highest
    secret is ``max_low + max_width - 1`` (99 by default, two digits).
    ``terse`` (bool, default False): :class:`GuessNumberEnv`'s terse format;
    the range is the first observation's view (``"16-37"``).

    ## Version History
    * v0: initial version.
    """

    def __init__(
        self,
        max_low: int = 60,
        min_width: int = 10,
        max_width: int = 40,
        render_mode: str | None = None,
        terse: bool = False,
    ) -> None:
        self.max_low = check_int(max_low, "max_low", 1)
        self.min_width = check_int(min_width, "min_width", 2)
        self.max_width = check_int(max_width, f"max_width (>= min_width {min_width})", min_width)
        # The highest secret, named as the two arguments that make it.
        check_at_most(max_low + max_width - 1, "max_low + max_width - 1", MAX_NUMBER)
        super().__init__(max_number=max_low + max_width - 1, render_mode=render_mode, terse=terse)
        self.task_supply = max_low * sum(range(min_width, max_width + 1))

    uses_task_rng = True  # three draws: the task stream's generator
    # No example number: a fixed one would lie outside many tasks' ranges.
    action_format = "Reply with one integer from the range."

    def _make_task(self, task_id: int, rng: np.random.Generator) -> RangeTask:
        low = int(rng.integers(1, self.max_low + 1))
        high = low + int(rng.integers(self.min_width, self.max_width + 1)) - 1
        return RangeTask(low, high, int(rng.integers(low, high + 1)))

    def _range(self, task: RangeTask) -> tuple[int, int]:
        return task.low, task.high

    def _secret(self) -> int:
        return self._task.secret

    def admissible_actions(self) -> list[str]:
        """Every guess in the task's range (the action mask of discrete-action agents)."""
        return list(self.action_vocabulary[self._first - 1 : self._last])
