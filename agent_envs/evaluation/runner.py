"""evaluate(): measure any policy's Pass@(K,T) surface on any registered env."""

from __future__ import annotations

import difflib
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from agent_envs import __version__
from agent_envs.evaluation.diagnostics import summarize
from agent_envs.evaluation.hidden_budget import BudgetReads
from agent_envs.evaluation.policies import adapt_policy
from agent_envs.evaluation.result import EvalResult
from agent_envs.evaluation.rollout import (
    EpisodeRecord,
    RunOptions,
    run_lockstep,
    run_sequential,
)
from agent_envs.evaluation.session import RunState
from agent_envs.evaluation.settings import HIDDEN, VISIBLE, EvalSettings, check_tasks
from agent_envs.protocol import ADMISSIBLE_ACTIONS, BUDGET, ORACLE_ACTIONS, SUCCESS, TASK_ID
from wrappers import ActionHints, TurnBudget
from wrappers.budget import StackBudget, resolve_budget
from wrappers.validators import (
    check_bool,
    check_grid,
    check_int,
    check_number,
    check_probability,
)

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
        return (lambda: gym.make(env_id)), env_name or env_id
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
            env, admissible=ADMISSIBLE_ACTIONS in wants, oracle=ORACLE_ACTIONS in wants
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


def _success_counts(settings: EvalSettings, records: Sequence[EpisodeRecord]) -> np.ndarray:
    """Return c[task, T]: attempts that succeeded within each budget."""
    row = {task: index for index, task in enumerate(settings.task_ids)}
    column = {budget: index for index, budget in enumerate(settings.budgets)}
    budgets = np.array(settings.budgets)
    counts = np.zeros((len(settings.task_ids), len(settings.budgets)), dtype=np.int64)
    for record in records:
        if record.first_success_turn is None:
            continue
        if settings.mode == HIDDEN:
            counts[row[record.task_id]] += record.first_success_turn <= budgets
        else:
            counts[row[record.task_id], column[record.budget]] += 1
    return counts


def _check_options(
    visible_budget: Any, diagnostics: Any, max_error_rate: Any, n_bootstrap: Any, confidence: Any
) -> None:
    check_bool(visible_budget, "visible_budget")
    check_bool(diagnostics, "diagnostics")
    check_probability(max_error_rate, "max_error_rate")
    check_number(confidence, "confidence", 0.0, 1.0, open_low=True)
    if confidence == 1:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}.")
    check_int(n_bootstrap, "n_bootstrap", 1)


def evaluate(
    policy: Any,
    env: str | Callable[[], gym.Env],
    *,
    ks: Sequence[int],
    budgets: Sequence[int],
    tasks: int | Sequence[int],
    samples: int | None = None,
    seed: int = 0,
    visible_budget: bool = False,
    diagnostics: bool = True,
    batch_size: int | None = None,
    log_path: str | os.PathLike[str] | None = None,
    transcripts: bool = False,
    retry_errors: bool = False,
    max_error_rate: float = 0.2,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    progress: bool = False,
    agent_name: str | None = None,
    env_name: str | None = None,
    step_quality: int = 0,
) -> EvalResult:
    """Measure the Pass@(K,T) surface of ``policy`` on ``env``.

    Attempt ``j`` at task ``i`` resets the env with ``seed=episode_seed(seed, i,
    j)`` and ``options={"task_id": i}``; the same seed serves every budget.  The
    evaluator adds a ``TurnBudget`` (unless the env has one) and, for a policy
    with ``required_info``, ``wrappers.ActionHints``.  Every ``info`` the policy
    sees carries ``episode_seed``.

    *Hidden budget* (the default): each attempt runs once at max(T) and its
    first success turn gives every T.  *Visible budget*: each T runs
    separately; chosen when ``visible_budget=True``, when the env stack has a
    visible ``TurnBudget``/``BudgetMix``, or when the policy is ``budget_aware``.

    A ``TurnBudget`` or ``BudgetMix`` of yours in ``env`` is driven through
    ``reset(options={"budget": T})``: the ``budgets`` grid sets every episode's
    budget, whatever ``max_turns`` or ``budgets`` it was built with (a
    ``BudgetMix`` draws nothing), and only its ``visible`` flag counts.  A stack
    with two of them, or with a ``TimeLimit`` below max(T), is refused: either
    would end episodes before T.

    Args:
        policy: an object with ``act(observation, info) -> str`` (and maybe
            ``act_batch``), a plain callable ``f(observation) -> str``, a class
            (one instance per episode) or a :class:`PerEpisode` factory.
        env: a registered id, or a callable that builds an env.
        ks: the K grid (attempts); every K must be at most ``samples``.
        budgets: the T grid (turns), ints >= 1.
        tasks: a count (task ids ``0..tasks-1``) or a list of task ids.
        samples: attempts per task (n); defaults to max(K).
        seed: base seed (int >= 0) of the episodes and of the bootstrap.
        visible_budget: show the turns left in every observation.
        diagnostics: compute the oracle diagnostics when the env has an oracle
            (they cost oracle calls on every step).
        batch_size: episodes in lockstep for a policy with ``act_batch``
            (default 64); results do not depend on it.
        log_path: a JSONL run log; a rerun with the same path resumes it.
        transcripts: also log every observation and action (needs ``log_path``).
        retry_errors: on resume, rerun the episodes that ended in an error.
        max_error_rate: stop with :class:`RunAborted` when more than this
            share of this run's episodes (and at least 5) raised in the policy.
        n_bootstrap, confidence: the bootstrap interval over tasks.
        progress: show a tqdm progress bar (if tqdm is installed).
        agent_name, env_name: names to record instead of the derived ones.
        step_quality: also judge the policy on this many shared reference
            states per task (``diagnostics["step_quality"]``, see
            :func:`~agent_envs.evaluation.step_quality`); 0 (default) skips it.
            Needs the oracle; the states are seeded by ``seed``.

    Returns:
        An :class:`EvalResult`.

    Raises:
        ValueError, TypeError: for bad arguments, with a one-line message.
        RunAborted: when the policy fails on too many episodes.

    Example:
        >>> from agent_envs.evaluation import evaluate
        >>> from baselines.simple_agents import OracleAgent
        >>> result = evaluate(OracleAgent(), "agent_envs/GuessNumber-v0",
        ...                   ks=[1], budgets=[3, 7], tasks=20, n_bootstrap=100)
        >>> result.pass_at(1, 7)
        1.0
    """
    started = time.perf_counter()
    ks = check_grid(ks, "ks (K)")
    budget_grid = check_grid(budgets, "budgets (T)")
    task_ids = check_tasks(tasks)
    _check_options(visible_budget, diagnostics, max_error_rate, n_bootstrap, confidence)
    check_int(step_quality, "step_quality", 0)
    if transcripts and log_path is None:
        raise ValueError("transcripts are written to the run log: pass log_path as well.")
    adapter = adapt_policy(policy)
    make_env, name = resolve_env(env, env_name)
    if batch_size is None:
        batch_size = DEFAULT_BATCH_SIZE if adapter.batched else 1
    else:
        batch_size = check_int(batch_size, "batch_size", 1)

    wants = adapter.required_info
    probe, probe_budget = build_stack(make_env, max(budget_grid), visible_budget, wants, _GRID)
    name = name or _env_name(probe.unwrapped)
    visible = visible_budget or adapter.budget_aware or probe_budget.visible
    # Hidden: episodes run at max(T), a budget the policy must not see.
    probe_budget.report(visible)

    def build() -> gym.Env:
        env, budget = build_stack(make_env, max(budget_grid), visible_budget, wants)
        budget.report(visible)
        return env

    has_oracle = _probe(probe, task_ids[0], max(budget_grid), name)
    if diagnostics and not has_oracle:
        logger.info("%s has no oracle: diagnostics limited to invalid actions and dead ends.", name)
    settings = EvalSettings.build(
        env=name,
        wrappers=describe_wrappers(probe),
        agent=agent_name or adapter.name,
        ks=ks,
        budgets=budget_grid,
        tasks=task_ids,
        samples=samples,
        seed=seed,
        mode=VISIBLE if visible else HIDDEN,
        visible_budget=visible_budget,
        diagnostics=diagnostics and has_oracle,
    )
    run = RunState(settings, log_path, retry_errors, max_error_rate, progress)
    # The budget owner keeps budget keys out of a hidden run's info; a policy
    # that asks for them anyway is told so once (see hidden_budget).
    options = RunOptions(
        settings.diagnostics, transcripts, hidden_budget=None if visible else BudgetReads()
    )
    with run:
        if adapter.batched:
            slots = min(batch_size, max(len(run.todo), 1))
            envs = [probe] + [build() for _ in range(slots - 1)]
            run_lockstep(adapter, envs, run.todo, options, run.finish)
        else:
            run_sequential(adapter, probe, run.todo, options, run.finish)
    records = run.records()
    diagnosed = summarize(
        records,
        settings.budgets,
        settings.mode,
        settings.diagnostics,
        privileged=bool(getattr(probe.unwrapped, "privileged_oracle", False)),
    )
    if step_quality and has_oracle:
        # Imported here: step_quality builds its stacks with this module's build_stack.
        from agent_envs.evaluation.step_quality import step_quality as judge_steps

        diagnosed["step_quality"] = judge_steps(
            policy,
            env,
            tasks=task_ids,
            states_per_task=step_quality,
            seed=seed,
            max_turns=max(budget_grid),
            visible_budget=visible_budget,
            batch_size=batch_size,
        )
    counts = _success_counts(settings, records)
    values = EvalResult.per_task(settings.samples, counts, ks)
    surface, low, high = EvalResult.surface_and_interval(values, n_bootstrap, seed, confidence)
    errors = [record.error for record in records if record.error is not None]
    error_counts = Counter(errors)  # in first-seen order
    elapsed = time.perf_counter() - started
    return EvalResult(
        env_id=name,
        agent=settings.agent,
        mode=settings.mode,
        ks=list(ks),
        budgets=list(settings.budgets),
        task_ids=list(settings.task_ids),
        samples=settings.samples,
        seed=settings.seed,
        surface=surface,
        ci_low=low,
        ci_high=high,
        success_counts=counts,
        confidence=confidence,
        n_bootstrap=n_bootstrap,
        episodes=len(records),
        errors=len(errors),
        error_examples=list(error_counts)[:5],
        error_counts=list(error_counts.values())[:5],
        diagnostics=diagnosed,
        settings={
            "wrappers": list(settings.wrappers),
            "visible_budget": visible_budget,
            "diagnostics": settings.diagnostics,
            "step_quality": step_quality if has_oracle else 0,
            "batch_size": batch_size if adapter.batched else 1,
            "max_error_rate": max_error_rate,
        },
        timing={
            "wall_s": elapsed,
            "episodes_run": len(run.fresh),
            "episodes_resumed": len(run.done),
            "env_steps": run.turns,
            "policy_calls": adapter.calls,
            "episodes_per_s": len(run.fresh) / elapsed if elapsed > 0 else None,
        },
        version=__version__,
    )
