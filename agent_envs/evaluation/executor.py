"""Episode executors: the one seam between the run's bookkeeping and whatever plays episodes.

The runner plans the episodes, owns the run log and computes the result; an
executor only plays the keys it is given and hands each finished episode to
``finish``, in any order.  :class:`LocalExecutor` plays them in this process;
``agent_envs.evaluation.ray_backend.RayExecutor`` ships chunks of keys to Ray
actors, each of which wraps a :class:`LocalExecutor`.  Everything else (the
log, resume, the error stop, the progress bar, the numbers) is shared, which
is why both backends give the same result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import gymnasium as gym

from agent_envs.evaluation.keys import EpisodeKey
from agent_envs.evaluation.policies import PolicyAdapter
from agent_envs.evaluation.rollout import Finish, RunOptions, run_lockstep, run_sequential

__all__ = ["EpisodeExecutor", "LocalExecutor"]


class EpisodeExecutor(Protocol):
    """Plays episodes and reports each finished one.

    Attributes:
        name: the backend's name, recorded in the result's timing.
        workers: how many processes played episodes.
        policy_calls: policy calls made so far (``act`` or ``act_batch``).
        turns: turns played so far (for progress: where episodes play in
            lockstep, none finishes for a long time, but turns go on).
    """

    name: str
    workers: int
    policy_calls: int
    turns: int

    def run(self, keys: Sequence[EpisodeKey], finish: Finish) -> None:
        """Play every key once and call ``finish(record, transcript)`` as each ends.

        An exception from ``finish`` (such as ``RunAborted``) stops the run.
        """
        ...


class LocalExecutor:
    """Play episodes in this process: one env stack, or one per lockstep slot, built once.

    A policy with ``act_batch`` plays up to ``batch_size`` episodes in lockstep;
    any other plays them one after another.

    Args:
        adapter: the policy.
        build: builds one env stack, as the evaluator wraps it (picklable
            when the env factory is, so a worker process builds its own).
        options: what each episode records.
        batch_size: lockstep slots for a policy with ``act_batch``.
        envs: stacks built already (the run's probe).
    """

    name = "local"
    workers = 1

    def __init__(
        self,
        adapter: PolicyAdapter,
        build: Callable[[], gym.Env],
        options: RunOptions,
        batch_size: int,
        envs: Sequence[gym.Env] = (),
    ) -> None:
        self.adapter = adapter
        self.build = build
        self.options = options
        self.batch_size = batch_size
        self._envs = list(envs)

    @property
    def policy_calls(self) -> int:
        """Policy calls made so far."""
        return self.adapter.calls

    @property
    def turns(self) -> int:
        """Turns played so far, each counted as the policy is asked for its action."""
        return self.adapter.turns

    def _slots(self, count: int) -> list[gym.Env]:
        while len(self._envs) < count:
            self._envs.append(self.build())
        return self._envs[:count]

    def run(self, keys: Sequence[EpisodeKey], finish: Finish) -> None:
        """Play ``keys``, calling ``finish(record, transcript)`` after each episode."""
        if not keys:
            return
        if self.adapter.batched:
            slots = self._slots(min(self.batch_size, len(keys)))
            run_lockstep(self.adapter, slots, keys, self.options, finish)
        else:
            run_sequential(self.adapter, self._slots(1)[0], keys, self.options, finish)
