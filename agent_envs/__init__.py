"""agent-envs: verifiable multi-turn text environments for LLM-agent RL.

Importing this package registers every environment under ``agent_envs/``::

    import gymnasium as gym
    import agent_envs

    gym.register_envs(agent_envs)
    env = gym.make("agent_envs/Sokoban-v0")
"""

from __future__ import annotations

from agent_envs.core import CHARSET, TextEnv, normalize_action
from agent_envs.registration import FAMILIES, register_all

__version__ = "0.1.0"
__all__ = [
    "CHARSET",
    "FAMILIES",
    "TextEnv",
    "__version__",
    "env_ids",
    "install_hint",
    "normalize_action",
]

register_all()


def env_ids() -> list[str]:
    """Return every registered ``agent_envs/`` id, in registration order."""
    return [env_id for entries in FAMILIES.values() for env_id in entries]


def install_hint(extra: str) -> str:
    """Return how to install the optional extra ``extra``: from the checkout, not from PyPI.

    agent-envs is not published on PyPI, so installing it by name from a
    registry would fail or, worse, fetch someone else's package of that name.

    >>> install_hint("plot")
    'pip install -e ".[plot]" in the agent-envs checkout'
    """
    return f'pip install -e ".[{extra}]" in the agent-envs checkout'
