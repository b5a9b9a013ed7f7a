"""evaluate(): measure any policy's Pass@(K,T) surface on any registered env."""

from __future__ import annotations

import difflib
import functools
import json
import logging
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from agent_envs import __version__
from agent_envs.evaluation.diagnostics import summarize
from agent_envs.evaluation.executor import EpisodeExecutor, LocalExecutor, PlaySpec
from agent_envs.evaluation.policies import adapt_policy
from agent_envs.evaluation.result import EvalResult
from agent_envs.evaluation.rollout import EpisodeRecord, RunOptions
from agent_envs.evaluation.session import RunState
from agent_envs.evaluation.settings import HIDDEN, VISIBLE, EvalSettings
from agent_envs.protocol import (
    ADMISSIBLE_ACTIONS,
    BUDGET,
    ENV_ID,
    ORACLE_ACTIONS,
    SUCCESS,
    TASK_ID,
)
from wrappers import ActionHints, TurnBudget
from wrappers.budget import StackBudget, resolve_budget

__all__ = ["build_stack", "describe_wrappers", "evaluate", "resolve_env"]

logger = logging.getLogger(__name__)

#: Lockstep slots for a policy with ``act_batch`` when ``batch_size`` is not given.
DEFAULT_BATCH_SIZE = 64


def resolve_env(env: Any, env_name: str | None) -> tuple[Callable[[], gym.Env], str | None]:
    """Return a builder for ``env`` (an id or a callable) and its name, if known."""
    if isinstance(env, str):
        env_id = env
        if env_id not in gym.registry and f"agent_envs/{env_id}" in gym.registry:
            env_id = f"agent_envs/{env_id}"
        if env_id not in gym.registry:
            close = difflib.get_close_matches(env_id, list(gym.registry), n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ValueError(
                f"Unknown env id {env!r}.{hint} Run `agent-envs list` for the registered ids."
            )
        # A partial, not a lambda: it pickles by reference for Ray workers.
        return functools.partial(gym.make, env_id), env_name or env_id
    if isinstance(env, gym.Env):
        raise TypeError(
            "env must be a registered id or a function that builds the env (e.g. "
            "lambda: MyEnv()), not an env instance: the evaluator builds its own copies."
        )
    if not callable(env):
        raise TypeError(f"env must be a registered id or a callable, got {type(env).__name__}.")
    return env, env_name


#: Named in the warning a BudgetMix under the evaluator gets.
_GRID = "the evaluator's T grid (budgets=...)"


def build_stack(
    make_env: Callable[[], gym.Env],
    max_budget: int,
    visible: bool,
    wants: frozenset[str],
    driver: str | None = None,
) -> tuple[gym.Env, StackBudget]:
    """Build one env for the run: the user's stack, its budget, and ``ActionHints`` if wanted."""
    env = make_env()
    if not isinstance(env, gym.Env):
        raise TypeError(f"the env factory returned {type(env).__name__}, not a gymnasium.Env.")
    budget = resolve_budget(env, max_budget, visible=visible, driver=driver)
    env = budget.env
    if wants:
        env = ActionHints(
            env,
            admissible=ADMISSIBLE_ACTIONS in wants,
            oracle=ORACLE_ACTIONS in wants,
            env_id=ENV_ID in wants,
        )
    return env, budget


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
        raise ValueError(f"{name} does not report info['success'], so success cannot be counted.")
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


def _success_counts(settings: EvalSettings, records: Sequence[EpisodeRecord]) -> np.ndarray:
    """Return c[task, T]: attempts that succeeded within each budget."""
    row = {task: index for index, task in enumerate(settings.tasks)}
    column = {budget: index for index, budget in enumerate(settings.budgets)}
    budgets = np.array(settings.budgets)
    counts = np.zeros((len(settings.tasks), len(settings.budgets)), dtype=np.int64)
    for record in records:
        if record.first_success_turn is None:
            continue
        if settings.mode == HIDDEN:
            counts[row[record.task_id]] += record.first_success_turn <= budgets
        else:
            counts[row[record.task_id], column[record.budget]] += 1
    return counts


@dataclass(frozen=True)
class EnvStack:
    """Builds the env stack that episodes run in; picklable, so Ray workers build their own.

    Attributes:
        make_env: the user's env factory.
        max_budget: max(T).
        visible_budget: the ``visible_budget`` setting.
        wants: the ``required_info`` keys of the policy (``ActionHints``).
        visible: whether the policy may see the budget (the run's mode).
    """

    make_env: Callable[[], gym.Env]
    max_budget: int
    visible_budget: bool
    wants: frozenset[str]
    visible: bool

    def __call__(self) -> gym.Env:
        """Build one stack, its budget driven and reported exactly as the probe's."""
        env, budget = build_stack(self.make_env, self.max_budget, self.visible_budget, self.wants)
        budget.report(self.visible)
        return env


class _Run:
    """One evaluation in progress: the policy, the env builder and the resolved settings."""

    def __init__(self, policy: Any, env: Any, settings: EvalSettings) -> None:
        self.policy, self.env = policy, env
        self.adapter = adapt_policy(policy)
        self.make_env, name = resolve_env(env, settings.env_name)
        self.wants = self.adapter.required_info
        max_budget = max(settings.budgets)
        # A policy that reads the turns left in its observation gets them shown by
        # the TurnBudget itself, exactly as in its training, not re-added by it.
        shown = settings.visible_budget or self.adapter.visible_budget
        self.probe, budget = build_stack(self.make_env, max_budget, shown, self.wants, _GRID)
        name = name or _env_name(self.probe.unwrapped)
        visible = shown or self.adapter.budget_aware or budget.visible
        # Hidden: episodes run at max(T), a budget the policy must not see.
        budget.report(visible)
        has_oracle = _probe(self.probe, settings.tasks[0], max_budget, name)
        _warn_if_tasks_repeat(self.probe.unwrapped, len(settings.tasks), name)
        if settings.diagnostics and not has_oracle:
            logger.info("%s has no oracle: diagnostics cover invalid actions and dead ends.", name)
        default_batch = DEFAULT_BATCH_SIZE if self.adapter.batched else 1
        self.has_oracle = has_oracle
        self.settings = settings.resolved(
            env_name=name,
            agent_name=settings.agent_name or self.adapter.name,
            wrappers=describe_wrappers(self.probe),
            mode=VISIBLE if visible else HIDDEN,
            visible_budget=shown,
            diagnostics=settings.diagnostics and has_oracle,
            batch_size=(settings.batch_size or default_batch) if self.adapter.batched else 1,
        )

    def executor(self) -> EpisodeExecutor:
        """Return what plays the episodes: this process, or Ray actors (imported only then)."""
        settings = self.settings
        build = EnvStack(
            self.make_env,
            max(settings.budgets),
            settings.visible_budget,
            self.wants,
            settings.mode == VISIBLE,
        )
        spec = PlaySpec(build, RunOptions.for_settings(settings), settings.batch_size)
        if settings.backend == "local":
            return LocalExecutor(self.adapter, spec, [self.probe])
        from agent_envs.evaluation.ray_backend import RayExecutor

        return RayExecutor(settings, self.policy, spec, self.adapter.batched)

    def play(self) -> tuple[RunState, EpisodeExecutor]:
        """Play every episode the log does not hold yet; return the run's bookkeeping."""
        executor = self.executor()  # refuses an unpicklable policy before the log opens
        run = RunState(self.settings)
        with run:
            executor.run(run.todo, run.finish)
        return run, executor

    def step_quality(self) -> dict[str, Any]:
        """Judge the policy on the shared reference states (``settings.step_quality`` per task)."""
        # Imported here: step_quality builds its stacks with this module's build_stack.
        from agent_envs.evaluation.step_quality import step_quality

        settings = self.settings
        return step_quality(
            self.policy,
            self.env,
            tasks=settings.tasks,
            states_per_task=settings.step_quality,
            seed=settings.seed,
            max_turns=max(settings.budgets),
            visible_budget=settings.visible_budget,
            batch_size=settings.batch_size,
        )

    def result(self, run: RunState, executor: EpisodeExecutor, elapsed: float) -> EvalResult:
        """Count the finished episodes into the surface, its interval and the diagnostics."""
        settings = self.settings
        records = run.records()
        counts = _success_counts(settings, records)
        values = EvalResult.per_task(settings.samples, counts, settings.ks)
        surface, low, high = EvalResult.surface_and_interval(
            values, settings.n_bootstrap, settings.seed, settings.confidence
        )
        error_counts = Counter(record.error for record in records if record.error is not None)
        diagnostics = summarize(
            records,
            settings.budgets,
            settings.mode,
            settings.diagnostics,
            privileged=bool(getattr(self.probe.unwrapped, "privileged_oracle", False)),
        )
        if settings.step_quality and self.has_oracle:
            diagnostics["step_quality"] = self.step_quality()
        return EvalResult(
            settings=settings,
            surface=surface,
            ci_low=low,
            ci_high=high,
            success_counts=counts,
            episodes=len(records),
            errors=sum(error_counts.values()),
            error_examples=list(error_counts)[:5],  # in first-seen order
            error_counts=list(error_counts.values())[:5],
            diagnostics=diagnostics,
            timing={
                "wall_s": elapsed,
                "episodes_run": len(run.fresh),
                "episodes_resumed": len(run.done),
                "env_steps": run.turns,
                "policy_calls": executor.policy_calls,
                "workers": executor.workers,
                "episodes_per_s": len(run.fresh) / elapsed if elapsed > 0 else None,
            },
            version=__version__,
        )


def evaluate(
    policy: Any,
    env: str | Callable[[], gym.Env],
    settings: EvalSettings | None = None,
    **keywords: Any,
) -> EvalResult:
    """Measure the Pass@(K,T) surface of ``policy`` on ``env``.

    Call it with one :class:`EvalSettings` (``evaluate(policy, env, settings)``),
    or with its fields as keywords (``evaluate(policy, env, ks=[1], budgets=[5],
    tasks=20)``), which builds the settings for you.  The result and the run
    log store the settings as the evaluator resolved them.

    Attempt ``j`` at task ``i`` resets the env with ``seed=episode_seed(seed, i,
    j)`` and ``options={"task_id": i}``; the same seed serves every budget.  The
    evaluator adds a ``TurnBudget`` (unless the env has one) and, for a policy
    with ``required_info``, ``wrappers.ActionHints``.  Every ``info`` the policy
    sees carries ``episode_seed``.

    *Hidden budget* (the default): each attempt runs once at max(T) and its
    first success turn gives every T; ``info`` then carries no ``budget`` or
    ``turns_left``.  *Visible budget*: each T runs separately; chosen when
    ``visible_budget=True`` (or the policy declares ``visible_budget = True``:
    it reads the turns left in its observation), when the env stack has a
    visible ``TurnBudget``/``BudgetMix``, or when the policy is ``budget_aware``.

    The budget of the env stack is resolved by :func:`wrappers.budget.resolve_budget`:
    a ``TurnBudget`` or ``BudgetMix`` of yours in ``env`` is driven through
    ``reset(options={"budget": T})``, so the ``budgets`` grid sets every
    episode's budget and only its ``visible`` flag counts (a ``BudgetMix``
    draws nothing, and says so in a warning).  A stack with two of them, or
    with a ``TimeLimit`` below max(T), is refused: either would end episodes
    before T.

    Args:
        policy: an object with ``act(observation, info) -> str`` (and maybe
            ``act_batch``), a plain callable ``f(observation) -> str``, a class
            (one instance per episode) or a :class:`PerEpisode` factory.
        env: a registered id, or a callable that builds an env.
        settings: the :class:`EvalSettings`; or ``None`` and its fields as keywords.

    Returns:
        An :class:`EvalResult`.

    Raises:
        ValueError, TypeError: for bad arguments, with a one-line message.
        RunAborted: when the policy fails on too many episodes.

    Example:
        >>> from agent_envs.evaluation import EvalSettings, evaluate
        >>> always_50 = lambda observation: "50"  # a plain callable is a policy too
        >>> settings = EvalSettings(ks=[1], budgets=[3, 7], tasks=20, n_bootstrap=100)
        >>> result = evaluate(always_50, "agent_envs/GuessNumber-v0", settings)
        >>> result.settings is not settings, result.settings.mode, result.surface.shape
        (True, 'hidden', (1, 2))
    """
    started = time.perf_counter()
    if settings is None:
        settings = EvalSettings(**keywords)
    elif keywords:
        raise TypeError(
            f"pass the settings either as an EvalSettings or as keywords, not both "
            f"(got {sorted(keywords)} too)."
        )
    elif not isinstance(settings, EvalSettings):
        raise TypeError(f"settings must be an EvalSettings, got {type(settings).__name__}.")
    run = _Run(policy, env, settings)
    state, executor = run.play()
    return run.result(state, executor, time.perf_counter() - started)
