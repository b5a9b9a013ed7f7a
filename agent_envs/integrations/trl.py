"""TRL ``environment_factory``: an episode of any env as a tool, under a per-episode turn budget.

TRL's ``GRPOTrainer(environment_factory=...)`` builds one object per rollout,
calls its ``reset(**row)`` with the dataset row (the text it returns is
appended to the prompt), exposes its public methods as tools, and scores the
rollout with ``get_reward()``.  :func:`environment_factory` returns such a
factory for any registered id: the tool is ``act(action)``, one env turn per
call, under a ``TurnBudget`` or a ``BudgetMix`` enforced inside the tool.
After T turns the tool answers that the turns are used up and changes
nothing, so the reward is what was reached by turn T, however many more
tool calls TRL's ``max_tool_calling_iterations`` allows.

Attempts get distinct seeds: the j-th reset of task i (counted per factory)
gets ``episode_seed(seed, i, j)``, the evaluator's seed of attempt j, so the K
generations of a prompt are K distinct attempts and a ``BudgetMix`` draws
their budgets independently.  The dataset needs a ``task_id`` column
(:func:`task_rows` builds one).  What this path cannot do, compared with the
project's own rollout function, is in ``docs/integrations.md``.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable
from typing import Any

from agent_envs.env_stack import BudgetRegime
from agent_envs.integrations.common import budgeted_env, client_task_id
from wrappers.protocol import BUDGET, SUCCESS, TASK_ID
from wrappers.utils.seeding import episode_seed

__all__ = ["ToolEpisode", "environment_factory", "task_rows"]

#: The user message each row starts from; the env's first observation is appended to it.
PROMPT = (
    "You are playing a text game through the tool `act`. Call `act` with one action per turn "
    "until the game says it is over."
)


class _Attempts:
    """Counts the resets of each task, so that attempt j at task i gets its own seed."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._counts: collections.Counter[int] = collections.Counter()
        self._lock = threading.Lock()  # TRL may reset the rollouts of a batch from threads

    def next_seed(self, task_id: int) -> int:
        with self._lock:
            attempt = self._counts[task_id]
            self._counts[task_id] += 1
        return episode_seed(self.seed, task_id, attempt)


class ToolEpisode:
    """One episode per :meth:`reset`, played through the tool :meth:`act`.

    Build it through :func:`environment_factory`, which shares one seed stream
    between the instances of a run.

    >>> make = environment_factory("agent_envs/GuessNumber-v0", 2)
    >>> episode = make()
    >>> print(episode.reset(task_id=0).splitlines()[-1])
    [Turns left: 2 of 2]
    >>> _ = episode.act("50"); print(episode.act("25").splitlines()[-1])
    No turns left: all 2 turns are used up. The episode is over.
    >>> episode.act("7").startswith("No turns left"), episode.turns, episode.calls
    (True, 2, 3)
    """

    def __init__(self, env_id: str, attempts: _Attempts, regime: BudgetRegime) -> None:
        self._env = budgeted_env(env_id, regime)
        self._attempts = attempts
        self._over: str | None = "No episode is running: the game has not started."
        self.reward = 0.0
        self.turns = 0  # env turns played (at most the budget)
        self.calls = 0  # tool calls, those after the episode ended included
        self.seed: int | None = None
        self.budget: int | None = None

    def reset(self, task_id: int | None = None, **row: Any) -> str:
        """Start an episode of task ``task_id`` (a dataset column); return its first observation.

        ``task_id`` must be a plain int below the ids reserved for few-shot
        examples; ``5.9``, ``True`` or ``"7"`` is refused, not coerced.
        """
        if task_id is None:
            raise ValueError(
                "The dataset rows need a task_id column (task_rows(task_ids) builds them)."
            )
        task_id = client_task_id(task_id)
        self.seed = self._attempts.next_seed(task_id)
        text, info = self._env.reset(seed=self.seed, options={TASK_ID: task_id})
        self._over, self.reward, self.turns, self.calls = None, 0.0, 0, 0
        self.budget = int(info[BUDGET])
        return text

    def act(self, action: str) -> str:
        """Play one turn of the game: send one action to the environment.

        Args:
            action: The action, written as the game's instructions ask.

        Returns:
            What the environment answers, with the current view.
        """
        self.calls += 1
        if self._over is not None:
            return self._over
        text, _, terminated, truncated, info = self._env.step(str(action))
        self.turns += 1
        if info.get(SUCCESS):
            self.reward = 1.0
        if terminated:
            self._over = "The episode is over: call no more tools."
        elif truncated:
            self._over = f"No turns left: all {self.budget} turns are used up. The episode is over."
        return text if self._over is None else f"{text}\n\n{self._over}"

    def get_reward(self) -> float:
        """Return 1.0 if the task was solved within the budget, else 0.0."""
        return self.reward


def environment_factory(
    env_id: str, regime: BudgetRegime | int, *, seed: int = 0
) -> Callable[[], ToolEpisode]:
    """Return the zero-argument factory ``GRPOTrainer(environment_factory=...)`` takes.

    ``regime`` (a :class:`~agent_envs.env_stack.BudgetRegime`: a fixed T or a
    mix) sets T per episode; an int T is shown to the model (a tool user
    cannot count the turns left otherwise); ``seed`` is the base of the attempt seeds.
    """
    regime = BudgetRegime.of(regime, visible=True)
    attempts = _Attempts(seed)
    ToolEpisode(env_id, attempts, regime)  # a bad id fails here, once

    def make() -> ToolEpisode:
        return ToolEpisode(env_id, attempts, regime)

    return make


def task_rows(task_ids: Iterable[int], prompt: str = PROMPT) -> list[dict[str, Any]]:
    """Return dataset rows for ``task_ids``: a conversational ``prompt`` and the ``task_id``.

    ``datasets.Dataset.from_list(task_rows(range(100)))`` is a GRPO train set.

    >>> task_rows([7])[0]["task_id"]
    7
    """
    return [{"prompt": [{"role": "user", "content": prompt}], TASK_ID: int(t)} for t in task_ids]
