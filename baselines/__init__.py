"""Baseline agents for agent_envs: random, oracle, Stable-Baselines3 and LLM agents.

Heavy agents live in their own modules and import their extras there, so that
``import baselines`` stays light: ``baselines.sb3_agent`` needs ``[sb3]``,
``baselines.hf_agent`` needs ``[llm]``.
"""
