"""One finished episode's record: a line of the run log, checked as it is read back.

:class:`EpisodeRecord` is what the rollout writes and the run log, the
diagnostics and the result read; :func:`clip_text` keeps each transcript
field it carries small.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["TRANSCRIPT_TEXT_LIMIT", "EpisodeRecord", "clip_text"]


#: The most characters one transcript field (an observation, an action, a raw
#: reply) keeps.  Design decision: a transcript is for reading what happened,
#: and an agent's reply is unbounded (a server may send megabytes), so a field
#: is cut here with a note of how much was dropped, and a log line stays small.
TRANSCRIPT_TEXT_LIMIT = 16_384


def clip_text(text: str, limit: int = TRANSCRIPT_TEXT_LIMIT) -> str:
    """Return ``text``, or its first ``limit`` characters and how many were dropped.

    >>> clip_text("abcdef", 3)
    'abc...[3 more characters]'
    """
    return text if len(text) <= limit else f"{text[:limit]}...[{len(text) - limit} more characters]"


@dataclass
class EpisodeRecord:
    """What one finished episode reports; one line of the run log.

    The diagnostic fields are ``None`` when diagnostics were off.

    Attributes:
        task_id, sample, seed, budget: the episode's key.
        success: solved within the budget (``False`` for an error).
        first_success_turn: the turn that solved it, or ``None``.
        turns: turns played.
        valid, invalid: counts of valid and invalid actions.
        unparsable: those of ``invalid`` whose text the env's
            ``parse_action`` cannot read at all (not an action, as opposed to
            a legal-looking move the state forbids); ``None`` for an env
            without ``parse_action`` and in logs written before it existed.
        dead_end_turn: the first turn after which success was unreachable.
        error: ``"Type: message"`` if the policy raised, else ``None``.
        oracle_turns: ``oracle_turns()`` at reset.
        judged: turns taken where the oracle had an action (success still
            reachable), invalid actions included.
        judged_valid: those of ``judged`` whose action was valid.
        optimal: those of ``judged`` whose action was in ``oracle_actions()``.
        first_non_optimal_turn: the first judged turn whose action was
            invalid or not in ``oracle_actions()``.
        oracle_errors: one ``[turn, recovered_turn, fatal]`` per *error* (a
            valid judged action not in ``oracle_actions()`` that did not win):
            ``fatal`` when it entered a dead end; ``recovered_turn`` is the
            first *later* turn that ended with success or with
            ``oracle_turns()`` strictly below both its value before the error
            and its value right after it (``None`` if none did, and for a
            fatal error).  A wasted turn, which gains no ground, is not a
            recovery, even after an error that itself moved closer.
        tokens_read, tokens_generated: the episode's sums of what its replies
            said they cost (:class:`~agent_envs.protocol.AgentAction`);
            ``None`` when no reply said.
        wall_s: seconds from reset to the end of the episode.
        cpu_s: this process's CPU seconds spent on the episode: its env
            steps and its share of each policy call (a batch call's CPU is
            split evenly among the episodes it acted for).  A model served by
            another process (an OpenAI-compatible server) spends its CPU
            there, which this does not see.
        ended_at: when the episode ended, in seconds since the epoch (as
            ``time.time()``): with ``wall_s`` it places the episode in time,
            so that the wall time of episodes that overlapped (played in
            lockstep, or on Ray) is counted once (``agent_envs.bench``).

    The cost fields (tokens, wall and CPU seconds) are measurements: they are
    logged but play no part in any count, so results stay the same run to run.
    """

    task_id: int
    sample: int
    seed: int
    budget: int
    success: bool = False
    first_success_turn: int | None = None
    turns: int = 0
    valid: int = 0
    invalid: int = 0
    unparsable: int | None = None
    dead_end_turn: int | None = None
    error: str | None = None
    oracle_turns: int | None = None
    judged: int | None = None
    judged_valid: int | None = None
    optimal: int | None = None
    first_non_optimal_turn: int | None = None
    oracle_errors: list[list[Any]] | None = None
    tokens_read: int | None = None
    tokens_generated: int | None = None
    wall_s: float | None = None
    cpu_s: float | None = None
    ended_at: float | None = None

    _JSON_KEYS = (
        ("task", "task_id"),
        ("sample", "sample"),
        ("seed", "seed"),
        ("budget", "budget"),
        ("success", "success"),
        ("first_success_turn", "first_success_turn"),
        ("turns", "turns"),
        ("valid", "valid"),
        ("invalid", "invalid"),
        ("unparsable", "unparsable"),
        ("dead_end_turn", "dead_end_turn"),
        ("error", "error"),
        ("oracle_turns", "oracle_turns"),
        ("judged", "judged"),
        ("judged_valid", "judged_valid"),
        ("optimal", "optimal"),
        ("first_non_optimal_turn", "first_non_optimal_turn"),
        ("oracle_errors", "oracle_errors"),
        ("tokens_read", "tokens_read"),
        ("tokens_generated", "tokens_generated"),
        ("wall_s", "wall_s"),
        ("cpu_s", "cpu_s"),
        ("ended_at", "ended_at"),
    )
    #: The fields that are timings, which differ from run to run.
    TIMINGS = ("wall_s", "cpu_s", "ended_at")
    #: Fields a log written before they existed lacks; such a log still resumes.
    _LATER_KEYS = frozenset(
        {"unparsable", "tokens_read", "tokens_generated", "wall_s", "cpu_s", "ended_at"}
    )

    @property
    def ident(self) -> tuple[int, int, int]:
        """What identifies the episode in a run log."""
        return (self.task_id, self.sample, self.budget)

    def to_json(self) -> dict[str, Any]:
        """Return the record as a JSON-ready dict (the run-log field names)."""
        return {name: getattr(self, attr) for name, attr in self._JSON_KEYS}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EpisodeRecord:
        """Build a record from :meth:`to_json` output.

        Raises:
            ValueError: fields are missing, or the record contradicts itself
                (:meth:`inconsistency`), as a line edited by hand may.
        """
        missing = [
            name for name, _ in cls._JSON_KEYS if name not in data and name not in cls._LATER_KEYS
        ]
        if missing:
            raise ValueError(f"episode line lacks {missing}")
        record = cls(**{attr: data.get(name) for name, attr in cls._JSON_KEYS})
        problem = record.inconsistency()
        if problem:
            raise ValueError(f"the episode contradicts itself: {problem}")
        return record

    def inconsistency(self) -> str:
        """Return what in this record cannot come from a played episode, or ``""``.

        Every record the evaluator writes holds: its key and counts are
        non-negative ints, at most ``budget`` turns were played, each turn was
        a valid or an invalid action, success is exactly a first success turn
        within the turns played, and an error episode did not succeed.
        """
        ints = ("task_id", "sample", "seed", "budget", "turns", "valid", "invalid")
        for name in ints:
            value = getattr(self, name)
            if not _is_int(value, 0):
                return f"{name} is {value!r}, not an int >= 0"
        if not isinstance(self.success, bool):
            return f"success is {self.success!r}, not true or false"
        if self.turns > self.budget:
            return f"{self.turns} turns under a budget of {self.budget}"
        if self.valid + self.invalid != self.turns:
            return f"{self.valid} valid + {self.invalid} invalid actions in {self.turns} turns"
        for name in ("first_success_turn", "dead_end_turn"):
            turn = getattr(self, name)
            if turn is not None and not (isinstance(turn, int) and 1 <= turn <= self.turns):
                return f"{name} {turn!r} is not one of the {self.turns} turns played"
        if self.success != (self.first_success_turn is not None):
            return f"success {self.success} with first_success_turn {self.first_success_turn}"
        if self.error is not None and self.success:
            return "an episode that ended in an error succeeded"
        return self._optional_problem()

    def _optional_problem(self) -> str:
        """Return which optional field (diagnostics, costs) has a type no episode writes, or ``""``.

        The diagnostics add these up on resume, so a hand-edited ``"judged": "x"``
        must be refused here, not fail as a ``TypeError`` in the middle of a run.
        """
        counts = ("unparsable", "oracle_turns", "judged", "judged_valid", "optimal")
        for name in (*counts, "tokens_read", "tokens_generated"):
            value = getattr(self, name)
            if value is not None and not _is_int(value, 0):
                return f"{name} is {value!r}, not an int >= 0 or null"
        turn = self.first_non_optimal_turn
        if turn is not None and not _is_int(turn, 1):
            return f"first_non_optimal_turn is {turn!r}, not an int >= 1 or null"
        if self.error is not None and not isinstance(self.error, str):
            return f"error is {self.error!r}, not a string or null"
        for name in self.TIMINGS:
            value = getattr(self, name)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if value is not None and not number:
                return f"{name} is {value!r}, not a number or null"
        if self.oracle_errors is not None and not isinstance(self.oracle_errors, list):
            return f"oracle_errors is {self.oracle_errors!r}, not a list or null"
        for entry in self.oracle_errors or []:
            if not (
                isinstance(entry, list)
                and len(entry) == 3
                and _is_int(entry[0], 1)
                and (entry[1] is None or _is_int(entry[1], 1))
                and isinstance(entry[2], bool)
            ):
                return f"oracle_errors holds {entry!r}, not [turn, recovered turn or null, fatal]"
        return ""


def _is_int(value: Any, minimum: int) -> bool:
    """Whether ``value`` is a JSON int (not a bool) of at least ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum
