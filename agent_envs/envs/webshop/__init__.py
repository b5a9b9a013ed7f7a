"""WebShop: the env (``env``) and its generated product catalogue (``catalogue``).

``WebShopEnv``, the class the registry names, is importable from here.
"""

from agent_envs.envs.webshop.env import WebShopEnv

__all__ = ["WebShopEnv"]
