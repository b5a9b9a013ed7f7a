"""evaluate(): measure any policy's Pass@(K,T) surface on any registered env.

A run has three phases, in this order: :func:`_play` plays the episodes the
log does not hold yet, :func:`_judge` judges step quality on the shared
reference states (when asked), and :func:`_count` turns the finished episodes
into the surface, its interval and the diagnostics, without playing anything.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from agent_envs import __version__
from agent_envs.evaluation.diagnostics import summarize
from agent_envs.evaluation.episode_record import EpisodeRecord
from agent_envs.evaluation.executor import EpisodeExecutor, LocalExecutor
from agent_envs.evaluation.result import EvalResult
from agent_envs.evaluation.rollout import RunOptions
from agent_envs.evaluation.session import RunState
from agent_envs.evaluation.settings import HIDDEN, VISIBLE, EvalSettings
from agent_envs.evaluation.stack import RunSetup
from agent_envs.evaluation.step_quality import judge_steps

__all__ = ["evaluate"]


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


def _executor(setup: RunSetup) -> EpisodeExecutor:
    """Return what plays the episodes: this process, or Ray actors (imported only then)."""
    settings = setup.settings
    options = RunOptions.for_settings(settings)
    if settings.backend == "local":
        return LocalExecutor(
            setup.adapter, setup.play.build, options, settings.batch_size, [setup.probe]
        )
    from agent_envs.evaluation.ray_backend import RayExecutor

    return RayExecutor(settings, setup.policy, setup.play, options, setup.adapter.batched)


def _play(setup: RunSetup, started: float) -> tuple[RunState, EpisodeExecutor, float]:
    """Play every episode the log does not hold yet; return the bookkeeping and the run's time.

    The time runs from ``started`` to the end of play: step quality, judged
    after it, is not part of the run's time.
    """
    executor = _executor(setup)  # refuses an unpicklable policy before the log opens
    run = RunState(setup.settings, turns=lambda: executor.turns)
    with run:
        executor.run(run.todo, run.finish)
    return run, executor, time.perf_counter() - started


def _judge(setup: RunSetup) -> dict[str, Any] | None:
    """Judge the policy's steps on the shared reference states, if the settings ask for it.

    A phase of its own, after play and before counting: it plays the reference
    policy and asks the policy for actions again, and none of that belongs to
    the run's episodes, its timing or its counts.
    """
    if setup.settings.step_quality and setup.has_oracle:
        return judge_steps(setup)
    return None


def _count(
    setup: RunSetup,
    run: RunState,
    executor: EpisodeExecutor,
    elapsed: float,
    step_quality: dict[str, Any] | None,
) -> EvalResult:
    """Count the finished episodes into the surface, its interval and the diagnostics."""
    settings = setup.settings
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
        settings.mode == VISIBLE,
        settings.diagnostics,
        privileged=bool(getattr(setup.probe.unwrapped, "privileged_oracle", False)),
    )
    timing = {
        "wall_s": elapsed,
        "episodes_run": len(run.fresh),
        "episodes_resumed": len(run.done),
        "env_steps": run.turns,
        "policy_calls": executor.policy_calls,
        "workers": executor.workers,
        "episodes_per_s": len(run.fresh) / elapsed if elapsed > 0 else None,
    }
    if step_quality is not None:
        diagnostics["step_quality"] = step_quality
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
        timing=timing,
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

    With a hidden budget (the default) each attempt runs once at max(T) and
    its first success turn gives every T; with a visible one (``visible_budget``,
    declared by the policy, or a visible ``TurnBudget`` in ``env``) each T runs
    separately.  ``docs/evaluation.md`` says how a budget already in ``env`` is
    driven, and which stacks are refused.

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
        OSError: when the run log cannot be opened or written, or another
            run holds it (:class:`RunLogLocked`).

    Example:
        >>> from agent_envs.evaluation import EvalSettings, evaluate
        >>> always_50 = lambda observation: "50"  # a plain callable is a policy too
        >>> settings = EvalSettings(ks=[1], budgets=[3, 7], tasks=20, n_bootstrap=100)
        >>> result = evaluate(always_50, "agent_envs/GuessNumber-v0", settings)
        >>> result.settings is not settings, result.settings.mode, result.surface.shape
        (True, 'hidden', (1, 2))
    """
    started = time.perf_counter()
    settings = _settings(settings, keywords)
    setup = RunSetup.resolve(policy, env, settings)
    state, executor, elapsed = _play(setup, started)
    return _count(setup, state, executor, elapsed, _judge(setup))


def _settings(settings: EvalSettings | None, keywords: dict[str, Any]) -> EvalSettings:
    """Return ``evaluate``'s settings: the object given, or one built from the keywords."""
    if settings is None:
        return EvalSettings(**keywords)
    if keywords:
        raise TypeError(
            f"pass the settings either as an EvalSettings or as keywords, not both "
            f"(got {sorted(keywords)} too)."
        )
    if not isinstance(settings, EvalSettings):
        raise TypeError(f"settings must be an EvalSettings, got {type(settings).__name__}.")
    return settings
