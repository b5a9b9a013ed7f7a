"""Sokoban: the env (``env``) and its room generation and searches (``rooms``).

``SokobanEnv``, the class the registry names, is importable from here.
"""

from agent_envs.envs.sokoban.env import SokobanEnv

__all__ = ["SokobanEnv"]
