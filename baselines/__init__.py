"""Baseline agents for agent_envs: random, oracle, Stable-Baselines3 and LLM agents.

The six agents are importable from here; each heavy one is imported only when
first asked for, so ``import baselines`` stays light::

    from baselines import OracleAgent, RandomAgent, NoisyOracleAgent  # core only
    from baselines import SB3Agent          # needs the [sb3] extra
    from baselines import HFAgent, OpenAIChatAgent  # [llm]; OpenAIChatAgent needs none

The modules are grouped by family:

- ``baselines.simple_agents``: random, oracle and noisy-oracle agents;
- ``baselines.command``: the skeleton both ``train-*`` commands share;
- ``baselines.sb3``: the Stable-Baselines3 agent, training stack, behaviour
  cloning and the ``train-sb3`` command;
- ``baselines.llm``: the Hugging Face and OpenAI-compatible agents, the one
  prompt builder, generation, and the GRPO rollout, warm start and
  ``train-llm`` command.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module that defines it (imported on first use).
_AGENTS = {
    "RandomAgent": "baselines.simple_agents",
    "OracleAgent": "baselines.simple_agents",
    "NoisyOracleAgent": "baselines.simple_agents",
    "SB3Agent": "baselines.sb3.agent",
    "HFAgent": "baselines.llm.agents.hf_agent",
    "OpenAIChatAgent": "baselines.llm.agents.openai_agent",
}

__all__ = sorted(_AGENTS)


def __getattr__(name: str) -> Any:
    if name in _AGENTS:
        return getattr(importlib.import_module(_AGENTS[name]), name)
    raise AttributeError(f"module 'baselines' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_AGENTS))
