"""The env stack that :mod:`baselines.sb3_train` trains on, built from a :class:`TrainConfig`.

Inside out: ``gym.make(config.env_id)`` -> :class:`TaskPool` (if
``train_tasks`` is set) -> ``ProcessReward`` (if ``process_reward`` is set)
-> ``TurnBudget`` or ``BudgetMix`` -> ``DiscreteActions`` ->
``EncodeObservation``.  :func:`make_env` builds one such env; the vector env
that training runs on holds ``n_envs`` of them, each inside SB3's ``Monitor``.

Stable-Baselines3 is imported only when the vector env is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from agent_envs.protocol import SUCCESS, TASK_ID
from wrappers.budget_mix import BudgetMix
from wrappers.discrete_actions import DiscreteActions
from wrappers.encode_observation import EncodeObservation
from wrappers.process_reward import ProcessReward
from wrappers.turn_budget import TurnBudget

__all__ = ["TaskPool", "TrainConfig", "make_env"]


# ---------------------------------------------------------------------- settings
@dataclass
class TrainConfig:
    """Everything that decides a training run; saved verbatim in the sidecar.

    ``budget_mix``, when given, replaces ``budget`` (BudgetMix instead of
    TurnBudget).  ``train_tasks`` lists the task ids training draws from
    (``None``: a fresh task every episode).
    """

    env_id: str
    algo: str = "ppo"
    timesteps: int = 50_000
    budget: int | None = 20
    budget_mix: tuple[int, ...] | None = None
    weights: tuple[float, ...] | None = None
    visible_budget: bool = False
    process_reward: float | None = None
    gamma: float = 0.99
    seed: int = 0
    n_envs: int = 8
    vec: str = "dummy"
    train_tasks: tuple[int, ...] | None = None
    encoding: dict[str, Any] = field(default_factory=lambda: {"mode": "chars"})
    algo_kwargs: dict[str, Any] = field(default_factory=dict)
    threads: int = 1

    def regime(self) -> str:
        """Return a short name of the budget regime, e.g. ``mix5-10-20+pr0.1``."""
        name = (
            f"T{self.budget}"
            if self.budget_mix is None
            else "mix" + "-".join(str(budget) for budget in self.budget_mix)
        )
        if self.visible_budget:
            name += "+visible"
        if self.process_reward is not None:
            name += f"+pr{self.process_reward:g}"
        return name

    def training_budgets(self) -> tuple[int, ...]:
        """Return the budgets seen in training."""
        return self.budget_mix if self.budget_mix is not None else (self.budget,)


# --------------------------------------------------------------------- env stack
class TaskPool(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Draw each episode's task uniformly from ``task_ids`` unless ``reset`` names one.

    The draw uses the wrapper's own generator, re-seeded by ``reset(seed=...)``
    like :class:`wrappers.BudgetMix`, so that vector sub-envs draw independently.
    """

    def __init__(self, env: gym.Env, task_ids: Sequence[int]) -> None:
        task_ids = tuple(int(task) for task in task_ids)
        if not task_ids or min(task_ids) < 0:
            raise ValueError(f"task_ids must be non-empty and >= 0, got {task_ids!r}.")
        gym.utils.RecordConstructorArgs.__init__(self, task_ids=task_ids)
        gym.Wrapper.__init__(self, env)
        self.task_ids = task_ids
        self._rng = np.random.default_rng()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self._rng = np.random.default_rng([0x7A5C, seed])
        if not options or TASK_ID not in options:
            task_id = self.task_ids[int(self._rng.integers(len(self.task_ids)))]
            options = {**(options or {}), TASK_ID: task_id}
        return self.env.reset(seed=seed, options=options)


def make_env(config: TrainConfig) -> gym.Env:
    """Build one training env: the text env under the budget regime, discrete and encoded."""
    env = gym.make(config.env_id)
    if config.train_tasks is not None:
        env = TaskPool(env, config.train_tasks)
    if config.process_reward is not None:
        env = ProcessReward(env, coef=config.process_reward, gamma=config.gamma)
    if config.budget_mix is not None:
        env = BudgetMix(env, config.budget_mix, config.weights, visible=config.visible_budget)
    else:
        env = TurnBudget(env, config.budget, visible=config.visible_budget)
    env = DiscreteActions(env)
    return EncodeObservation(env, **_encoder_arguments(config.encoding))


def _encoder_arguments(encoding: dict[str, Any]) -> dict[str, Any]:
    arguments = dict(encoding)
    if "ngram_range" in arguments:
        arguments["ngram_range"] = tuple(arguments["ngram_range"])
    return arguments


def _vec_env(config: TrainConfig) -> Any:
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    # Observations are numeric after EncodeObservation, so SubprocVecEnv is safe
    # here (Gymnasium's shared-memory AsyncVectorEnv would corrupt Text spaces).
    vec_cls = SubprocVecEnv if config.vec == "subproc" else DummyVecEnv
    return make_vec_env(
        _EnvFactory(config),
        n_envs=config.n_envs,
        seed=config.seed,
        vec_env_cls=vec_cls,
        # Success, not reward, is the measure: shaped rewards make the return ambiguous.
        monitor_kwargs={"info_keywords": (SUCCESS,)},
    )


class _EnvFactory:
    """A picklable ``() -> env`` for SubprocVecEnv (a closure would pickle too, this is plainer)."""

    def __init__(self, config: TrainConfig) -> None:
        self.config = config

    def __call__(self) -> gym.Env:
        import agent_envs  # noqa: F401  (registers the ids in a fresh subprocess)

        return make_env(self.config)
