"""The pieces the adapters share: a budgeted env from an id, and lazy imports."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import replace
from types import ModuleType
from typing import Any

import gymnasium as gym
import numpy as np

from agent_envs import install_hint
from agent_envs.core import FIRST_EXAMPLE_ID
from agent_envs.env_stack import BudgetRegime, StackOptions, make_stack
from wrappers.errors import InvalidValue
from wrappers.protocol import TASK_ID

__all__ = ["budgeted_env", "client_task_id", "masked_env", "require"]


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or raise ``ImportError`` saying which extra brings it.

    >>> require("json", "none").__name__
    'json'
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"{module} is not installed: {install_hint(extra)} ({error}).") from error


def client_task_id(value: Any, name: str = TASK_ID) -> int:
    """Return a task id a client sent, refusing what is not a plain int or is reserved.

    No coercion: ``5.9``, ``True`` and ``"7"`` are refused, not read as 5, 1
    and 7; ids from :data:`~agent_envs.core.FIRST_EXAMPLE_ID` up are kept for
    few-shot examples, as ``evaluate`` keeps them.

    >>> client_task_id(7)
    7
    >>> client_task_id("7")
    Traceback (most recent call last):
    ...
    wrappers.errors.InvalidValue: task_id must be an int in [0, 2147483614], got str '7'.
    """
    wanted = f"{name} must be an int in [0, {FIRST_EXAMPLE_ID - 1}]"
    if isinstance(value, np.integer):  # a dataset column may hold numpy ints
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue(f"{wanted}, got {type(value).__name__} {value!r:.40}.")
    if value >= FIRST_EXAMPLE_ID:
        raise InvalidValue(
            f"{wanted}: ids from {FIRST_EXAMPLE_ID} up are reserved for few-shot examples, "
            f"got {value}."
        )
    if value < 0:
        raise InvalidValue(f"{wanted}, got {value}.")
    return value


def budgeted_env(env_id: str, regime: BudgetRegime | int, **make_kwargs: Any) -> gym.Env:
    """Return ``make_env(env_id, **make_kwargs)`` under ``regime`` (a fixed T or a mix).

    ``regime`` is a :class:`~agent_envs.env_stack.BudgetRegime` or an int T.

    >>> import agent_envs
    >>> env = budgeted_env("agent_envs/GuessNumber-v0", BudgetRegime.mixed([3, 5], visible=True))
    >>> type(env).__name__, env.reset(seed=0)[1]["budget"] in (3, 5)
    ('BudgetMix', True)
    """
    return make_stack(env_id, BudgetRegime.of(regime), StackOptions(make_kwargs=make_kwargs))


#: The options of the stack RLlib and TorchRL take, with ``encoding`` added.
MASKED = StackOptions(discrete=True, numpy_info=True)


def masked_env(
    env_id: str,
    regime: BudgetRegime | int,
    *,
    encoding: Mapping[str, Any] | None = None,
) -> gym.Env:
    """Return the stack RLlib and TorchRL take as it is.

    ``NumpyInfo(EncodeObservation(DiscreteActions(budgeted_env(...)), layout="dict"))``:
    a ``Dict`` observation with the encoded view (a flat ``Box``) under
    ``"observations"`` and the admissible actions under ``"action_mask"``,
    ``Discrete`` actions, and numpy info values.  ``encoding`` holds keyword
    arguments for ``EncodeObservation`` (default: ``"chars"`` on the env's charset,
    over the env's ``compact_view()`` where it has one, as FrozenLake does).
    ``regime`` as in :func:`budgeted_env`.

    >>> env = masked_env("agent_envs/FrozenLake-v0", 8, encoding={"max_length": 20})
    >>> sorted(env.observation_space.spaces), env.action_space
    (['action_mask', 'observations'], Discrete(4))
    """
    options = replace(MASKED, encoding={"layout": "dict", **dict(encoding or {})})
    return make_stack(env_id, BudgetRegime.of(regime), options)
