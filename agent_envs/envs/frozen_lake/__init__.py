"""FrozenLake: the env (``env``) and the exact solver for slippery lakes (``slippery``).

``FrozenLakeEnv``, the class the registry names, is importable from here.
"""

from agent_envs.envs.frozen_lake.env import FrozenLakeEnv

__all__ = ["FrozenLakeEnv"]
