"""Diagnostics: why a policy fails, beyond whether it succeeds.

They separate "better single steps" from "better recovery" (see
``docs/evaluation.md``).  Every figure comes from the per-episode counts in
:class:`~agent_envs.evaluation.episode_record.EpisodeRecord`, so a resumed run gives
the same diagnostics as an uninterrupted one.

Always computed (free, from ``info``):
    ``invalid_action_rate``, ``unparsable_rate`` (the share of turns whose
    text the env's ``parse_action`` cannot read: not an action at all, as
    opposed to a move the state forbids; ``None`` for envs without
    ``parse_action``), ``dead_end_rate`` (per T).
With the oracle (``diagnostics=True`` and an env with ``oracle_actions()``):
    ``decision_quality``, ``decision_quality_valid``, ``error_recovery`` (per
    T), ``success_after_error`` (per T), ``by_horizon``, ``turns`` and
    ``privileged_oracle``.

Per-T figures read each T off the episodes that serve it.  The others
(``invalid_action_rate``, ``unparsable_rate``, ``decision_quality``,
``turns``) count the episodes played at max(T): every episode in hidden mode,
the max(T) runs in visible mode.  Pooling every T's runs instead would count the early turns of an
attempt once per T, so that the figures would depend on the T grid and differ
between the modes for the same budget-unaware policy.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from agent_envs.evaluation.episode_record import EpisodeRecord

__all__ = ["error_recovery", "summarize"]


def _rate(hits: int, total: int) -> float | None:
    return hits / total if total else None


def _within(turn: int | None, budget: int) -> bool:
    return turn is not None and turn <= budget


def _per_budget(
    records: Sequence[EpisodeRecord], budgets: Sequence[int], visible_budget: bool
) -> list[tuple[int, list[EpisodeRecord]]]:
    # Hidden budget: every episode ran at max(T) and is read at each T.
    # Visible budget: each T has its own episodes.
    if not visible_budget:
        return [(budget, list(records)) for budget in budgets]
    return [(budget, [r for r in records if r.budget == budget]) for budget in budgets]


def summarize(
    records: Sequence[EpisodeRecord],
    budgets: Sequence[int],
    visible_budget: bool,
    oracle: bool,
    privileged: bool = False,
) -> dict[str, Any]:
    """Return the diagnostics of ``records`` as a JSON-ready dict.

    Args:
        records: every episode of the run.
        budgets: the T grid.
        visible_budget: whether the policy saw the budget (the run's ``mode``
            is ``"visible"``): each T then has its own episodes.
        oracle: whether the records carry the oracle counts.
        privileged: the env's oracle sees what the agent cannot (recorded as
            ``privileged_oracle``, with the oracle figures).

    Returns:
        A dict with the keys described in the module docstring; per-T values
        are lists aligned with ``budgets``; a rate with nothing to count is
        ``None``.
    """
    per_budget = _per_budget(records, budgets, visible_budget)
    # The episodes played at max(T) (see the module docstring).
    longest = max(per_budget, key=lambda item: item[0])[1]
    turns = sum(r.turns for r in longest)
    result: dict[str, Any] = {
        "invalid_action_rate": _rate(sum(r.invalid for r in longest), turns),
        "unparsable_rate": _unparsable_rate(longest),
        "dead_end_rate": [
            _rate(sum(_within(r.dead_end_turn, t) for r in group), len(group))
            for t, group in per_budget
        ],
    }
    if not oracle:
        return result
    optimal = sum(r.optimal or 0 for r in longest)
    result["decision_quality"] = _rate(optimal, sum(r.judged or 0 for r in longest))
    result["decision_quality_valid"] = _rate(optimal, sum(r.judged_valid or 0 for r in longest))
    result["privileged_oracle"] = privileged
    result["error_recovery"] = [error_recovery(group, t) for t, group in per_budget]
    after_error = []
    for t, group in per_budget:
        erred = [r for r in group if _within(r.first_non_optimal_turn, t)]
        solved = sum(_within(r.first_success_turn, t) for r in erred)
        after_error.append({"episodes": len(erred), "success_rate": _rate(solved, len(erred))})
    result["success_after_error"] = after_error
    result["by_horizon"] = _by_horizon(per_budget)
    result["turns"] = _turns(longest)
    return result


def _unparsable_rate(records: Sequence[EpisodeRecord]) -> float | None:
    """Return unparsable turns over all turns, of the episodes that counted them."""
    counted = [r for r in records if r.unparsable is not None]
    return _rate(sum(r.unparsable for r in counted), sum(r.turns for r in counted))


def error_recovery(records: Sequence[EpisodeRecord], budget: int) -> dict[str, Any]:
    """Return the per-error recovery of ``records`` within ``budget`` turns.

    Counts the errors made by turn ``budget`` (see ``EpisodeRecord.oracle_errors``):
    ``fatal`` ones entered a dead end, the others are ``recoverable``, and
    ``recovered`` those that a later turn, by turn ``budget``, brought strictly
    closer to the goal than both before and right after the error (or
    solved): a wasted turn, which gains no ground, is not a recovery, even
    after an error that itself moved closer.  ``rate`` is recovered / recoverable and
    ``mean_turns_to_recover`` the mean of (recovery turn - error turn) over
    the recovered ones.
    """
    errors = fatal = 0
    delays = []
    for record in records:
        for turn, recovered, dead in record.oracle_errors or ():
            if turn > budget:
                continue
            errors += 1
            fatal += bool(dead)
            if recovered is not None and recovered <= budget:
                delays.append(recovered - turn)
    recoverable = errors - fatal
    return {
        "errors": errors,
        "fatal": fatal,
        "recoverable": recoverable,
        "recovered": len(delays),
        "rate": _rate(len(delays), recoverable),
        "mean_turns_to_recover": sum(delays) / len(delays) if delays else None,
    }


def _by_horizon(per_budget: list[tuple[int, list[EpisodeRecord]]]) -> dict[str, Any]:
    """Success rate per T, split by the task's initial ``oracle_turns()``."""
    horizons: dict[str, dict[str, Any]] = {}
    keys = sorted(
        {r.oracle_turns for _, group in per_budget for r in group},
        key=lambda h: (h is None, h or 0),
    )
    for horizon in keys:
        name = "unreachable" if horizon is None else str(horizon)
        rates, tasks = [], set()
        for t, group in per_budget:
            members = [r for r in group if r.oracle_turns == horizon]
            tasks.update(r.task_id for r in members)
            rates.append(
                _rate(sum(_within(r.first_success_turn, t) for r in members), len(members))
            )
        horizons[name] = {"tasks": len(tasks), "success_rate": rates}
    return horizons


def _turns(records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """Mean turns to success against the oracle's turns, over successful episodes."""
    solved = [r for r in records if r.success and r.oracle_turns]
    if not solved:
        return {"episodes": 0, "mean_turns": None, "mean_oracle_turns": None, "mean_ratio": None}
    counts: dict[str, float] = defaultdict(float)
    for r in solved:
        counts["turns"] += r.first_success_turn or 0
        counts["oracle"] += r.oracle_turns or 0
        counts["ratio"] += (r.first_success_turn or 0) / (r.oracle_turns or 1)
    return {
        "episodes": len(solved),
        "mean_turns": counts["turns"] / len(solved),
        "mean_oracle_turns": counts["oracle"] / len(solved),
        "mean_ratio": counts["ratio"] / len(solved),
    }
