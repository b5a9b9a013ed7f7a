"""Which episode to play: its key, and the seed that key resets the env with.

Every episode is fixed by its :class:`EpisodeKey` alone (task, attempt,
budget, seed); the seed is :func:`wrappers.utils.seeding.episode_seed` of the run's
base seed, the task and the attempt, the same for every budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from wrappers.utils.seeding import episode_seed

__all__ = ["EpisodeKey"]


@dataclass(frozen=True)
class EpisodeKey:
    """Which episode to play: attempt ``sample`` at ``task_id`` under ``budget`` turns."""

    task_id: int
    sample: int
    budget: int
    seed: int

    @classmethod
    def attempt(cls, base_seed: int, task_id: int, sample: int, budget: int) -> EpisodeKey:
        """Return the key of attempt ``sample`` at ``task_id``, seeded from ``base_seed``."""
        return cls(task_id, sample, budget, episode_seed(base_seed, task_id, sample))

    @property
    def ident(self) -> tuple[int, int, int]:
        """What identifies the episode in a run log."""
        return (self.task_id, self.sample, self.budget)
