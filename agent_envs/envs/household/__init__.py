"""Household: the env (``env``), world (``world``), commands (``commands``), planner (``oracle``).

``HouseholdEnv``, the class the registry names, is importable from here.
"""

from agent_envs.envs.household.env import HouseholdEnv

__all__ = ["HouseholdEnv"]
