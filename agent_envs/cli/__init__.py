"""The ``agent-envs`` command line: list, eval, compare, play, bench, report and installed commands.

One module per command (:mod:`~agent_envs.cli.list`, :mod:`~agent_envs.cli.eval`,
:mod:`~agent_envs.cli.compare`, :mod:`~agent_envs.cli.play`,
:mod:`~agent_envs.cli.bench`, :mod:`~agent_envs.cli.report`),
:mod:`~agent_envs.cli.outputs` (the output checks they share) and
:mod:`~agent_envs.cli.main`, which holds the parser and the error policy.
Installed commands (such as ``train-sb3``) and agents (``--agent NAME``) are
found through the entry-point groups ``agent_envs.commands`` and
``agent_envs.agents`` (see :mod:`agent_envs.plugins`).

Every user error ends in one line on stderr and exit status 2 (pass
``--traceback`` before the command to see the full trace instead).
"""

from __future__ import annotations

from agent_envs.cli.eval import _with_history
from agent_envs.cli.main import _parser, main

# _parser and _with_history stay reachable here for code written against cli.py.
__all__ = ["_parser", "_with_history", "main"]
