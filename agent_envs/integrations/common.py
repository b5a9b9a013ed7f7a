"""The pieces the adapters share: a budgeted env from an id, and lazy imports."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import gymnasium as gym
import numpy as np

from agent_envs import install_hint
from agent_envs.core import FIRST_EXAMPLE_ID
from agent_envs.protocol import TASK_ID
from agent_envs.registration import make_env
from wrappers import BudgetMix, DiscreteActions, EncodeObservation, TurnBudget
from wrappers.numpy_info import NumpyInfo

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
    ValueError: task_id must be an int in [0, 2147483614], got str '7'.
    """
    wanted = f"{name} must be an int in [0, {FIRST_EXAMPLE_ID - 1}]"
    if isinstance(value, np.integer):  # a dataset column may hold numpy ints
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{wanted}, got {type(value).__name__} {value!r:.40}.")
    if value >= FIRST_EXAMPLE_ID:
        raise ValueError(
            f"{wanted}: ids from {FIRST_EXAMPLE_ID} up are reserved for few-shot examples, "
            f"got {value}."
        )
    if value < 0:
        raise ValueError(f"{wanted}, got {value}.")
    return value


def budgeted_env(
    env_id: str,
    budget: int | None = None,
    budgets: Sequence[int] | None = None,
    weights: Sequence[float] | None = None,
    visible: bool = False,
    **make_kwargs: Any,
) -> TurnBudget:
    """Return ``gym.make(env_id)`` under a ``TurnBudget(budget)`` or a ``BudgetMix(budgets)``.

    Exactly one of ``budget`` and ``budgets`` is given.

    >>> import agent_envs
    >>> env = budgeted_env("agent_envs/GuessNumber-v0", budgets=[3, 5], visible=True)
    >>> type(env).__name__, env.reset(seed=0)[1]["budget"] in (3, 5)
    ('BudgetMix', True)
    """
    if (budget is None) == (budgets is None):
        raise ValueError("Give exactly one of budget (a turn budget) and budgets (a BudgetMix).")
    env = make_env(env_id, **make_kwargs)  # also module:EnvId and installed env packages
    if budgets is not None:
        return BudgetMix(env, list(budgets), weights=weights, visible=visible)
    return TurnBudget(env, budget, visible=visible)


def masked_env(
    env_id: str,
    budget: int | None = None,
    budgets: Sequence[int] | None = None,
    weights: Sequence[float] | None = None,
    visible: bool = False,
    encoding: Mapping[str, Any] | None = None,
) -> gym.Env:
    """Return the stack RLlib and TorchRL take as it is.

    ``NumpyInfo(EncodeObservation(DiscreteActions(budgeted_env(...)), layout="dict"))``:
    a ``Dict`` observation with the encoded view (a flat ``Box``) under
    ``"observations"`` and the admissible actions under ``"action_mask"``,
    ``Discrete`` actions, and numpy info values.  ``encoding`` holds keyword
    arguments for ``EncodeObservation`` (default: ``"chars"`` on the env's charset).

    >>> env = masked_env("agent_envs/FrozenLake-v0", budget=8, encoding={"max_length": 20})
    >>> sorted(env.observation_space.spaces), env.action_space
    (['action_mask', 'observations'], Discrete(4))
    """
    env = budgeted_env(env_id, budget=budget, budgets=budgets, weights=weights, visible=visible)
    return NumpyInfo(EncodeObservation(DiscreteActions(env), layout="dict", **dict(encoding or {})))
