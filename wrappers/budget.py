"""The turn budget: the wrappers that end an episode after T turns, and the stack's one owner of T.

:class:`TurnBudget` ends an episode after a fixed number of turns;
:class:`BudgetMix` plays each episode under a T sampled by a
:class:`BudgetDraw`, the one owner of drawing turn budgets from a weighted set
(any trainer that sets T per episode itself through
``reset(options={"budget": T})`` draws with it too, so the checks, the
normalisation of the weights, the random stream and the draw are the same
everywhere).

Everything that runs episodes under a turn budget it does not build itself
(the evaluator, the chat stack of ``agent-envs eval --history`` and GRPO
training, the SB3 training stack) asks :func:`resolve_budget`; code that only
reads a stack's budget asks :func:`find_budget`.  Both walk the stack through
:func:`turn_limits`, the one walk for turn limits, which ``TurnBudget`` itself
uses to refuse an inner limit below its budget.  :func:`resolve_budget`

* **finds** the stack's one ``TurnBudget`` or ``BudgetMix``, or adds a
  ``TurnBudget`` on top when there is none;
* **refuses** stacks that would end episodes before T: two budget wrappers
  (only the outermost reads ``reset(options={"budget": T})``), or a
  Gymnasium ``TimeLimit`` below the largest budget, or a hidden budget where
  a visible one is asked for.

Whoever drives the budget then sets each episode's T with
``reset(options={"budget": T})`` and, through the wrapper's
``report_budget``, whether ``info`` carries ``budget`` and ``turns_left``
(the key is then never added, rather than added and stripped).

>>> import gymnasium as gym  # the agent_envs/ ids are registered
>>> from wrappers.budget import resolve_budget
>>> env = resolve_budget(gym.make("agent_envs/GuessNumber-v0"), max_budget=20)
>>> _, info = env.reset(seed=0, options={"task_id": 0, "budget": 7})
>>> info["budget"], find_budget(env).visible
(7, False)
>>> draws = BudgetDraw([4, 8], weights=[1e308, 1e308])
>>> draws.probabilities
(0.5, 0.5)
>>> first, again = draws.generator(seed=0), draws.generator(seed=0)
>>> [draws.draw(first) for _ in range(8)] == [draws.draw(again) for _ in range(8)]
True
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from wrappers.action import expose_action_masks
from wrappers.errors import InvalidType, InvalidValue
from wrappers.protocol import BUDGET, TURN, TURNS_LEFT, BudgetAwareOracle
from wrappers.utils import seeding
from wrappers.utils.text_space import TextSpace
from wrappers.utils.validators import check_bool, check_budget, check_weights

__all__ = [
    "BudgetDraw",
    "BudgetMix",
    "TurnBudget",
    "add_budget_line",
    "budget_line",
    "find_budget",
    "resolve_budget",
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
            raise InvalidValue(
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


class BudgetDraw:
    """Draw turn budgets from ``budgets`` with ``weights`` (uniform by default).

    Args:
        budgets: the budgets T to draw from, ints >= 1 (one value: a fixed T).
        weights: one finite number >= 0 per budget, not all zero; normalised
            as :func:`wrappers.utils.validators.check_weights` does, so that huge
            weights such as ``1e308`` work.  Strings are refused.

    Attributes:
        budgets: the budgets, as a tuple of ints.
        weights: the weights as given (floats), or ``None`` for uniform.
        probabilities: the probability of each budget.
    """

    def __init__(self, budgets: Sequence[int], weights: Sequence[float] | None = None) -> None:
        if isinstance(budgets, (str, bytes)) or not isinstance(budgets, Sequence):
            raise InvalidType(f"budgets must be a sequence of ints, got {type(budgets).__name__}.")
        if len(budgets) == 0:
            raise InvalidValue("budgets must not be empty: pass at least one, e.g. [5, 10, 20].")
        self.budgets = tuple(check_budget(budget, "every budget") for budget in budgets)
        count = len(self.budgets)
        if weights is None:
            self.weights = None
            self.probabilities = tuple(float(p) for p in np.full(count, 1.0 / count))
        else:
            self.probabilities = check_weights(weights, count, choices="budgets")
            self.weights = tuple(float(weight) for weight in weights)

    @property
    def max_budget(self) -> int:
        """The largest budget."""
        return max(self.budgets)

    @staticmethod
    def generator(seed: int | None) -> np.random.Generator:
        """Return the budget stream of ``seed``, apart from the env's own stream of that seed.

        ``None`` starts from fresh OS entropy.
        """
        return np.random.default_rng() if seed is None else seeding.stream(seeding.BUDGET, seed)

    def draw(self, rng: np.random.Generator) -> int:
        """Return one budget drawn from ``rng`` (a fixed budget draws nothing)."""
        if len(self.budgets) == 1:
            return self.budgets[0]
        return self.budgets[int(rng.choice(len(self.budgets), p=self.probabilities))]

    def __repr__(self) -> str:
        weights = "" if self.weights is None else f", weights={list(self.weights)}"
        return f"BudgetDraw({list(self.budgets)}{weights})"


class BudgetMix(TurnBudget):
    """Play each episode under a turn budget sampled from ``budgets``.

    On every ``reset`` the wrapper draws T from ``budgets`` with ``weights``
    (uniform by default) and behaves exactly like :class:`TurnBudget` with
    ``max_turns=T`` for that episode, including ``info["budget"]``.

    The draw is a :class:`~wrappers.budget.BudgetDraw` (``draws``), which
    checks and normalises the weights (huge ones such as ``1e308`` included),
    from the wrapper's own generator.  ``reset(seed=s)`` re-seeds it from
    ``s``, so runs are reproducible, and the sub-envs of a vector env (seeded
    ``s, s+1, ...``) draw independently.  Before any seed it starts
    from fresh OS entropy.  ``reset(options={"budget": T})`` forces T.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers import BudgetMix
        >>> env = BudgetMix(gym.make("agent_envs/GuessNumber-v0"), budgets=[5, 10, 20])
        >>> _, info = env.reset(seed=0)
        >>> info["budget"] in (5, 10, 20)
        True
    """

    def __init__(
        self,
        env: gym.Env,
        budgets: Sequence[int],
        weights: Sequence[float] | None = None,
        visible: bool = False,
    ) -> None:
        draws = BudgetDraw(budgets, weights)
        # Recorded first, so that TurnBudget's own record (max_turns) does not
        # replace it and gym.make(env.spec) rebuilds a BudgetMix.
        gym.utils.RecordConstructorArgs.__init__(
            self, budgets=draws.budgets, weights=draws.weights, visible=visible
        )
        super().__init__(env, max_turns=draws.max_budget, visible=visible)
        #: The one budget-draw object: the checks, the normalisation and the stream.
        self.draws = draws
        self.budgets = draws.budgets
        #: The probability of each budget.
        self.weights = np.asarray(draws.probabilities)
        self._budget_rng = draws.generator(None)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        if seed is not None:
            self._budget_rng = self.draws.generator(seed)
        return super().reset(seed=seed, options=options)

    def _episode_budget(self, options: dict[str, Any] | None) -> int:
        if options and BUDGET in options:
            return super()._episode_budget(options)
        return self.draws.draw(self._budget_rng)


def find_budget(env: gym.Env, max_budget: int | None = None) -> TurnBudget | None:
    """Return the stack's one ``TurnBudget``/``BudgetMix``, or ``None``.

    Raises:
        InvalidValue: the stack holds two budget wrappers, or a ``TimeLimit``
            below ``max_budget``; either would end episodes before T.
    """
    found: list[TurnBudget] = []
    for wrapper, steps in turn_limits(env):
        if isinstance(wrapper, TurnBudget):
            found.append(wrapper)
        elif max_budget is not None and steps < max_budget:
            raise InvalidValue(
                f"the env stack has a TimeLimit of {steps} steps, below the largest "
                f"budget T={max_budget}: remove it (the TurnBudget ends episodes) or "
                "raise it to at least max(T)."
            )
    if len(found) > 1:
        names = " around ".join(type(budget).__name__ for budget in found)
        raise InvalidValue(
            f"the env stack holds {names}: each episode's budget is set through the "
            "outermost one only, so an inner one would change T; keep at most one."
        )
    return found[0] if found else None


def resolve_budget(
    env: gym.Env,
    max_budget: int,
    *,
    visible: bool = False,
    report_budget: bool | None = None,
    driver: str | None = None,
) -> gym.Env:
    """Find the turn budget of ``env`` or add one; refuse a stack that breaks T.

    Args:
        env: the env stack.
        max_budget: the largest budget any episode will get.
        visible: the turns left must be shown.  A stack without a budget gets a
            ``TurnBudget(visible=visible)``; a stack with a hidden one is refused.
        report_budget: whether ``info`` carries ``budget`` and ``turns_left``
            (the wrapper's ``report_budget``; ``None`` leaves it as it is).
        driver: who sets each episode's budget from outside, such as "the
            evaluator's T grid".  A ``BudgetMix`` in the stack then draws
            nothing, and a ``UserWarning`` says so.

    Returns:
        ``env``, or ``env`` under the ``TurnBudget`` added: the stack whose one
        budget wrapper :func:`find_budget` returns.

    Raises:
        ValueError: the stack is refused (see :func:`find_budget`), or
            ``visible`` is asked of a stack whose budget is hidden.
    """
    max_budget = check_budget(max_budget, "max_budget")
    check_bool(visible, "visible")
    if report_budget is not None:
        check_bool(report_budget, "report_budget")
    wrapper = find_budget(env, max_budget)
    if wrapper is None:
        wrapper = env = TurnBudget(env, max_turns=max_budget, visible=visible)
    elif visible and not wrapper.visible:
        raise InvalidValue(
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
    if report_budget is not None:
        wrapper.report_budget = report_budget
    return env
