"""The one owner of an env stack's turn budget.

Everything that runs episodes under a turn budget it does not build itself
(the evaluator, the chat stack of ``agent-envs eval --history`` and GRPO
training, the SB3 training stack) asks :func:`resolve_budget`; code that only
reads a stack's budget asks :func:`find_budget`.  Both walk the stack through
:func:`wrappers.turn_budget.turn_limits`, the one walk for turn limits, which
``TurnBudget`` itself uses to refuse an inner limit below its budget.
:func:`resolve_budget`

* **finds** the stack's one ``TurnBudget`` or ``BudgetMix``, or adds a
  ``TurnBudget`` on top when there is none;
* **refuses** stacks that would end episodes before T: two budget wrappers
  (only the outermost reads ``reset(options={"budget": T})``), or a
  Gymnasium ``TimeLimit`` below the largest budget;
* **says** whether the budget is visible to the agent
  (:attr:`StackBudget.visible`);
* **drives** it: :meth:`StackBudget.options` gives each episode's reset
  options, and :meth:`StackBudget.report` decides whether ``info`` carries
  ``budget`` and ``turns_left`` (the key is then never added, rather than
  added and stripped).

>>> import gymnasium as gym  # the agent_envs/ ids are registered
>>> from wrappers.budget import resolve_budget
>>> budget = resolve_budget(gym.make("agent_envs/GuessNumber-v0"), max_budget=20)
>>> _, info = budget.env.reset(seed=0, options=budget.options(7, task_id=0))
>>> info["budget"], budget.visible
(7, False)
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym

from wrappers._core.validators import check_bool, check_budget
from wrappers.budget_mix import BudgetMix
from wrappers.protocol import BUDGET
from wrappers.turn_budget import TurnBudget, turn_limits

__all__ = ["StackBudget", "find_budget", "resolve_budget"]


class StackBudget:
    """The turn budget of one env stack, as :func:`resolve_budget` resolved it.

    Attributes:
        env: the stack, with its budget wrapper in it (added on top if it had none).
        wrapper: the one ``TurnBudget`` / ``BudgetMix`` that counts the turns.
    """

    def __init__(self, env: gym.Env, wrapper: TurnBudget) -> None:
        self.env = env
        self.wrapper = wrapper

    @property
    def visible(self) -> bool:
        """Whether each observation states the turns left."""
        return self.wrapper.visible

    def options(self, budget: int, **options: Any) -> dict[str, Any]:
        """Return the ``reset`` options that play one episode under ``budget`` turns.

        Keyword arguments use the option names (``task_id=3``).
        """
        return {**options, BUDGET: check_budget(budget, "the episode budget")}

    def report(self, report: bool) -> None:
        """Choose whether ``info`` carries ``budget`` and ``turns_left`` (``turn`` always)."""
        self.wrapper.report_budget = check_bool(report, "report")

    def __repr__(self) -> str:
        return f"StackBudget({type(self.wrapper).__name__}, visible={self.visible})"


def find_budget(env: gym.Env, max_budget: int | None = None) -> TurnBudget | None:
    """Return the stack's one ``TurnBudget``/``BudgetMix``, or ``None``.

    Raises:
        ValueError: the stack holds two budget wrappers, or a ``TimeLimit``
            below ``max_budget``; either would end episodes before T.
    """
    found: list[TurnBudget] = []
    for wrapper, steps in turn_limits(env):
        if isinstance(wrapper, TurnBudget):
            found.append(wrapper)
        elif max_budget is not None and steps < max_budget:
            raise ValueError(
                f"the env stack has a TimeLimit of {steps} steps, below the largest "
                f"budget T={max_budget}: remove it (the TurnBudget ends episodes) or "
                "raise it to at least max(T)."
            )
    if len(found) > 1:
        names = " around ".join(type(budget).__name__ for budget in found)
        raise ValueError(
            f"the env stack holds {names}: each episode's budget is set through the "
            "outermost one only, so an inner one would change T; keep at most one."
        )
    return found[0] if found else None


def resolve_budget(
    env: gym.Env,
    max_budget: int,
    *,
    visible: bool = False,
    driver: str | None = None,
) -> StackBudget:
    """Find the turn budget of ``env`` or add one; refuse a stack that breaks T.

    Args:
        env: the env stack.
        max_budget: the largest budget any episode will get.
        visible: the turns left must be shown.  A stack without a budget gets a
            ``TurnBudget(visible=visible)``; a stack with a hidden one is refused.
        driver: who sets each episode's budget from outside, such as "the
            evaluator's T grid".  A ``BudgetMix`` in the stack then draws
            nothing, and a ``UserWarning`` says so.

    Returns:
        A :class:`StackBudget`.
    """
    max_budget = check_budget(max_budget, "max_budget")
    check_bool(visible, "visible")
    wrapper = find_budget(env, max_budget)
    if wrapper is None:
        wrapper = env = TurnBudget(env, max_turns=max_budget, visible=visible)
    elif visible and not wrapper.visible:
        raise ValueError(
            f"a visible budget was asked for, but the env already has a hidden "
            f"{type(wrapper).__name__}; build it with visible=True or leave the budget "
            "to the caller."
        )
    if driver is not None and isinstance(wrapper, BudgetMix):
        warnings.warn(
            f"BudgetMix(budgets={list(wrapper.budgets)}) draws nothing here: {driver} sets "
            "every episode's budget; only its visible flag counts. Drop the BudgetMix, "
            "or use it for training.",
            UserWarning,
            stacklevel=3,
        )
    return StackBudget(env, wrapper)
