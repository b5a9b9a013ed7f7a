"""``agent-envs report``: one self-contained HTML page from eval, compare and bench results.

:func:`build_report` reads any mix of results (``eval --out``, ``compare
--out``, a bench's ``bench.json``) and run logs, and returns the page:

* per env, each agent's Pass@(K,T) surface as a heatmap table, every cell's
  value and 95% interval written in it;
* for two agents of one env, and for a comparison, the difference A - B with
  the cells :meth:`~agent_envs.evaluation.CompareResult.wins` marks;
* each run's diagnostics (reply rates, recovery beside step quality, success
  after an error);
* for a bench result, the suite table and the score with its intervals;
* a transcript browser over the episodes of run logs kept with transcripts.

Every text that came from an agent or an env is escaped (see
:mod:`agent_envs.report.cells` and :mod:`agent_envs.report.browser`).
"""

from __future__ import annotations

import os

from agent_envs.report.inputs import load_inputs
from agent_envs.report.page import GENERATOR, build_page

__all__ = ["GENERATOR", "build_report"]


def build_report(
    paths: list[str | os.PathLike[str]], logs: list[str | os.PathLike[str]] = ()
) -> str:
    """Return the report page of the result files ``paths`` and the run logs ``logs``.

    Raises:
        InvalidValue: a file is not a result, or a log given is not a run log.
    """
    return build_page(load_inputs(list(paths), list(logs)))
