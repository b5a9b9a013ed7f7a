"""TurnBudget: end an episode after a fixed number of turns."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium import spaces

from wrappers._core.text_space import TextSpace
from wrappers._core.validators import check_bool, check_budget
from wrappers.action import expose_action_masks
from wrappers.protocol import BUDGET, TURN, TURNS_LEFT, BudgetAwareOracle

__all__ = [
    "TurnBudget",
    "add_budget_line",
    "budget_line",
    "strip_budget_line",
    "time_limit_steps",
    "turn_limits",
]

_LINE_START = "[Turns left: "


def budget_line(turns_left: int, budget: int) -> str:
    """Return the line a visible budget appends to each observation."""
    return f"{_LINE_START}{turns_left} of {budget}]"


def add_budget_line(observation: str, turns_left: int, budget: int) -> str:
    """Return ``observation`` with the budget line on a line of its own at the end.

    >>> add_budget_line("You see a door.", 3, 8)
    'You see a door.\\n[Turns left: 3 of 8]'
    """
    return f"{observation}\n{budget_line(turns_left, budget)}"


def strip_budget_line(observation: str) -> str:
    """Return ``observation`` without its final budget line; unchanged when it has none.

    >>> strip_budget_line(add_budget_line("You see a door.", 3, 8))
    'You see a door.'
    >>> strip_budget_line("You see a door.")
    'You see a door.'
    """
    if observation.endswith("]"):
        head, _, last = observation.rpartition("\n")
        if last.startswith(_LINE_START):
            return head
    return observation


# Room for the line in the observation space, for any budget below 10**12.
_BUDGET_LINE_MAX = len(budget_line(10**12, 10**12))


def time_limit_steps(env: gym.wrappers.TimeLimit) -> int:
    """Return the step limit of a Gymnasium ``TimeLimit`` wrapper.

    Gymnasium keeps it only in the private ``_max_episode_steps`` (``env.spec``
    is ``None`` for an env built without ``gym.make``), so this is the one
    place in the project that reads a private Gymnasium attribute.
    ``tests/test_budget.py::test_time_limit_steps_reads_gymnasium`` fails if a
    Gymnasium release renames it.
    """
    return int(env._max_episode_steps)


def turn_limits(env: gym.Env) -> list[tuple[gym.Wrapper, int]]:
    """Return every wrapper of ``env``'s stack that ends episodes by count, outermost first.

    The one walk down a stack for its turn limits: each ``TimeLimit`` with its
    step limit and each ``TurnBudget``/``BudgetMix`` with its largest budget.
    """
    limits: list[tuple[gym.Wrapper, int]] = []
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.TimeLimit):
            limits.append((env, time_limit_steps(env)))
        elif isinstance(env, TurnBudget):
            limits.append((env, env.max_turns))
        env = env.env
    return limits


class TurnBudget(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """Give the agent exactly ``max_turns`` turns per episode.

    A turn is one ``step`` call, valid action or not.  After ``max_turns`` turns
    without termination the step returns ``truncated=True``; success on the last
    turn is ``terminated=True, truncated=False``.

    Every ``info`` gains ``budget`` (T), ``turn`` (turns used) and
    ``turns_left``.  With ``visible=True`` each observation ends with a line
    ``[Turns left: N of T]``; with ``visible=False`` the agent cannot see it.
    ``reset(options={"budget": T})`` sets the budget for that episode only.

    An inner ``TimeLimit`` or ``TurnBudget`` that would cut the episode before
    the budget is refused at construction, so ``T`` turns always means ``T``.

    The attribute ``report_budget`` (default ``True``) can be set to ``False``
    by whoever drives the budget from outside (see :mod:`wrappers.budget`):
    ``info`` then carries ``turn`` only, never ``budget`` or ``turns_left``.
    The evaluator does this when it plays a hidden budget at max(T), so the
    policy never sees a budget that is not the one being measured.

    Budget-aware oracles (:class:`wrappers.protocol.BudgetAwareOracle`): if
    the unwrapped env has a ``set_turns_left(n)`` method, the wrapper calls it
    after every reset and step with the turns left, so that an oracle can
    plan for the budget (slippery FrozenLake does); with ``report_budget``
    off it passes ``None`` (no budget), because the budget played is not the
    one measured.  The outermost budget wrapper calls it last, so its budget
    wins.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers import TurnBudget
        >>> env = TurnBudget(gym.make("agent_envs/GuessNumber-v0"), max_turns=3)
        >>> _, info = env.reset(seed=0, options={"task_id": 0})
        >>> info["budget"], info["turns_left"]
        (3, 3)
    """

    def __init__(self, env: gym.Env, max_turns: int, visible: bool = False) -> None:
        max_turns = check_budget(max_turns, "max_turns")
        check_bool(visible, "visible")
        gym.utils.RecordConstructorArgs.__init__(self, max_turns=max_turns, visible=visible)
        gym.Wrapper.__init__(self, env)
        expose_action_masks(self)
        self.max_turns = max_turns
        self.visible = visible
        self._inner_limit = min((steps for _, steps in turn_limits(env)), default=None)
        self._check_inner_limit(max_turns)
        if visible and isinstance(env.observation_space, spaces.Text):
            inner = env.observation_space
            self.observation_space = TextSpace(
                max_length=inner.max_length + _BUDGET_LINE_MAX + 1,
                min_length=inner.min_length,
                charset=inner.character_set,
            )
        self.report_budget = True
        self._budget = max_turns
        self._turn = 0
        base = env.unwrapped
        self._tell_turns_left = base.set_turns_left if isinstance(base, BudgetAwareOracle) else None

    @property
    def budget(self) -> int:
        """The budget of the current episode."""
        return self._budget

    def _check_inner_limit(self, budget: int) -> None:
        if self._inner_limit is not None and self._inner_limit < budget:
            raise ValueError(
                f"A turn budget of {budget} cannot work: an inner TimeLimit/TurnBudget ends "
                f"episodes after {self._inner_limit} steps. Build the env without it "
                "(agent_envs ids register no TimeLimit: use gym.make(id) without "
                "max_episode_steps) or raise that limit to at least the budget."
            )

    def _episode_budget(self, options: dict[str, Any] | None) -> int:
        if options and BUDGET in options:
            budget = check_budget(options[BUDGET], "options['budget']")
            self._check_inner_limit(budget)
            return budget
        return self.max_turns

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        self._budget = self._episode_budget(options)
        self._turn = 0
        if options and BUDGET in options:
            # The budget is ours; never mutate the caller's dict or leak it inward.
            options = {key: value for key, value in options.items() if key != BUDGET}
        observation, info = self.env.reset(seed=seed, options=options)
        return self._decorate(observation, info)

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        # Inlined rather than calling _decorate: this is the hot path of every
        # rollout, and the env steps themselves take only a microsecond or two.
        self._turn = turn = self._turn + 1
        budget = self._budget
        turns_left = budget - turn if turn < budget else 0
        if not turns_left and not terminated:
            truncated = True
        if self._tell_turns_left is not None:
            self._tell_turns_left(turns_left if self.report_budget else None)
        if self.report_budget:
            info[BUDGET], info[TURN], info[TURNS_LEFT] = budget, turn, turns_left
        else:
            info[TURN] = turn
        if self.visible:
            observation = add_budget_line(observation, turns_left, budget)
        return observation, reward, terminated, truncated, info

    def _decorate(self, observation: str, info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        turns_left = max(self._budget - self._turn, 0)
        if self._tell_turns_left is not None:
            self._tell_turns_left(turns_left if self.report_budget else None)
        # The inner env hands us a fresh dict each call, so adding keys in place
        # is safe and spares a copy on the hot path.
        if self.report_budget:
            info[BUDGET], info[TURN], info[TURNS_LEFT] = self._budget, self._turn, turns_left
        else:
            info[TURN] = self._turn
        if self.visible:
            observation = add_budget_line(observation, turns_left, self._budget)
        return observation, info
