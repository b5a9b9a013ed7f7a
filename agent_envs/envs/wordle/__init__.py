"""Wordle: the env (``env``) and its shipped word lists and scoring (``words``).

``WordleEnv``, the class the registry names, is importable from here.
"""

from agent_envs.envs.wordle.env import WordleEnv

__all__ = ["WordleEnv"]
