"""The budget regime of a run, and the one builder of the env stack an agent plays in.

* :class:`BudgetRegime` is the one value for "how many turns": a fixed T, or
  budgets drawn per episode with weights (a ``BudgetMix``), whether the turns
  left are shown, and whether the attempts at one task share a T.  The shared
  flags parse into it (:func:`agent_envs.arguments.budget_regime`) and every
  caller takes it: the evaluator, the CLI, ``train-sb3``, ``train-llm``, the
  integrations and ``serve``.
* :class:`StackOptions` says what else the agent sees and acts through: a task
  pool, a shaped reward, the dialogue (``ChatHistory``), action hints,
  discrete actions and an encoded observation.
* :func:`make_stack` turns (env, regime, options) into the stack, always in
  one order, and resolves its budget once (:func:`wrappers.budget.resolve_budget`);
  a :class:`StackRecipe` is those three as one picklable value.

>>> import agent_envs
>>> from wrappers.budget import find_budget
>>> env = make_stack("agent_envs/GuessNumber-v0", BudgetRegime.mixed([3, 5], visible=True))
>>> type(find_budget(env)).__name__, env.reset(seed=0)[1]["budget"] in (3, 5)
('BudgetMix', True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agent_envs.registration import make_env
from wrappers.action import DiscreteActions
from wrappers.budget import BudgetDraw, BudgetMix, resolve_budget
from wrappers.episode import TaskPool, TruncationIsTerminal
from wrappers.errors import InvalidType, InvalidValue
from wrappers.info import ActionHints, ChatHistory, NumpyInfo
from wrappers.observation import EncodeObservation
from wrappers.protocol import ADMISSIBLE_ACTIONS, BUDGET, ENV_ID, ORACLE_ACTIONS
from wrappers.reward import ProcessReward
from wrappers.utils.validators import check_bool

__all__ = ["BudgetRegime", "StackOptions", "StackRecipe", "make_stack"]

#: The plain-data keywords of a regime (``budget`` or ``budgets``, ``weights``, ``visible``).
REGIME_KEYWORDS = (BUDGET, "budgets", "weights", "visible")


@dataclass(frozen=True)
class BudgetRegime:
    """The turn budget of every episode: a fixed T or a BudgetMix, its visibility and sharing.

    Args:
        budgets: the budgets T (one value and ``mix=False``: a fixed budget).
        weights: the mix's weights (uniform when ``None``), normalised as
            ``BudgetMix`` normalises them.
        visible: each observation ends with the turns left.
        shared: the attempts at one task (a GRPO group) share one T drawn per
            task; otherwise each attempt draws its own.  Only a trainer that
            sets T per episode itself reads it; a ``BudgetMix`` draws per episode.
        mix: a ``BudgetMix`` draws T per episode (keyword only; default: when
            there are several budgets or weights); ``--budget-mix 8`` is a mix
            of one budget, named ``BudgetMix{8}`` in the run's name.

    ``draws`` is the :class:`~wrappers.budget.BudgetDraw` of the budgets
    (not part of equality).

    >>> BudgetRegime.fixed(8).describe(), BudgetRegime.mixed([4, 8], [1, 3]).describe()
    ('T=8', 'BudgetMix{4,8}')
    """

    budgets: tuple[int, ...]
    weights: tuple[float, ...] | None = None
    visible: bool = False
    shared: bool = True
    mix: bool | None = field(default=None, kw_only=True)
    draws: BudgetDraw = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        draws = BudgetDraw(self.budgets, self.weights)
        check_bool(self.visible, "visible")
        check_bool(self.shared, "shared")
        several = len(draws.budgets) > 1 or self.weights is not None
        mix = several if self.mix is None else check_bool(self.mix, "mix")
        if not mix and (len(draws.budgets) > 1 or self.weights is not None):
            raise InvalidValue("a fixed budget has one T and no weights; use a mix for several.")
        object.__setattr__(self, "budgets", draws.budgets)
        object.__setattr__(self, "weights", draws.weights)
        object.__setattr__(self, "mix", mix)
        object.__setattr__(self, "draws", draws)

    @classmethod
    def fixed(cls, budget: int, visible: bool = False, shared: bool = True) -> BudgetRegime:
        """Return a fixed budget T."""
        return cls((budget,), visible=visible, shared=shared, mix=False)

    @classmethod
    def mixed(
        cls,
        budgets: Sequence[int],
        weights: Sequence[float] | None = None,
        visible: bool = False,
        shared: bool = True,
    ) -> BudgetRegime:
        """Return a BudgetMix of ``budgets`` with ``weights``."""
        if isinstance(budgets, (str, bytes)) or not isinstance(budgets, Sequence):
            raise InvalidType(f"budgets must be a sequence of ints, got {type(budgets).__name__}.")
        weights = None if weights is None else tuple(weights)
        return cls(tuple(budgets), weights, visible, shared, mix=True)

    @property
    def max_budget(self) -> int:
        """The longest budget."""
        return self.draws.max_budget

    def describe(self) -> str:
        """Return ``"T=8"`` or ``"BudgetMix{4,6,8,12}"`` for logs and tables."""
        if not self.mix:
            return f"T={self.budgets[0]}"
        return "BudgetMix{" + ",".join(map(str, self.budgets)) + "}"

    def to_json(self) -> dict[str, Any]:
        """Return the regime as a JSON-ready dict, the keyword arguments that rebuild it.

        ``mix`` is written only for a mix of one budget, the one regime whose
        ``mix`` the other fields do not imply.
        """
        data = {
            "budgets": list(self.budgets),
            "weights": None if self.weights is None else list(self.weights),
            "visible": self.visible,
            "shared": self.shared,
        }
        if self.mix and len(self.budgets) == 1 and self.weights is None:
            data["mix"] = True
        return data

    @classmethod
    def of(cls, regime: BudgetRegime | int, visible: bool = False) -> BudgetRegime:
        """Return ``regime`` as given, or the fixed budget of an int T with ``visible``."""
        return regime if isinstance(regime, BudgetRegime) else cls.fixed(regime, visible)

    @classmethod
    def from_keywords(cls, old: Mapping[str, Any], visible: bool = False) -> BudgetRegime:
        """Return the regime of ``budget=T`` or ``budgets=[...]`` with ``weights`` and ``visible``.

        ``old`` is a mapping with those keys (an RLlib ``env_config``, say);
        ``visible`` is the default visibility.
        """
        budget, budgets = old.get(BUDGET), old.get("budgets")
        if (budget is None) == (budgets is None):
            raise InvalidValue(
                "Give exactly one of budget (a turn budget) and budgets (a BudgetMix)."
            )
        visible = old.get("visible", visible)
        if budgets is not None:
            return cls.mixed(budgets, old.get("weights"), visible)
        if old.get("weights") is not None:
            raise InvalidValue("weights go with budgets (a BudgetMix), not with a fixed budget.")
        return cls.fixed(budget, visible)


@dataclass(frozen=True)
class StackOptions:
    """What the agent sees and acts through, besides the budget; all off by default.

    Attributes:
        task_ids: draw each episode's task from these ids (``TaskPool``).
        process_reward: the coefficient of a ``ProcessReward`` (``None``: none),
            discounted with ``gamma``.
        truncation_terminal: a budget that runs out ends the episode as
            terminated (``TruncationIsTerminal``).
        history: ``info["messages"]`` holds the dialogue (``ChatHistory`` with
            ``window`` and ``record``), outside the budget, so that a visible
            budget's line is in the messages too.
        hints: the ``required_info`` keys to add (``ActionHints``).
        discrete: ``Discrete`` actions over the env's vocabulary (``DiscreteActions``).
        encoding: ``EncodeObservation``'s keyword arguments (``None``: text observations).
        numpy_info: info values as numpy (``NumpyInfo``).
        make_kwargs: keyword arguments for ``gym.make`` of an id.
        report_budget: whether ``info`` carries ``budget`` and ``turns_left``
            (``None``: as the budget wrapper has it, by default yes).  The
            evaluator turns it off where the policy must not see the budget.
    """

    task_ids: Sequence[int] | None = None
    process_reward: float | None = None
    gamma: float = 0.99
    truncation_terminal: bool = False
    history: bool = False
    window: int | None = None
    record: str = "action"
    hints: frozenset[str] = frozenset()
    discrete: bool = False
    encoding: Mapping[str, Any] | None = None
    numpy_info: bool = False
    make_kwargs: Mapping[str, Any] = field(default_factory=dict)
    report_budget: bool | None = None


@dataclass(frozen=True)
class StackRecipe:
    """One env stack as a value: the env, its options and its budget regime.

    Picklable when the env is (an id, or a factory defined in a module), so
    Ray workers build their own stacks from it.  The evaluator takes one as
    its ``env`` without a regime and sets the regime itself: max(T) of its T
    grid, shown or hidden as the run resolves.
    """

    env: str | Callable[[], gym.Env]
    options: StackOptions = StackOptions()
    regime: BudgetRegime | None = None

    def build(self, driver: str | None = None) -> gym.Env:
        """Return a new stack of this recipe (:func:`make_stack`); it needs a regime."""
        if self.regime is None:
            raise InvalidValue("this stack recipe has no budget regime to build with.")
        return make_stack(self.env, self.regime, self.options, driver=driver)


def make_stack(
    env: str | Callable[[], gym.Env],
    regime: BudgetRegime,
    options: StackOptions | None = None,
    *,
    driver: str | None = None,
) -> gym.Env:
    """Build the stack of ``env`` (an id or a factory) under ``regime``, with ``options``.

    Inside out: the env, ``TaskPool``, the budget (a ``BudgetMix`` for a mix,
    else the stack's own or a new ``TurnBudget``), ``ProcessReward``,
    ``TruncationIsTerminal``, ``ChatHistory``, ``ActionHints``,
    ``DiscreteActions``, ``EncodeObservation``, ``NumpyInfo``.  ``driver``
    names who sets each episode's T from outside (see
    :func:`wrappers.budget.resolve_budget`).

    Returns:
        The whole stack; :func:`wrappers.budget.find_budget` finds its one
        budget wrapper.
    """
    options = options or StackOptions()
    # make_env also resolves module:EnvId ids and installed env packages' ids.
    base = make_env(env, **options.make_kwargs) if isinstance(env, str) else env()
    if not isinstance(base, gym.Env):
        raise InvalidType(f"the env factory returned {type(base).__name__}, not a gymnasium.Env.")
    if options.task_ids is not None:
        base = TaskPool(base, options.task_ids)
    if regime.mix:
        base = BudgetMix(base, regime.budgets, regime.weights, visible=regime.visible)
    base = resolve_budget(
        base,
        regime.max_budget,
        visible=regime.visible,
        report_budget=options.report_budget,
        driver=driver,
    )
    return _outside(base, options)


def _outside(env: gym.Env, options: StackOptions) -> gym.Env:
    """Add the wrappers that go outside the budget, in their one order."""
    if options.process_reward is not None:
        env = ProcessReward(
            env,
            coef=options.process_reward,
            gamma=options.gamma,
            truncation_is_terminal=options.truncation_terminal,
        )
    if options.truncation_terminal:
        env = TruncationIsTerminal(env)
    if options.history:
        env = ChatHistory(env, window=options.window, record=options.record)
    if options.hints:
        env = ActionHints(
            env,
            admissible=ADMISSIBLE_ACTIONS in options.hints,
            oracle=ORACLE_ACTIONS in options.hints,
            env_id=ENV_ID in options.hints,
        )
    if options.discrete:
        env = DiscreteActions(env)
    if options.encoding is not None:
        env = EncodeObservation(env, **options.encoding)
    return NumpyInfo(env) if options.numpy_info else env
