"""Play episodes: one at a time, or many in lockstep for ``act_batch`` policies.

Every episode is fixed by its :class:`EpisodeKey` alone (task, attempt, budget,
seed), so what an episode does never depends on which slot or batch played it
or in what order: the results are the same for every batch size.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agent_envs.core import normalize_action
from agent_envs.evaluation.episode_record import EpisodeRecord, clip_text
from agent_envs.evaluation.hidden_budget import hide_budget
from agent_envs.evaluation.keys import EpisodeKey
from agent_envs.evaluation.policies import (
    POLICY_ERRORS,
    PolicyAdapter,
    describe_error,
    safe_repr,
)
from agent_envs.evaluation.settings import VISIBLE, EvalSettings
from agent_envs.protocol import AgentAction
from wrappers.protocol import (
    BUDGET,
    DEAD_END,
    EPISODE_SEED,
    ORACLE_ACTIONS,
    SUCCESS,
    TASK_ID,
    VALID_ACTION,
    ActionParser,
)

__all__ = [
    "EpisodeRun",
    "Finish",
    "RunOptions",
    "plain_action",
    "run_lockstep",
    "run_sequential",
]


@dataclass(frozen=True)
class RunOptions:
    """How the episodes of one run are played and recorded.

    The evaluator derives them from its settings in one place,
    :meth:`for_settings`; step quality builds its own for reference rollouts.

    Attributes:
        diagnose: ask the oracle before every action (diagnostics).
        transcripts: keep every observation and action.
        hidden_budget: the run's set of the hidden budget keys its policy
            read (the first read warns), or ``None`` when the budget is visible.
        parsed_oracle: the run's cache of ``parse_action`` of oracle actions.
    """

    diagnose: bool = False
    transcripts: bool = False
    hidden_budget: set[str] | None = None
    parsed_oracle: dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def for_settings(cls, settings: EvalSettings) -> RunOptions:
        """Return the options a run with these (resolved) settings plays with."""
        # The budget owner keeps budget keys out of a hidden run's info; a policy
        # that asks for them anyway is told so once (see hidden_budget).
        reads = None if settings.mode == VISIBLE else set()
        return cls(settings.diagnostics, settings.transcripts, hidden_budget=reads)


class EpisodeRun:
    """The bookkeeping of one episode in progress (hot loop: keep it lean)."""

    __slots__ = (
        "_ceiling",
        "_cpu",
        "_distance",
        "_exact_oracle",
        "_oracle",
        "_parse",
        "_parsed_oracle",
        "_pending",
        "_started",
        "base",
        "budget_reads",
        "diagnose",
        "key",
        "record",
        "transcript",
    )

    def __init__(self, key: EpisodeKey, base: Any, options: RunOptions) -> None:
        self.key = key
        self.base = base
        self.diagnose = options.diagnose
        self.budget_reads = options.hidden_budget
        self.record = EpisodeRecord(key.task_id, key.sample, key.seed, key.budget)
        # Unparsable replies are counted wherever the env can parse, diagnostics or not.
        self._parse = base.parse_action if isinstance(base, ActionParser) else None
        if self._parse is not None:
            self.record.unparsable = 0
        if self.diagnose:
            self.record.judged = self.record.judged_valid = self.record.optimal = 0
            self.record.oracle_errors = []
        self.transcript: dict[str, Any] | None = {} if options.transcripts else None
        self._oracle: Sequence[str] = ()
        # oracle_turns() of the current state; in a deterministic env an
        # oracle move lowers it by exactly one, so it is asked for only after
        # other moves (an env that does not say it is deterministic is asked
        # after every valid move).
        self._distance: int | None = None
        self._exact_oracle = not getattr(base, "stochastic", True)
        # Unrecovered non-fatal errors: (oracle_turns() before, its record entry);
        # an error is recovered once oracle_turns() falls below its limit.
        self._pending: list[tuple[int, list[Any]]] = []
        self._ceiling = -1  # the largest limit among the pending errors
        self._parsed_oracle = options.parsed_oracle
        self._started = time.perf_counter()
        self._cpu = 0.0

    def charge(self, cpu_seconds: float) -> None:
        """Add CPU seconds spent on this episode."""
        self._cpu += cpu_seconds

    def close(self) -> EpisodeRecord:
        """Stop the episode's clocks and return its finished record."""
        self.record.wall_s = round(time.perf_counter() - self._started, 4)
        self.record.cpu_s = round(self._cpu, 4)
        self.record.ended_at = round(time.time(), 3)
        return self.record

    def policy_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """Return ``info`` as the policy may see it (no budget keys when it is hidden)."""
        info[EPISODE_SEED] = self.key.seed
        if self.budget_reads is None:
            return info
        return hide_budget(info, self.budget_reads)

    def reset(self, env: gym.Env) -> tuple[str, dict[str, Any]]:
        """Reset ``env`` to this episode and return the first observation and the policy's info."""
        key = self.key
        observation, info = env.reset(
            seed=key.seed, options={TASK_ID: key.task_id, BUDGET: key.budget}
        )
        if self.diagnose:
            self._distance = self.record.oracle_turns = self._oracle_turns()
        if self.transcript is not None:
            self.transcript.update(observation=clip_text(observation), steps=[])
        return observation, self.policy_info(info)

    def _oracle_turns(self) -> int | None:
        turns = self.base.oracle_turns()
        # int(): an env may answer with a numpy integer, which JSON refuses.
        return None if turns is None else int(turns)

    def before_act(self, info: dict[str, Any]) -> None:
        """Note the oracle's actions in the state the policy is about to act in."""
        if self.diagnose:
            # ActionHints already asked the oracle when the policy wanted it.
            oracle = dict.get(info, ORACLE_ACTIONS)
            self._oracle = self.base.oracle_actions() if oracle is None else oracle

    def after_step(self, action: str, observation: str, done: bool, info: dict[str, Any]) -> bool:
        """Account for one step; return whether the episode is over."""
        record = self.record
        record.turns += 1
        turn = record.turns
        tokens = getattr(action, "tokens_read", None)
        if tokens is not None:
            record.tokens_read = (record.tokens_read or 0) + tokens
        tokens = getattr(action, "tokens_generated", None)
        if tokens is not None:
            record.tokens_generated = (record.tokens_generated or 0) + tokens
        # .get: envs outside agent_envs may not report these contract keys.
        valid = info.get(VALID_ACTION, True)
        if valid:
            record.valid += 1
        else:
            record.invalid += 1
            if self._parse is not None and self._parse(action) is None:
                record.unparsable += 1
        if info[SUCCESS] and record.first_success_turn is None:
            record.first_success_turn = turn
            record.success = True
        if record.dead_end_turn is None and info.get(DEAD_END, False):
            record.dead_end_turn = turn
        if self.diagnose:
            self._judge(action, valid, turn, info[SUCCESS])
        if self.transcript is not None:
            step = {
                "action": clip_text(str(action)),
                "observation": clip_text(observation),
                "valid": valid,
            }
            raw = getattr(action, "raw", None)
            if raw is not None and raw != action:
                step["raw"] = clip_text(str(raw))
            self.transcript["steps"].append(step)
        return done

    def _judge(self, action: str, valid: bool, turn: int, success: bool) -> None:
        """Score the action against the oracle and follow the errors not yet recovered.

        Hot path (it runs on every step with diagnostics): keep it lean.
        """
        if not self._oracle:
            return  # success was out of reach before the action: nothing to judge
        record = self.record
        record.judged += 1
        before = self._distance
        error = False
        if not valid:
            # An invalid action is no error: it leaves the state (and distance) unchanged.
            if record.first_non_optimal_turn is None:
                record.first_non_optimal_turn = turn
        else:
            record.judged_valid += 1
            if action in self._oracle or self.is_oracle_move(action):
                record.optimal += 1
                if self._exact_oracle and before is not None:
                    self._distance = before - 1
                else:
                    self._distance = self.base.oracle_turns()
            else:
                if record.first_non_optimal_turn is None:
                    record.first_non_optimal_turn = turn
                self._distance = self.base.oracle_turns()
                error = not success  # a move that wins is no error, whoever names it
        distance = self._distance
        # Errors made before this turn are recovered by it when it ends in success
        # or strictly closer to the goal than its limit (see _add_error); this turn's own
        # error is added after, so it can only be recovered by a later turn.
        if self._pending and (success or (distance is not None and distance < self._ceiling)):
            self._settle(turn, success, distance)
        if error:
            self._add_error(turn, before, distance)

    def _add_error(self, turn: int, before: int | None, distance: int | None) -> None:
        """Record an error at ``turn``: fatal into a dead end, else pending recovery."""
        if distance is None:
            # Fatal; and nothing pending can be recovered in a dead end.
            self.record.oracle_errors.append([turn, None, True])
            return
        entry: list[Any] = [turn, None, False]
        self.record.oracle_errors.append(entry)
        # Recovered only by success or by ending strictly closer to the goal than
        # both before the error and right after it: an error that itself moved
        # closer (a non-bisecting guess inside the interval) is not then
        # "recovered" by a later wasted turn.  Without a distance before, only
        # success recovers it.
        limit = -1 if before is None else min(before, distance)
        self._pending.append((limit, entry))
        self._ceiling = max(self._ceiling, limit)

    def _settle(self, turn: int, success: bool, distance: int | None) -> None:
        """Mark recovered at ``turn`` the pending errors its state beats."""
        still, ceiling = [], -1
        for limit, entry in self._pending:
            if success or (distance is not None and distance < limit):
                entry[1] = turn
            else:
                still.append((limit, entry))
                ceiling = max(ceiling, limit)
        self._pending, self._ceiling = still, ceiling

    def is_oracle_move(self, action: str) -> bool:
        """Return whether ``action`` is one of the oracle's moves, however it is spelled.

        The oracle's moves are those of the state :meth:`before_act` last noted.
        """
        oracle = self._oracle
        if action in oracle:  # oracle actions are canonical, and so are many agents'
            return True
        # Envs accept several spellings of one move ("guess 50" for "50", "move
        # up" or "u" for "up"): compare what the env parses them to (a pure
        # function of the text, so the oracle's parses are cached for the run).
        # Envs without the ActionParser API are judged by the normalised text.
        parse = self._parse
        if parse is None:
            text = normalize_action(action)
            return any(text == normalize_action(move) for move in oracle)
        move = parse(action)
        if move is None:
            return False
        parsed = self._parsed_oracle
        for name in oracle:
            known = parsed.get(name)
            if known is None:
                known = parsed[name] = parse(name)
            if known == move:
                return True
        return False

    def fail(self, exc: BaseException) -> None:
        """Mark the episode as an error: it ends now and counts as a failure."""
        self.record.error = describe_error(exc)
        self.record.success = False
        self.record.first_success_turn = None


#: Called once per finished episode with its record and transcript (``None`` when off).
Finish = Callable[[EpisodeRecord, dict[str, Any] | None], None]


def plain_action(action: Any) -> str:
    """Return the policy's action as a plain ``str`` (an ``AgentAction`` keeps its raw text).

    A ``str`` subclass may override ``__hash__``, ``__eq__`` or ``__str__``,
    and raise in them; the env and the judge get a plain copy, made without
    calling any of its methods.  Token counts are kept when they are
    non-negative ``int``; anything else counts as not counted.  Raises
    ``TypeError`` for a non-str action.
    """
    if type(action) is str:
        return action
    if not isinstance(action, str):
        raise TypeError(
            f"the policy returned {type(action).__name__} {safe_repr(action)}, not a str"
        )
    raw = getattr(action, "raw", None)
    text = str.__str__(action)
    if not isinstance(raw, str):
        return text
    return AgentAction(
        text,
        str.__str__(raw),
        _token_count(getattr(action, "tokens_read", None)),
        _token_count(getattr(action, "tokens_generated", None)),
    )


def _token_count(value: Any) -> int | None:
    """Return ``value`` if it is a count of tokens (a non-negative ``int``), else ``None``."""
    return value if type(value) is int and value >= 0 else None


def run_sequential(
    adapter: PolicyAdapter,
    env: gym.Env,
    keys: Iterable[EpisodeKey],
    options: RunOptions,
    finish: Finish,
) -> None:
    """Play ``keys`` one after another on ``env``, calling ``finish`` after each."""
    base = env.unwrapped
    diagnose = options.diagnose
    for key in keys:
        cpu = time.process_time()
        run = EpisodeRun(key, base, options)
        # Reset first, so that an episode whose factory fails still records its
        # task's oracle horizon (diagnostics group episodes by it).
        observation, info = run.reset(env)
        try:
            act = adapter.episode_actor()
        except POLICY_ERRORS as exc:  # a failing factory is the policy's error
            run.fail(exc)
            run.charge(time.process_time() - cpu)
            finish(run.close(), run.transcript)
            continue
        while True:
            if diagnose:
                run.before_act(info)
            try:
                action = plain_action(act(observation, info))
            except POLICY_ERRORS as exc:  # the policy's error ends only this episode
                run.fail(exc)
                break
            observation, _, terminated, truncated, info = env.step(action)
            if run.after_step(action, observation, terminated or truncated, info):
                break
            info = run.policy_info(info)
        # One episode at a time: all of this process's CPU since its start was its own.
        run.charge(time.process_time() - cpu)
        finish(run.close(), run.transcript)


def run_lockstep(
    adapter: PolicyAdapter,
    envs: list[gym.Env],
    keys: Iterable[EpisodeKey],
    options: RunOptions,
    finish: Finish,
) -> None:
    """Play ``keys`` on ``len(envs)`` slots at once, one ``act_batch`` call per turn.

    A slot whose episode ends takes the next key at once, so every call is as
    full as the remaining work allows.  An exception in ``act_batch`` marks
    every episode of that call as an error.
    """
    pending: Iterator[EpisodeKey] = iter(keys)
    live: list[list[Any]] = []  # [env, run, observation, info]

    def refill(env: gym.Env) -> None:
        key = next(pending, None)
        if key is not None:
            cpu = time.process_time()
            run = EpisodeRun(key, env.unwrapped, options)
            live.append([env, run, *run.reset(env)])
            run.charge(time.process_time() - cpu)

    for env in envs:
        refill(env)
    while live:
        for slot in live:
            slot[1].before_act(slot[3])
        cpu = time.process_time()
        try:
            actions = adapter.act_batch([slot[2] for slot in live], [slot[3] for slot in live])
        except POLICY_ERRORS as exc:
            actions = [exc] * len(live)
        share = (time.process_time() - cpu) / len(live)
        still_live = []
        freed = []
        for slot, action in zip(live, actions, strict=True):
            env, run = slot[0], slot[1]
            cpu = time.process_time()
            try:
                if isinstance(action, BaseException):
                    raise action
                action = plain_action(action)
            except POLICY_ERRORS as exc:
                run.fail(exc)
                done = True
            else:
                observation, _, terminated, truncated, info = env.step(action)
                done = run.after_step(action, observation, terminated or truncated, info)
                slot[2], slot[3] = observation, run.policy_info(info)
            run.charge(share + time.process_time() - cpu)
            if done:
                finish(run.close(), run.transcript)
                freed.append(env)
            else:
                still_live.append(slot)
        live[:] = still_live
        for env in freed:
            refill(env)
