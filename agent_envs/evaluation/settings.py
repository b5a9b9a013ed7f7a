"""What an evaluation runs: checked settings and the list of episodes they imply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agent_envs.core import MAX_TASK_ID
from agent_envs.evaluation.rollout import EpisodeKey, episode_seed
from wrappers.validators import check_grid, check_int

__all__ = ["HIDDEN", "MAX_EPISODES", "VISIBLE", "EvalSettings", "check_tasks"]

#: One run at max(T); first success turns give every T.
HIDDEN = "hidden"
#: One run per T, because the policy can know the budget.
VISIBLE = "visible"

#: The most episodes one run may plan (tasks x samples x budgets run).  Design
#: decision: the plan is a list held in memory (resume and the log check need
#: it), so its size is bounded up front with a clear error instead of a
#: ``MemoryError`` or a hang: a million episodes is far beyond any study run
#: on one machine; split a larger one into runs over task ranges.
MAX_EPISODES = 1_000_000


def check_tasks(tasks: Any) -> tuple[int, ...]:
    """Return the task ids: ``range(tasks)`` for a count, else the distinct ids given.

    At most :data:`MAX_EPISODES` tasks, checked before any list is built.
    """
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, (Sequence, range)):
        count = check_int(tasks, "tasks (a count)", 1)
        if count > MAX_EPISODES:
            raise ValueError(f"tasks must be at most {MAX_EPISODES:,} per run, got {count:,}.")
        return tuple(range(count))
    if len(tasks) > MAX_EPISODES:
        raise ValueError(f"a run takes at most {MAX_EPISODES:,} task ids, got {len(tasks):,}.")
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
    how finished episodes are counted.  Design decision: every setting that
    changes what an episode does is here, so the resume check (the log
    header's settings must equal these) refuses to mix episodes played
    differently: the env (with its arguments), the wrappers around it that
    change what the agent sees (``wrappers``, e.g. ``ChatHistory`` and its
    window), the agent (with its arguments, secrets masked), the grid, the
    seed and the budget's visibility.  What does not change an episode (K,
    the batch size, transcripts, the bootstrap) is left out, so a resumed run
    may change it.
    """

    env: str
    wrappers: tuple[str, ...]
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
        wrappers: tuple[str, ...] = (),
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
        task_ids = check_tasks(tasks)
        episodes = len(task_ids) * samples * (1 if mode == HIDDEN else len(budgets))
        if episodes > MAX_EPISODES:
            raise ValueError(
                f"this run would play {episodes:,} episodes (tasks x samples"
                f"{'' if mode == HIDDEN else ' x budgets'}), more than the {MAX_EPISODES:,} "
                "one run may plan; lower samples or split the tasks over several runs."
            )
        return cls(
            env=env,
            wrappers=tuple(wrappers),
            agent=agent,
            budgets=budgets,
            task_ids=task_ids,
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
