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
from dataclasses import dataclass, replace
from typing import Any

import gymnasium as gym

from agent_envs import registration
from agent_envs.env_lookup import check_env_id
from agent_envs.env_stack import BudgetRegime, StackRecipe
from agent_envs.evaluation.policies import PolicyAdapter, adapt_policy
from agent_envs.evaluation.settings import HIDDEN, VISIBLE, EvalSettings
from wrappers import ActionHints, TurnBudget
from wrappers.budget import find_budget
from wrappers.errors import InvalidType, InvalidValue
from wrappers.protocol import BUDGET, SUCCESS, TASK_ID

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "RunSetup",
    "describe_wrappers",
    "policy_stack",
    "resolve_env",
]

logger = logging.getLogger(__name__)

#: Lockstep slots for a policy with ``act_batch`` when ``batch_size`` is not given.
DEFAULT_BATCH_SIZE = 64


def resolve_env(env: Any, env_name: str | None) -> tuple[StackRecipe, str | None]:
    """Return ``env`` (an id, a callable or a ``StackRecipe``) as a recipe, and its name if known.

    The recipe's env is a builder: an id becomes a picklable partial of
    :func:`agent_envs.registration.make_env`.
    """
    if isinstance(env, StackRecipe):
        if env.regime is not None:
            raise InvalidValue(
                "the evaluator sets the budget itself (its T grid, budgets=...): pass the "
                "StackRecipe without a regime."
            )
        source, name = resolve_env(env.env, env_name)
        return replace(env, env=source.env), name
    if isinstance(env, str):
        env_id = check_env_id(env)
        # A partial, not a lambda: it pickles by reference for Ray workers,
        # which import the module or package that registers the id themselves.
        return StackRecipe(functools.partial(registration.make_env, env)), env_name or env_id
    if isinstance(env, gym.Env):
        raise InvalidType(
            "env must be a registered id or a function that builds the env (e.g. "
            "lambda: MyEnv()), not an env instance: the evaluator builds its own copies."
        )
    if not callable(env):
        raise InvalidType(f"env must be a registered id or a callable, got {type(env).__name__}.")
    return StackRecipe(env), env_name


#: Named in the warning a BudgetMix under the evaluator gets.
_GRID = "the evaluator's T grid (budgets=...)"


def policy_stack(recipe: StackRecipe, wants: frozenset[str], visible: bool) -> StackRecipe:
    """Return ``recipe`` as a policy plays it: ``ActionHints`` for its ``wants``.

    ``info`` carries ``budget`` and ``turns_left`` only when the budget is
    ``visible``: hidden, episodes run at max(T), a budget the policy must not see.
    """
    hints = frozenset(recipe.options.hints) | wants
    return replace(recipe, options=replace(recipe.options, hints=hints, report_budget=visible))


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
class RunSetup:
    """What one run plays with, resolved once from the policy, the env and the settings.

    Attributes:
        policy: the policy as given (Ray workers get this, not the adapter).
        adapter: the evaluator's view of it.
        stack: the user's stack under the run's budget: max(T), shown or not.
        play: the stack the policy plays (:func:`policy_stack`); every worker
            builds its own from it.
        probe: the first stack of ``play``, already built and checked.
        settings: the settings as resolved (names, mode, batch size, ...).
        has_oracle: whether the env answers ``oracle_actions()``.
    """

    policy: Any
    adapter: PolicyAdapter
    stack: StackRecipe
    play: StackRecipe
    probe: gym.Env
    settings: EvalSettings
    has_oracle: bool

    @classmethod
    def resolve(cls, policy: Any, env: Any, settings: EvalSettings) -> RunSetup:
        """Build the probe, check the env, and fill in what only a run can tell.

        The one visibility decision: the turns left are shown when asked for
        or when the policy reads them in its observation (its one flag,
        ``visible_budget``), and then it sees the budget; it sees it also when
        the user's own ``TurnBudget``/``BudgetMix`` is visible.
        """
        adapter = adapt_policy(policy)
        recipe, name = resolve_env(env, settings.env_name)
        max_budget = max(settings.budgets)
        asked = settings.visible_budget or adapter.visible_budget
        stack = replace(recipe, regime=BudgetRegime.fixed(max_budget, asked))
        probe = policy_stack(stack, adapter.required_info, asked).build(_GRID)
        budget = find_budget(probe)
        visible = asked or budget.visible
        budget.report_budget = visible
        play = policy_stack(stack, adapter.required_info, visible)
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
            mode=VISIBLE if visible else HIDDEN,
            visible_budget=asked,
            diagnostics=settings.diagnostics and has_oracle,
            batch_size=batch,
        )
        return cls(policy, adapter, stack, play, probe, resolved, has_oracle)
