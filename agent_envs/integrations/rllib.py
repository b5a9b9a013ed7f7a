"""RLlib (new API stack): PPO with action masking on any env with an action vocabulary.

The env is ``EncodeObservation(DiscreteActions(budgeted env), layout="dict")``:
a ``Dict`` with the encoded view as a flat ``Box`` under ``"observations"``
and the admissible actions under ``"action_mask"``, the form RLlib's own
``ActionMaskingTorchRLModule`` reads, so no connector or custom model is
needed.  Install with the ``[rllib]`` extra: it lists RLlib's dependencies
without the ``gymnasium==1.2.2`` pin that ``ray[rllib]`` carries (the code
runs on the gymnasium this project uses; the tests check it).

Example (not run here: it starts Ray)::

    from agent_envs.integrations.rllib import ppo_config

    config = ppo_config("agent_envs/FrozenLake-v0", budget=12).training(train_batch_size=512)
    algo = config.build_algo()
    print(algo.train()["env_runners"]["episode_return_mean"])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

from agent_envs.integrations.common import masked_env, require
from agent_envs.protocol import BUDGET

__all__ = ["ENV_NAME", "env_creator", "ppo_config"]

#: The name :func:`ppo_config` registers :func:`env_creator` under with Ray Tune.
ENV_NAME = "agent_envs_masked"

_STACK_KEYS = ("env_id", BUDGET, "budgets", "weights", "visible", "encoding")


def env_creator(config: Mapping[str, Any]) -> gym.Env:
    """Build :func:`~agent_envs.integrations.common.masked_env` from an RLlib ``env_config``.

    Keys: ``env_id``, and :func:`~agent_envs.integrations.common.masked_env`'s
    keyword arguments (``budget`` or ``budgets``, ``weights``, ``visible``,
    ``encoding``).

    >>> env = env_creator({"env_id": "agent_envs/FrozenLake-v0", "budget": 8})
    >>> env.observation_space["action_mask"]
    MultiBinary(4)
    """
    unknown = set(config) - set(_STACK_KEYS)
    if unknown:
        raise ValueError(f"Unknown env_config keys {sorted(unknown)}; known: {list(_STACK_KEYS)}.")
    options = {key: config[key] for key in _STACK_KEYS[1:] if config.get(key) is not None}
    return masked_env(config["env_id"], **options)


def ppo_config(
    env_id: str,
    *,
    budget: int | None = None,
    budgets: Sequence[int] | None = None,
    weights: Sequence[float] | None = None,
    visible: bool = False,
    encoding: Mapping[str, Any] | None = None,
    model_config: Mapping[str, Any] | None = None,
) -> Any:
    """Return an RLlib ``PPOConfig`` on :func:`env_creator`'s env with RLlib's masking module.

    Chain further settings as usual (``.training(...)``, ``.env_runners(...)``)
    and call ``.build_algo()``.
    """
    require("ray.rllib", "rllib")
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )
    from ray.tune.registry import register_env

    register_env(ENV_NAME, env_creator)

    env_config = {"env_id": env_id, BUDGET: budget, "budgets": budgets, "weights": weights}
    env_config.update(visible=visible, encoding=dict(encoding or {}))
    spec = RLModuleSpec(
        module_class=ActionMaskingTorchRLModule, model_config=dict(model_config or {})
    )
    return (
        PPOConfig().environment(env=ENV_NAME, env_config=env_config).rl_module(rl_module_spec=spec)
    )
