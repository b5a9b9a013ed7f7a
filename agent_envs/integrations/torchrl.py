"""TorchRL: a ``TransformedEnv`` with ``ActionMask`` on any env with an action vocabulary.

It wraps :func:`~agent_envs.integrations.common.masked_env` (a ``Dict``
observation with ``"observations"`` and ``"action_mask"``) in TorchRL's
``GymWrapper``, reads the info keys into the tensordict with
``default_info_dict_reader`` (boolean specs, so a reset, which has no
``valid_action``, gets ``False``), and appends ``ActionMask``, so that random
and policy actions respect the admissible moves.  Install with the
``[torchrl]`` extra.

Example::

    from agent_envs.integrations.torchrl import torchrl_env

    env = torchrl_env("agent_envs/FrozenLake-v0", 8)
    rollout = env.rollout(8)          # random actions, all admissible
    print(rollout["next", "success"].any())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_envs.env_stack import BudgetRegime
from agent_envs.integrations.common import masked_env, require
from wrappers.protocol import DEAD_END, SUCCESS, VALID_ACTION

__all__ = ["INFO_KEYS", "torchrl_env"]

#: The boolean info keys read into the tensordict by default.
INFO_KEYS = (SUCCESS, VALID_ACTION, DEAD_END)


def torchrl_env(
    env_id: str,
    regime: BudgetRegime | int,
    *,
    encoding: Mapping[str, Any] | None = None,
    info_keys: Sequence[str] = INFO_KEYS,
) -> Any:
    """Return ``TransformedEnv(GymWrapper(masked_env(...)), ActionMask())``.

    ``regime`` as in :func:`~agent_envs.integrations.common.budgeted_env`.
    ``info_keys`` are boolean info keys to copy into each step's tensordict.
    Actions are categorical (an integer index into the env's vocabulary).
    """
    require("torchrl", "torchrl")
    import torch
    from torchrl.data import Unbounded
    from torchrl.envs import GymWrapper, TransformedEnv, default_info_dict_reader
    from torchrl.envs.transforms import ActionMask

    env = masked_env(env_id, regime, encoding=encoding)
    wrapped = GymWrapper(env, categorical_action_encoding=True)
    specs = {key: Unbounded((), dtype=torch.bool) for key in info_keys}
    wrapped.set_info_dict_reader(default_info_dict_reader(list(info_keys), spec=specs))
    return TransformedEnv(wrapped, ActionMask())
