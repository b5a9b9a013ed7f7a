"""Argument checks with one-line errors, shared by every layer.

The type and range of a single argument (an int, a finite number, a
probability, a turn budget, a grid, weights, a comma-separated list) are
checked with these functions wherever the project takes one from a user, so
that the same bad value gets the same message wherever it is passed: a Python
argument, a command-line flag (the command line builds its argument types
on these) or a loaded file.  Relations between arguments
(``min_hops <= max_hops``) and internal preconditions are checked where they
are used.  It lives in ``wrappers`` (the bottom layer, gymnasium-free) so
that the wrappers can use it too; see :mod:`wrappers.protocol` for why.

Conventions: a wrong *type* raises ``TypeError``, a value out of range raises
``ValueError``, and the message names the argument, says what to pass and
shows what was given.  ``bool`` is never an int here, and numpy integers are
(they come out of samplers and configs); floats such as ``5.0`` are refused.

>>> check_int(3, "n_disks", 1, 12)
3
>>> check_grid([20, 5, 10, 5], "budgets (T)")
(5, 10, 20)
>>> parse_int_list("1, 2,4", "--k")
(1, 2, 4)
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from wrappers.errors import InvalidType, InvalidValue

__all__ = [
    "MAX_COUNT",
    "MAX_SEED",
    "MAX_TURNS",
    "check_at_most",
    "check_bool",
    "check_budget",
    "check_grid",
    "check_int",
    "check_number",
    "check_probability",
    "check_weights",
    "parse_float_list",
    "parse_int",
    "parse_int_list",
]


#: The largest turn budget T, wherever one is given: ``eval --t``, ``--budget``,
#: ``--budget-mix``, ``TurnBudget(max_turns=...)`` and ``serve``'s client budgets.
#: Design decision: no env here needs more than a few hundred turns, and an
#: episode of a million turns already runs for hours, so a typo such as
#: ``--t 1000000000`` fails at once instead of running past every timeout.
MAX_TURNS = 1_000_000
#: The largest count a command-line flag takes when it names no other limit
#: (attempts, steps, workers, a batch, threads, ...): the same million.
MAX_COUNT = 1_000_000
#: The largest seed: what a signed 64-bit int holds, so that a seed is stored and
#: read back exactly by every consumer of the result files (numpy, JSON readers).
MAX_SEED = 2**63 - 1


def _number(value: int | float) -> str:
    """Show an int bound exactly (2147483647, not 2.14748e+09), a float briefly."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bounds(minimum: int | float | None, maximum: int | float | None) -> str:
    if minimum is not None and maximum is not None:
        return f" in [{_number(minimum)}, {_number(maximum)}]"
    if minimum is not None:
        return f" >= {_number(minimum)}"
    if maximum is not None:
        return f" <= {_number(maximum)}"
    return ""


def check_int(value: Any, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` in ``[minimum, maximum]`` (either bound optional).

    >>> check_int(True, "seed")
    Traceback (most recent call last):
    ...
    wrappers.errors.InvalidType: seed must be an int, got bool True.
    """
    wanted = f"{name} must be an int{_bounds(minimum, maximum)}"
    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)
    except TypeError:
        raise InvalidType(f"{wanted}, got {type(value).__name__} {value!r:.80}.") from None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise InvalidValue(f"{wanted}, got {number}.")
    return number


def check_budget(value: Any, name: str = "max_turns") -> int:
    """Return ``value`` as a turn budget: an int in ``[1, MAX_TURNS]``."""
    return check_at_most(check_int(value, name, minimum=1), name, MAX_TURNS)


def check_at_most(value: int, name: str, maximum: int | None) -> int:
    """Return the int ``value`` if it is at most ``maximum`` (``None``: no limit).

    Its own message, apart from :func:`check_int`'s, so that a value too small
    keeps the message it always had and one too large names the limit.

    >>> check_at_most(10**9, "--t", MAX_TURNS)
    Traceback (most recent call last):
    ...
    wrappers.errors.InvalidValue: --t must be at most 1,000,000, got 1,000,000,000.
    """
    if maximum is not None and value > maximum:
        raise InvalidValue(f"{name} must be at most {maximum:,}, got {value:,}.")
    return value


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` if it is a ``bool``; ``TypeError`` otherwise (no truthiness)."""
    if not isinstance(value, bool):
        raise InvalidType(f"{name} must be a bool, got {type(value).__name__} {value!r:.80}.")
    return value


def check_number(
    value: Any,
    name: str,
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    open_low: bool = False,
    open_high: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` in ``[minimum, maximum]``.

    With ``open_low=True`` the lower bound is excluded, with ``open_high=True``
    the upper one: ``(minimum, maximum)``.

    >>> check_number(1.0, "discount", 0.0, 1.0, open_low=True, open_high=True)
    Traceback (most recent call last):
    ...
    wrappers.errors.InvalidValue: discount must be a number in (0, 1), got 1.0.
    """
    low, high = "(" if open_low else "[", ")" if open_high else "]"
    if minimum is not None and maximum is not None:
        wanted = f"{name} must be a number in {low}{_number(minimum)}, {_number(maximum)}{high}"
    elif minimum is not None:
        wanted = f"{name} must be a number {'>' if open_low else '>='} {_number(minimum)}"
    else:
        wanted = f"{name} must be a finite number" + _bounds(None, maximum)
    # numbers.Real admits numpy ints and floats too.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidType(f"{wanted}, got {type(value).__name__} {value!r:.80}.")
    try:
        number = float(value)
    except OverflowError:  # an int beyond the float range, such as 10**400
        number = math.inf
    if (
        not math.isfinite(number)
        or (minimum is not None and (number <= minimum if open_low else number < minimum))
        or (maximum is not None and (number >= maximum if open_high else number > maximum))
    ):
        raise InvalidValue(f"{wanted}, got {value!r:.80}.")
    return number


def check_probability(value: Any, name: str) -> float:
    """Return ``value`` as a probability: a number in ``[0, 1]``."""
    return check_number(value, name, 0.0, 1.0)


def check_weights(
    weights: Any, count: int, name: str = "weights", choices: str = "choices"
) -> tuple[float, ...]:
    """Return ``weights`` (one per choice, ``count`` in all) normalised to probabilities.

    Each weight is a finite number >= 0, not all zero.  They are scaled by the
    largest first, so that weights whose sum overflows (two of ``1e308``) or
    underflows still normalise.

    >>> check_weights([1e308, 1e308], 2)
    (0.5, 0.5)
    >>> check_weights(["1", "2"], 2)
    Traceback (most recent call last):
    ...
    wrappers.errors.InvalidType: weights must be numbers, got ['1', '2'].
    """
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
        raise InvalidType(f"{name} must be a sequence of numbers, got {type(weights).__name__}.")
    if len(weights) != count:
        raise InvalidValue(f"{name} has {len(weights)} entries but there are {count} {choices}.")
    if any(isinstance(w, bool) or not isinstance(w, numbers.Real) for w in weights):
        raise InvalidType(f"{name} must be numbers, got {list(weights)!r:.200}.")
    try:
        values = [float(weight) for weight in weights]
    except OverflowError:
        values = [math.inf]
    if not all(math.isfinite(value) and value >= 0 for value in values):
        raise InvalidValue(f"{name} must be finite and non-negative, got {list(weights)!r:.200}.")
    scaled = np.array(values)
    if scaled.max() <= 0:
        raise InvalidValue(f"{name} must not all be zero.")
    # By the largest first: the sum of finite weights can overflow (two of
    # 1e308 sum to inf), and tiny ones can underflow; x / max is in [0, 1].
    scaled = scaled / scaled.max()
    return tuple(float(value) for value in scaled / scaled.sum())


def check_grid(values: Any, name: str, maximum: int | None = None) -> tuple[int, ...]:
    """Return ``values`` (one int or a sequence) as sorted, distinct ints in ``[1, maximum]``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, range)):
        values = [values]
    if len(values) == 0:
        raise InvalidValue(f"{name} must not be empty.")
    every = f"every value of {name}"
    return tuple(sorted({check_at_most(check_int(v, every, 1), every, maximum) for v in values}))


def parse_int(text: str, name: str, minimum: int | None = None) -> int:
    """Parse one integer from text such as ``"50"`` (a command-line value)."""
    try:
        value = int(str(text).strip())
    except ValueError:
        raise InvalidValue(f"{name} takes an integer such as 50; got {text!r}.") from None
    return check_int(value, name, minimum)


def _split(text: str, name: str, convert: Any, kind: str) -> tuple[Any, ...]:
    """Convert each comma-separated part of ``text``; refuse an empty or unreadable list."""
    try:
        values = tuple(convert(part) for part in str(text).split(",") if part.strip())
    except ValueError:
        values = ()
    if not values:
        raise InvalidValue(f"{name} takes comma-separated {kind}; got {text!r}.")
    return values


def parse_int_list(
    text: str, name: str, minimum: int | None = 1, maximum: int | None = None
) -> tuple[int, ...]:
    """Parse comma-separated integers such as ``"5,10,20"`` (a command-line list).

    Raises:
        InvalidValue: empty, not integers, or a value outside ``[minimum, maximum]``.
    """
    example = "5,10,20" if minimum is None or minimum >= 1 else "0,1,2"
    values = _split(text, name, int, f"integers such as {example}")
    for value in values:
        check_at_most(check_int(value, f"every value of {name}", minimum), name, maximum)
    return values


def parse_float_list(text: str, name: str) -> tuple[float, ...]:
    """Parse comma-separated numbers such as ``"1,1,2"`` (a command-line list)."""
    return _split(text, name, float, "numbers such as 1,1,2")
