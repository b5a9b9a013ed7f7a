"""Environment families; ``agent_envs.registration`` registers them.

A family that fits in one module is a module (``hanoi``); a family that spans
modules is a subpackage (``sokoban/``) whose ``env`` module holds the env class,
re-exported by the subpackage.  Helpers that several families share live in
``common/``.
"""
