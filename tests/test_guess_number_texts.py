"""GuessNumber's texts, word for word, in both formats and at every range size.

The env builds its texts once (the feedback on each legal guess in advance,
for ranges of up to ``TABULATED`` numbers, and on demand above), so each
text is checked here against its spelling, on a range below and one above.
"""

from __future__ import annotations

import pytest

from agent_envs.envs.guess_number import TABULATED, GuessNumberEnv


def _verbose(low: int, high: int, secret: int, top: int) -> list[tuple[str, str]]:
    line = lambda a, b: f"The secret is between {a} and {b}."  # noqa: E731
    return [
        ("0", f"Invalid guess 0: it must be between 1 and {top}.\n\n{line(1, top)}"),
        ("x", f"Invalid action 'x'. {GuessNumberEnv.action_format}\n\n{line(1, top)}"),
        (str(low), f"{low} is too low: the secret is higher.\n\n{line(low + 1, top)}"),
        (str(high), f"{high} is too high: the secret is lower.\n\n{line(low + 1, high - 1)}"),
        ("1", f"1 is too low: the secret is higher.\n\n{line(low + 1, high - 1)}"),
        (f"guess {secret}", f"{secret} is correct!\n\n{line(secret, secret)}"),
    ]


def _terse(low: int, high: int, secret: int, top: int) -> list[tuple[str, str]]:
    return [
        ("0", f"Out of range.\n\n1-{top}"),
        ("x", f"Invalid.\n\n1-{top}"),
        (str(low), f"Higher.\n\n{low + 1}-{top}"),
        (str(high), f"Lower.\n\n{low + 1}-{high - 1}"),
        ("1", f"Higher.\n\n{low + 1}-{high - 1}"),  # outside the interval: it stays
        (f"guess {secret}", f"Correct!\n\n{secret}-{secret}"),
    ]


def _task_with_room(env: GuessNumberEnv, top: int) -> int:
    """A task whose secret leaves room for two guesses below it and two above."""
    for task in range(1000):
        env.reset(options={"task_id": task})
        if 4 <= int(env.answer()) <= top - 3:
            return task
    raise AssertionError("no such task among the first 1000")


@pytest.mark.parametrize("top", [100, TABULATED, TABULATED + 1, 5000])
@pytest.mark.parametrize("terse", [False, True])
def test_every_text_of_both_formats_reads_as_spelled(top, terse):
    env = GuessNumberEnv(max_number=top, terse=terse)
    observation, _ = env.reset(options={"task_id": _task_with_room(env, top)})
    secret = int(env.answer())
    if terse:
        assert observation == f"Guess the integer.\n\n1-{top}"
    else:
        assert observation == (
            f"I am thinking of an integer between 1 and {top}. Find it. After each guess I say "
            f"whether the secret is higher or lower. {GuessNumberEnv.action_format}\n\n"
            f"The secret is between 1 and {top}."
        )
    spelled = (_terse if terse else _verbose)(secret - 2, secret + 2, secret, top)
    for number, (action, expected) in enumerate(spelled):
        observation, reward, terminated, _, info = env.step(action)
        assert observation == expected, action
        last = number == len(spelled) - 1
        assert (reward, terminated, info["success"]) == (float(last), last, last)
        assert info["valid_action"] == (action not in ("0", "x"))
