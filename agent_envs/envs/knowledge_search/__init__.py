"""KnowledgeSearch: the env (``env``) and its generated knowledge base (``knowledge_base``).

``KnowledgeSearchEnv``, the class the registry names, is importable from here.
"""

from agent_envs.envs.knowledge_search.env import KnowledgeSearchEnv

__all__ = ["KnowledgeSearchEnv"]
