"""Adapters that plug the envs into other libraries, one module per library.

Each module imports its library lazily, inside the functions that need it, so
importing ``agent_envs`` never imports any of them; a missing library gives a
one-line error naming the extra to install.

- :mod:`agent_envs.integrations.rllib`: RLlib PPO with action masking (``[rllib]``).
- :mod:`agent_envs.integrations.torchrl`: a TorchRL env with ``ActionMask`` (``[torchrl]``).
- :mod:`agent_envs.integrations.openenv`: an OpenEnv server, `agent-envs serve` (``[openenv]``).
- :mod:`agent_envs.integrations.trl`: TRL `environment_factory` episodes (``[rl]``).
- :mod:`agent_envs.integrations.common`: the budgeted stack the adapters share.
"""
