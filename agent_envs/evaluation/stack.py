"""The env stack a run plays in, and the one place that resolves a run before it plays.

:class:`RunSetup` ``.resolve`` is where the evaluator meets the policy and the
env: it builds the first stack (the *probe*), decides once whether the policy
may see the budget, checks the env, and fills in the settings only a run can
tell.  Step quality judges with the same setup, so both see one stack.
"""

from __future__ import annotations

import functools
import json
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import gymnasium as gym

from agent_envs import registration
from agent_envs.env_lookup import check_env_id
from agent_envs.env_stack import BudgetRegime, StackOptions, StackRecipe, make_stack
from agent_envs.evaluation.policies import PolicyAdapter, adapt_policy
from agent_envs.evaluation.settings import HIDDEN, VISIBLE, EvalSettings
from wrappers import ActionHints, TurnBudget
from wrappers.budget import StackBudget
from wrappers.errors import InvalidType, InvalidValue
from wrappers.protocol import BUDGET, SUCCESS, TASK_ID

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "EnvStack",
    "RunSetup",
    "build_stack",
    "describe_wrappers",
    "open_stack",
    "resolve_env",
]

logger = logging.getLogger(__name__)

#: Lockstep slots for a policy with ``act_batch`` when ``batch_size`` is not given.
DEFAULT_BATCH_SIZE = 64


def resolve_env(env: Any, env_name: str | None) -> tuple[Callable[[], gym.Env], str | None]:
    """Return a builder for ``env`` (an id, a callable or a ``StackRecipe``) and its name, if known.

    A :class:`~agent_envs.env_stack.StackRecipe` comes back as one, its env resolved.
    """
    if isinstance(env, StackRecipe):
        make_env, name = resolve_env(env.env, env_name)
        return StackRecipe(make_env, env.options), name
    if isinstance(env, str):
        env_id = check_env_id(env)
        # A partial, not a lambda: it pickles by reference for Ray workers,
        # which import the module or package that registers the id themselves.
        return functools.partial(registration.make_env, env), env_name or env_id
    if isinstance(env, gym.Env):
        raise InvalidType(
            "env must be a registered id or a function that builds the env (e.g. "
            "lambda: MyEnv()), not an env instance: the evaluator builds its own copies."
        )
    if not callable(env):
        raise InvalidType(f"env must be a registered id or a callable, got {type(env).__name__}.")
    return env, env_name


#: Named in the warning a BudgetMix under the evaluator gets.
_GRID = "the evaluator's T grid (budgets=...)"


def build_stack(
    make_env: Callable[[], gym.Env] | StackRecipe,
    max_budget: int,
    visible_budget: bool,
    wants: frozenset[str],
    driver: str | None = None,
) -> tuple[gym.Env, StackBudget]:
    """Build one env for the run with :func:`~agent_envs.env_stack.make_stack`.

    The user's env (or a :class:`~agent_envs.env_stack.StackRecipe`'s, with its
    options) under a budget of ``max_budget`` turns, and ``ActionHints`` for
    the ``wants`` of the policy; the turns left are shown when ``visible_budget``.
    """
    source, options = make_env, StackOptions()
    if isinstance(make_env, StackRecipe):
        source, options = make_env.env, make_env.options
    options = replace(options, hints=frozenset(options.hints) | wants)
    regime = BudgetRegime.fixed(max_budget, visible_budget)
    budget = make_stack(source, regime, options, driver=driver)
    return budget.env, budget


def _env_name(base: gym.Env) -> str:
    """Return the id of ``base``, with the arguments it was made with where they differ.

    The name keys run logs and comparisons, so ``gym.make(id, max_number=5)``
    must not pass for ``id`` itself.
    """
    spec = getattr(base, "spec", None)
    if spec is None:
        return f"{type(base).__module__}:{type(base).__qualname__}"
    registered = gym.registry.get(spec.id)
    defaults = registered.kwargs if registered is not None else {}
    changed = {
        key: value
        for key, value in spec.kwargs.items()
        if key != "render_mode" and defaults.get(key) != value  # rendering changes no episode
    }
    if not changed:
        return spec.id
    return f"{spec.id} {json.dumps(changed, sort_keys=True, default=repr)}"


# gym.make adds these for every id alike; the evaluator adds ActionHints for the
# policy's required_info and drives any TurnBudget/BudgetMix itself.
_UNDESCRIBED = (
    gym.wrappers.PassiveEnvChecker,
    gym.wrappers.OrderEnforcing,
    gym.wrappers.TimeLimit,
    TurnBudget,
    ActionHints,
)


def describe_wrappers(env: gym.Env) -> tuple[str, ...]:
    """Return the wrappers of ``env``'s stack that change what an episode does, outermost first.

    Each is ``Name`` or ``Name {"arg": value}`` with the arguments it recorded
    (``gymnasium.utils.RecordConstructorArgs``).  They belong to the resume
    check: a run with ``ChatHistory(window=2)`` shows the agent other prompts
    than one without it, so its episodes must not be mixed into the same log.
    The budget wrappers are left out (the evaluator sets T per episode and
    their visibility is the run's ``mode``), as are the wrappers ``gym.make``
    adds to every env and ``ActionHints`` (a consequence of the policy).

    >>> import gymnasium as gym, agent_envs
    >>> from wrappers import ChatHistory
    >>> describe_wrappers(ChatHistory(gym.make("agent_envs/GuessNumber-v0"), window=2))
    ('ChatHistory {"record": "action", "system_prompt": null, "window": 2}',)
    """
    names = []
    while isinstance(env, gym.Wrapper):
        if not isinstance(env, _UNDESCRIBED):
            recorded = dict(getattr(env, "_saved_kwargs", None) or {})
            recorded.pop("env", None)
            # An argument JSON cannot hold (a callable, say) is named by its type:
            # its repr may hold a memory address, which would differ every run.
            arguments = json.dumps(
                recorded, sort_keys=True, default=lambda value: type(value).__qualname__
            )
            names.append(type(env).__name__ + (f" {arguments}" if recorded else ""))
        env = env.env
    return tuple(names)


def _probe(env: gym.Env, task_id: int, budget: int, name: str) -> bool:
    """Check the env reports success; return whether it has a working oracle."""
    _, info = env.reset(seed=0, options={TASK_ID: task_id, BUDGET: budget})
    if SUCCESS not in info:
        raise InvalidValue(f"{name} does not report info['success'], so success cannot be counted.")
    base = env.unwrapped
    try:
        base.oracle_actions()
        base.oracle_turns()
    except (AttributeError, NotImplementedError):
        return False
    return True


def _warn_if_tasks_repeat(base: gym.Env, n_tasks: int, name: str) -> None:
    """Warn when more tasks are asked for than the env has distinct instances."""
    supply = getattr(base, "task_supply", None)
    if supply is not None and n_tasks > supply:
        warnings.warn(
            f"{name} has only {supply} distinct tasks, so {n_tasks} tasks repeat instances "
            f"and the interval over tasks comes out too narrow; ask for at most {supply}.",
            UserWarning,
            stacklevel=3,
        )


@dataclass(frozen=True)
class EnvStack:
    """Builds the env stack that episodes run in; picklable, so Ray workers build their own.

    Attributes:
        make_env: the user's env factory.
        max_budget: max(T).
        visible_budget: show the turns left in the observation (the resolved setting).
        wants: the ``required_info`` keys of the policy (``ActionHints``).
        policy_sees_budget: whether the policy may see the budget (the run's
            mode): ``visible_budget``, or the user's own budget is visible.
            ``info`` carries ``budget`` and ``turns_left`` only then.
    """

    make_env: Callable[[], gym.Env]
    max_budget: int
    visible_budget: bool
    wants: frozenset[str]
    policy_sees_budget: bool

    def __call__(self) -> gym.Env:
        """Build one stack, its budget driven and reported exactly as the probe's."""
        env, budget = build_stack(self.make_env, self.max_budget, self.visible_budget, self.wants)
        budget.report(self.policy_sees_budget)
        return env


def open_stack(
    make_env: Callable[[], gym.Env],
    adapter: PolicyAdapter,
    max_budget: int,
    visible_budget: bool,
    driver: str | None = None,
) -> tuple[EnvStack, gym.Env]:
    """Decide whether the policy may see the budget; return the run's stack and its first env.

    The one visibility decision: the turns left are shown when asked for or
    when the policy sees the budget (its one flag, ``visible_budget``); the
    budget is visible to the policy also when the user's own
    ``TurnBudget``/``BudgetMix`` is visible.  Hidden, episodes run at max(T),
    a budget the policy must not see.
    """
    # A policy that reads the turns left in its observation gets them shown by
    # the TurnBudget itself, exactly as in its training, not re-added by it.
    visible_budget = visible_budget or adapter.visible_budget
    wants = adapter.required_info
    probe, budget = build_stack(make_env, max_budget, visible_budget, wants, driver)
    policy_sees_budget = visible_budget or budget.visible
    budget.report(policy_sees_budget)
    return EnvStack(make_env, max_budget, visible_budget, wants, policy_sees_budget), probe


@dataclass(frozen=True)
class RunSetup:
    """What one run plays with, resolved once from the policy, the env and the settings.

    Attributes:
        policy: the policy as given (Ray workers get this, not the adapter).
        adapter: the evaluator's view of it.
        stack: builds every env stack of the run.
        probe: the first stack, already built and checked.
        settings: the settings as resolved (names, mode, batch size, ...).
        has_oracle: whether the env answers ``oracle_actions()``.
    """

    policy: Any
    adapter: PolicyAdapter
    stack: EnvStack
    probe: gym.Env
    settings: EvalSettings
    has_oracle: bool

    @classmethod
    def resolve(cls, policy: Any, env: Any, settings: EvalSettings) -> RunSetup:
        """Build the probe, check the env, and fill in what only a run can tell."""
        adapter = adapt_policy(policy)
        make_env, name = resolve_env(env, settings.env_name)
        max_budget = max(settings.budgets)
        stack, probe = open_stack(make_env, adapter, max_budget, settings.visible_budget, _GRID)
        name = name or _env_name(probe.unwrapped)
        has_oracle = _probe(probe, settings.tasks[0], max_budget, name)
        if adapter.check_tasks is not None:
            adapter.check_tasks(probe, settings.tasks)  # e.g. a few-shot example's instance
        _warn_if_tasks_repeat(probe.unwrapped, len(settings.tasks), name)
        if settings.diagnostics and not has_oracle:
            logger.info("%s has no oracle: diagnostics cover invalid actions and dead ends.", name)
        batch = (settings.batch_size or DEFAULT_BATCH_SIZE) if adapter.batched else 1
        resolved = settings.resolved(
            env_name=name,
            agent_name=adapter.recorded_name(settings.agent_name),
            wrappers=describe_wrappers(probe),
            mode=VISIBLE if stack.policy_sees_budget else HIDDEN,
            visible_budget=stack.visible_budget,
            diagnostics=settings.diagnostics and has_oracle,
            batch_size=batch,
        )
        return cls(policy, adapter, stack, probe, resolved, has_oracle)
