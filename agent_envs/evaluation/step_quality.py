"""Step quality: every policy judged on one shared, seeded set of reference states.

Decision quality is measured on the states a policy visits itself, so two
policies that go to different places are judged on different questions.
:func:`step_quality` fixes the questions: it replays seeded trajectories of a
reference policy (by default a noisy oracle, so that the set holds states just
after mistakes), hands the policy each chosen state with its exact history,
through the same env stack as ``evaluate``, and scores the one action it
returns against ``oracle_actions()``.  The state set depends only on the env,
the reference, ``tasks``, ``states_per_task``, ``max_turns`` and ``seed``, so
a study fixes ``seed`` per env and study, never per training seed: then every
regime and seed is judged on the same states and ``compare`` can difference
them.  States where the env leaves one legal move are drawn but not judged
(any masked policy plays them optimally), and their number is reported.

LLM agents that keep the dialogue.  A state is rebuilt by replaying the
reference's moves through the policy's own stack, so a ``ChatHistory`` holds
the reference's dialogue up to that state.  A policy that writes its moves in
a format of its own declares ``write_reply(action)``
(:class:`~agent_envs.protocol.ReplyWriter`; ``HFAgent``, ``LlamaCppAgent``
and ``OpenAIChatAgent`` do): each reference move is then stepped as
``AgentAction(action, raw=write_reply(action))``, so that with
``ChatHistory(record="raw")`` (the stack GRPO training plays) the agent reads
the reference's turns as the replies it would have written (``Action: 7`` in
the ``think`` format), with its own system prompt and few-shot examples, and
its prompt at a state is token for token the one it would have read had it
played those moves itself.  It is judged on the one move it then makes.

Cost. Every judged state is one fresh prompt and one reply: the states go to
the policy ``batch_size`` at a time, one ``act_batch`` call each
(``ceil(states / batch_size)`` calls), and nothing is played past the judged
move. For an LLM agent a state costs one prefill of the dialogue up to it (at
most ``max_turns`` exchanges plus the examples; ``HFAgent``'s prefix cache may
spare a prefix that another state already computed, such as the examples) and
at most ``max_new_tokens`` generated tokens; a call costs, per micro-batch of
the agent's own ``batch_size``, one prefill and at most ``max_new_tokens``
decoding passes. So ``tasks x states_per_task`` states cost about as much as
that many single turns of evaluation, far less than the episodes of the
Pass@(K,T) grid (``docs/evaluation.md`` gives measured figures).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

from agent_envs.evaluation.episode_record import EpisodeRecord
from agent_envs.evaluation.keys import EpisodeKey
from agent_envs.evaluation.policies import POLICY_ERRORS, PolicyAdapter, adapt_policy
from agent_envs.evaluation.reference import NoisyOracleAgent
from agent_envs.evaluation.rollout import EpisodeRun, RunOptions, plain_action, run_sequential
from agent_envs.evaluation.settings import VISIBLE, EvalSettings
from agent_envs.evaluation.stack import RunSetup, policy_stack
from agent_envs.protocol import AgentAction
from wrappers.protocol import VALID_ACTION, AdmissibleActions
from wrappers.utils import seeding
from wrappers.utils.validators import check_int

__all__ = ["judge_steps", "step_quality"]


def _reference_states(
    reference: PolicyAdapter, env: gym.Env, task: int, settings: EvalSettings
) -> list[tuple[int, tuple[str, ...], bool]]:
    """Return the chosen states of one task as ``(episode seed, actions so far, after a mistake)``.

    Reference attempts ``0, 1, ...`` at the task are played until they hold
    ``settings.step_quality`` solvable states (at most that many attempts);
    the states are then drawn without replacement.
    """
    wanted, max_turns = settings.step_quality, max(settings.budgets)
    options = RunOptions(diagnose=True, transcripts=True)
    candidates: list[tuple[int, tuple[str, ...], bool]] = []
    finished: list[tuple[EpisodeRecord, dict[str, Any] | None]] = []
    for attempt in range(wanted):
        key = EpisodeKey.attempt(settings.step_quality_seed, task, attempt, max_turns)
        run_sequential(reference, env, [key], options, lambda *done: finished.append(done))
        record, transcript = finished[-1]
        if record.error is not None:
            raise RuntimeError(f"the reference policy failed: {record.error}")
        candidates += _candidates(key.seed, record, transcript["steps"])
        if len(candidates) >= wanted:
            break
    rng = seeding.stream(seeding.STEP_QUALITY_STATES, settings.step_quality_seed, task)
    picks = rng.choice(len(candidates), size=min(wanted, len(candidates)), replace=False)
    return [candidates[index] for index in sorted(picks)]


def _candidates(
    seed: int, record: EpisodeRecord, steps: list[dict[str, Any]]
) -> list[tuple[int, tuple[str, ...], bool]]:
    """Return the solvable states of one reference episode, each marked if after a mistake."""
    errors = {turn for turn, _, _ in record.oracle_errors}
    solvable = len(steps) if record.dead_end_turn is None else record.dead_end_turn
    states, off_path = [], False
    for turn in range(min(solvable, len(steps))):
        # The state before action turn + 1, reached by the first `turn` actions.
        states.append((seed, tuple(step["action"] for step in steps[:turn]), off_path))
        if steps[turn]["valid"]:
            off_path = turn + 1 in errors
    return states


def step_quality(
    policy: Any,
    env: str | Callable[[], gym.Env],
    *,
    tasks: int | Sequence[int],
    states_per_task: int,
    reference: Any = None,
    seed: int = 0,
    max_turns: int = 50,
    visible_budget: bool = False,
    batch_size: int | None = None,
) -> dict[str, Any]:
    """Judge ``policy`` on a fixed, seeded set of reference states; return a JSON-ready dict.

    For each task, up to ``states_per_task`` states where success is still
    reachable are drawn from reference trajectories (attempt ``j`` uses
    ``episode_seed(seed, task, j)``, under a hidden budget of ``max_turns``).
    Each state is rebuilt by replaying its actions through the stack
    ``evaluate`` would build for ``policy`` (so ``ChatHistory`` holds the same
    messages); the policy acts once, and its action is judged against
    ``oracle_actions()`` of that state, and stepped only to learn whether the
    env takes it as valid.  A policy that raises counts as invalid there.
    Results do not depend on ``batch_size``.

    Args:
        policy: any policy ``evaluate`` accepts.
        env: a registered id, or a callable that builds an env with an oracle.
        tasks: a count or a list of task ids.
        states_per_task: states drawn per task (>= 1).
        reference: the policy whose trajectories give the states; default
            :class:`~agent_envs.evaluation.reference.NoisyOracleAgent` with
            ``epsilon=0.3``.
        seed: seeds the reference attempts and the draw of the states.
        max_turns: the budget of the reference attempts.
        visible_budget: show the policy the turns left, as in ``evaluate``.
        batch_size: states per ``act_batch`` call (default 64).

    Returns:
        ``optimal_rate`` (optimal actions / states judged), ``states`` (judged),
        ``single_move_states_excluded`` (drawn states with one legal move,
        left out of every rate), ``recovery_optimal_rate``
        and ``on_path_optimal_rate`` (the same over *recovery states*, those
        whose last valid reference action was an error, and over the others),
        ``invalid_rate``, the state counts, ``privileged_oracle``, the
        ``state_set`` that identifies the states, and ``per_task`` rows
        ``[task, states, optimal, invalid, recovery states, recovery optimal]``.

    Example:
        >>> from agent_envs.evaluation import NoisyOracleAgent, step_quality
        >>> oracle = NoisyOracleAgent(epsilon=0.0)
        >>> step_quality(oracle, "agent_envs/Sokoban-v0", tasks=2, states_per_task=3)["states"]
        6
    """
    check_int(states_per_task, "states_per_task", 1)
    check_int(max_turns, "max_turns", 1)
    grid = dict(ks=(1,), budgets=(max_turns,), tasks=tasks, step_quality=states_per_task)
    settings = EvalSettings(
        **grid, step_quality_seed=seed, visible_budget=visible_budget, batch_size=batch_size
    )
    return judge_steps(RunSetup.resolve(policy, env, settings), reference)


def judge_steps(setup: RunSetup, reference: Any = None) -> dict[str, Any]:
    """Judge a resolved run's policy on its reference states, through the run's own stack.

    ``setup.settings.step_quality`` states per task, drawn as
    :func:`step_quality` describes with ``settings.step_quality_seed`` (the
    study's seed, never the episodes' ``seed``, so every training seed meets
    the same states); the reference (default ``NoisyOracleAgent(epsilon=0.3)``)
    plays under a hidden budget of max(T), and the policy acts in
    ``settings.batch_size`` slots.
    """
    settings, adapter = setup.settings, setup.adapter
    if not setup.has_oracle:
        raise ValueError(f"step quality needs an env with an oracle; {settings.env_name} has none.")
    # A noisy default reference, so that the states include some just after mistakes.
    guide = adapt_policy(NoisyOracleAgent(epsilon=0.3) if reference is None else reference)
    guide_env = policy_stack(setup.stack, guide.required_info, visible=False).build()
    states = [
        (task, *state)
        for task in settings.tasks
        for state in _reference_states(guide, guide_env, task, settings)
    ]
    slots = settings.batch_size
    envs = [setup.probe] + [setup.play.build() for _ in range(slots - 1)]
    options = RunOptions(diagnose=True, hidden_budget=None if settings.mode == VISIBLE else set())
    max_budget = max(settings.budgets)
    outcomes: list[tuple[bool, bool] | None] = []
    for start in range(0, len(states), slots):
        outcomes += _judge(adapter, envs, states[start : start + slots], max_budget, options)
    return _summary(
        states,
        outcomes,
        privileged=bool(getattr(setup.probe.unwrapped, "privileged_oracle", False)),
        state_set={
            "reference": guide.name,
            "tasks": list(settings.tasks),
            "states_per_task": settings.step_quality,
            "max_turns": max_budget,
            "seed": settings.step_quality_seed,
            "excluded": "single legal move",
        },
        policy=adapter.name,
    )


def _judge(
    adapter: PolicyAdapter,
    envs: list[gym.Env],
    chunk: list[Any],
    max_turns: int,
    options: RunOptions,
) -> list[tuple[bool, bool] | None]:
    """Replay each state of ``chunk`` on its slot, act once; return (optimal, invalid) per state.

    A state where the env leaves one legal move (``admissible_actions()``, the
    mask of discrete-action agents) gets ``None``: any masked policy plays it
    optimally, so it says nothing about the policy's steps.
    """
    runs, observations, infos = [], [], []
    for env_, (task, episode, actions, _) in zip(envs, chunk, strict=False):
        run = EpisodeRun(EpisodeKey(task, 0, max_turns, episode), env_.unwrapped, options)
        observation, info = run.reset(env_)
        for action in actions:
            observation, _, _, _, info = env_.step(_as_written(adapter, action))
            info = run.policy_info(info)
        run.before_act(info)
        base = env_.unwrapped
        forced = isinstance(base, AdmissibleActions) and len(base.admissible_actions()) == 1
        runs.append(None if forced else run)
        if not forced:
            observations.append(observation)
            infos.append(info)
    actions = iter(_act(adapter, observations, infos) if observations else [])
    outcomes: list[tuple[bool, bool] | None] = []
    for env_, run in zip(envs, runs, strict=False):
        if run is None:
            outcomes.append(None)
            continue
        try:
            action = plain_action(next(actions))
        except POLICY_ERRORS:  # an exception in its slot, or no usable str
            outcomes.append((False, True))
            continue
        _, _, _, _, info = env_.step(action)
        valid = bool(info.get(VALID_ACTION, True))
        outcomes.append((valid and run.is_oracle_move(action), not valid))
    return outcomes


def _as_written(adapter: PolicyAdapter, action: str) -> str:
    """Return a reference move as the policy's own reply would play it.

    A dialogue-keeping agent (``ChatHistory(record="raw")``) then reads the
    reference's turns as replies in its own format, as if it had written
    them; the env parses the same action either way.
    """
    if adapter.write_reply is str:
        return action
    reply = adapter.write_reply(action)
    if not isinstance(reply, str):
        raise TypeError(f"{adapter.name}.write_reply returned {type(reply).__name__}, not a str.")
    return AgentAction(action, raw=reply)


def _act(adapter: Any, observations: list[str], infos: list[dict[str, Any]]) -> list[Any]:
    """Return one action (or the exception it raised) per state."""
    if adapter.batched:
        try:
            return adapter.act_batch(observations, infos)
        except POLICY_ERRORS as exc:  # the policy's error counts as an invalid action
            return [exc] * len(observations)
    actions: list[Any] = []
    for observation, info in zip(observations, infos, strict=True):
        try:
            actions.append(adapter.episode_actor()(observation, info))
        except POLICY_ERRORS as exc:
            actions.append(exc)
    return actions


def _rate(hits: int, total: int) -> float | None:
    return hits / total if total else None


def _summary(
    states: list[tuple[int, int, tuple[str, ...], bool]],
    outcomes: list[tuple[bool, bool] | None],
    *,
    privileged: bool,
    state_set: dict[str, Any],
    policy: str,
) -> dict[str, Any]:
    rows: dict[int, list[int]] = {}
    excluded = 0
    for (task, _, _, recovery), outcome in zip(states, outcomes, strict=True):
        if outcome is None:  # one legal move: excluded
            excluded += 1
            continue
        optimal, invalid = outcome
        row = rows.setdefault(task, [task, 0, 0, 0, 0, 0])
        row[1] += 1
        row[2] += optimal
        row[3] += invalid
        row[4] += recovery
        row[5] += recovery and optimal
    total, optimal, invalid, recovery, recovery_optimal = (
        sum(row[i] for row in rows.values()) for i in range(1, 6)
    )
    return {
        "policy": policy,
        "states": total,
        "single_move_states_excluded": excluded,
        "optimal_rate": _rate(optimal, total),
        "recovery_states": recovery,
        "recovery_optimal_rate": _rate(recovery_optimal, recovery),
        "on_path_states": total - recovery,
        "on_path_optimal_rate": _rate(optimal - recovery_optimal, total - recovery),
        "invalid_rate": _rate(invalid, total),
        "privileged_oracle": privileged,
        "state_set": state_set,
        "per_task": [rows[task] for task in sorted(rows)],
    }
