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

    config = ppo_config("agent_envs/FrozenLake-v0", 12).training(train_batch_size=512)
    algo = config.build_algo()
    print(algo.train()["env_runners"]["episode_return_mean"])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from agent_envs.env_stack import REGIME_KEYWORDS, BudgetRegime
from agent_envs.integrations.common import masked_env, require

__all__ = ["ENV_NAME", "env_creator", "ppo_config"]

#: The name :func:`ppo_config` registers :func:`env_creator` under with Ray Tune.
ENV_NAME = "agent_envs_masked"

_STACK_KEYS = ("env_id", "regime", *REGIME_KEYWORDS, "encoding")


def env_creator(config: Mapping[str, Any]) -> gym.Env:
    """Build :func:`~agent_envs.integrations.common.masked_env` from an RLlib ``env_config``.

    Keys: ``env_id``, ``regime`` (a :class:`~agent_envs.env_stack.BudgetRegime`)
    or the plain-data ``budget`` or ``budgets``, ``weights`` and ``visible``,
    and ``encoding``.

    >>> env = env_creator({"env_id": "agent_envs/FrozenLake-v0", "budget": 8})
    >>> env.observation_space["action_mask"]
    MultiBinary(4)
    """
    unknown = set(config) - set(_STACK_KEYS)
    if unknown:
        raise ValueError(f"Unknown env_config keys {sorted(unknown)}; known: {list(_STACK_KEYS)}.")
    regime = config.get("regime")
    if regime is None:
        plain = {key: config[key] for key in REGIME_KEYWORDS if config.get(key) is not None}
        regime = BudgetRegime.from_keywords(plain)
    return masked_env(config["env_id"], regime, encoding=config.get("encoding"))


def ppo_config(
    env_id: str,
    regime: BudgetRegime | int,
    *,
    encoding: Mapping[str, Any] | None = None,
    model_config: Mapping[str, Any] | None = None,
) -> Any:
    """Return an RLlib ``PPOConfig`` on :func:`env_creator`'s env with RLlib's masking module.

    ``regime`` as in :func:`~agent_envs.integrations.common.budgeted_env`.
    Chain further settings as usual (``.training(...)``, ``.env_runners(...)``)
    and call ``.build_algo()``.
    """
    regime = BudgetRegime.of(regime)
    require("ray.rllib", "rllib")
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )
    from ray.tune.registry import register_env

    register_env(ENV_NAME, env_creator)

    env_config = {"env_id": env_id, "regime": regime, "encoding": dict(encoding or {})}
    spec = RLModuleSpec(
        module_class=ActionMaskingTorchRLModule, model_config=dict(model_config or {})
    )
    return (
        PPOConfig().environment(env=ENV_NAME, env_config=env_config).rl_module(rl_module_spec=spec)
    )
