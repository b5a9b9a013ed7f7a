"""What an evaluation runs: checked settings and the list of episodes they imply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agent_envs.core import MAX_TASK_ID
from agent_envs.evaluation.rollout import EpisodeKey, episode_seed
from wrappers.validators import check_grid, check_int

__all__ = ["HIDDEN", "VISIBLE", "EvalSettings", "check_tasks"]

#: One run at max(T); first success turns give every T.
HIDDEN = "hidden"
#: One run per T, because the policy can know the budget.
VISIBLE = "visible"


def check_tasks(tasks: Any) -> tuple[int, ...]:
    """Return the task ids: ``range(tasks)`` for a count, else the distinct ids given."""
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, (Sequence, range)):
        count = check_int(tasks, "tasks (a count)", 1)
        if count > MAX_TASK_ID:
            raise ValueError(f"tasks must be at most {MAX_TASK_ID}, got {count}.")
        return tuple(range(count))
    ids = [check_int(task, "every task id", 0) for task in tasks]
    if not ids:
        raise ValueError("tasks must not be empty: pass a count or a list of task ids.")
    if len(set(ids)) != len(ids):
        raise ValueError("task ids must be distinct: each task is sampled `samples` times already.")
    if max(ids) >= MAX_TASK_ID:
        raise ValueError(f"task ids must be below {MAX_TASK_ID}, got {max(ids)}.")
    return tuple(ids)


@dataclass(frozen=True)
class EvalSettings:
    """The settings that decide which episodes run and how.

    Two runs with equal settings play exactly the same episodes, which is what
    lets a run log be resumed; ``ks`` is not among them, because K only changes
    how finished episodes are counted.
    """

    env: str
    agent: str
    budgets: tuple[int, ...]
    task_ids: tuple[int, ...]
    samples: int
    seed: int
    mode: str
    visible_budget: bool
    diagnostics: bool

    @classmethod
    def build(
        cls,
        *,
        env: str,
        agent: str,
        ks: tuple[int, ...],
        budgets: Any,
        tasks: Any,
        samples: Any,
        seed: Any,
        mode: str,
        visible_budget: bool,
        diagnostics: bool,
    ) -> EvalSettings:
        """Check the user's settings and return them, with one-line errors."""
        budgets = check_grid(budgets, "budgets (T)")
        samples = max(ks) if samples is None else check_int(samples, "samples", 1)
        if max(ks) > samples:
            raise ValueError(
                f"K={max(ks)} is larger than samples={samples}: Pass@K needs at least K "
                "attempts per task; raise samples (n) or lower K."
            )
        return cls(
            env=env,
            agent=agent,
            budgets=budgets,
            task_ids=check_tasks(tasks),
            samples=samples,
            seed=check_int(seed, "seed", 0),
            mode=mode,
            visible_budget=visible_budget,
            diagnostics=diagnostics,
        )

    @property
    def run_budgets(self) -> tuple[int, ...]:
        """The budgets episodes are played at: max(T) alone when the budget is hidden."""
        return (max(self.budgets),) if self.mode == HIDDEN else self.budgets

    def plan(self) -> list[EpisodeKey]:
        """Return every episode, in a fixed order: budget, then task, then attempt."""
        seeds = {
            (task, sample): episode_seed(self.seed, task, sample)
            for task in self.task_ids
            for sample in range(self.samples)
        }
        return [
            EpisodeKey(task, sample, budget, seeds[task, sample])
            for budget in self.run_budgets
            for task in self.task_ids
            for sample in range(self.samples)
        ]

    def to_json(self) -> dict[str, Any]:
        """Return the settings as a JSON-ready dict (tuples become lists)."""
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in asdict(self).items()
        }
