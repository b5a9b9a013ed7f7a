"""``python -m agent_envs.cli``: the same as the ``agent-envs`` script."""

from __future__ import annotations

import sys

from agent_envs.cli.main import main

sys.exit(main())
