"""What a policy does at GuessNumber: each move as bisect, step, repeat, invalid or other.

A gain in Pass@(1,T) can come from bisection (the skill the env is built to
reward) or from a walk (guess, then count by one toward the secret), which a
budget of 12 turns also lets succeed.  :func:`move_mix` tells them apart from
the evaluation's transcripts.  Each move is read against the interval shown
in the observation before it (the view's ``low-high``, as the terse format
prints it, or ``between low and high``):

* ``invalid``: the env refused it (unparsable, or outside the task's range);
* ``repeat``: a number the episode guessed before;
* ``bisect``: a midpoint of the interval, rounded down or up;
* ``step``: one away from the episode's previous guess;
* ``other``: anything else (a legal guess off the midpoint).

The first that applies names the move.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MOVES", "classify", "move_mix"]

#: The kinds of move, in the order of precedence.
MOVES = ("invalid", "repeat", "bisect", "step", "other")
_INTERVAL = re.compile(r"(?:(\d+)-(\d+)|between (\d+) and (\d+))\.?\s*$")
_GUESS = re.compile(r"^\s*(?:action\s*:\s*)?(?:guess\s*)?(\d{1,12})\s*$", re.IGNORECASE)


def _interval(observation: str) -> tuple[int, int] | None:
    """Return the interval an observation ends with, or None."""
    match = _INTERVAL.search(observation)
    if match is None:
        return None
    low, high = (int(n) for n in match.groups() if n is not None)
    return low, high


def classify(transcript: Mapping[str, Any]) -> list[str]:
    """Return the kind of each move of one episode's transcript (the run log's)."""
    interval = _interval(transcript["observation"])
    guesses: list[int] = []
    kinds = []
    for step in transcript["steps"]:
        match = _GUESS.match(step["action"])
        guess = int(match.group(1)) if match else None
        if not step["valid"] or guess is None:
            kinds.append("invalid")
        elif guess in guesses:
            kinds.append("repeat")
        elif interval is not None and guess in {sum(interval) // 2, (sum(interval) + 1) // 2}:
            kinds.append("bisect")
        elif guesses and abs(guess - guesses[-1]) == 1:
            kinds.append("step")
        else:
            kinds.append("other")
        if guess is not None and step["valid"]:
            guesses.append(guess)
        interval = _interval(step["observation"]) or interval
    return kinds


def move_mix(transcripts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the share of each kind of move over ``transcripts``, and the count of moves."""
    counts = Counter(kind for transcript in transcripts for kind in classify(transcript))
    total = sum(counts.values())
    return {"moves": total, **{kind: counts[kind] / total if total else 0.0 for kind in MOVES}}
