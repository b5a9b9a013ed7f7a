"""The Pass@(K,T) evaluator: measure any policy on any registered env.

>>> from agent_envs.evaluation import evaluate, pass_at_k
>>> round(pass_at_k(n=8, c=2, k=4), 4)
0.7857

See ``docs/evaluation.md`` for the protocol, the modes and the diagnostics.
"""

from __future__ import annotations

from agent_envs.evaluation.compare import CompareResult, compare
from agent_envs.evaluation.episode_record import EpisodeRecord
from agent_envs.evaluation.pass_at_k import pass_at_k
from agent_envs.evaluation.policies import PerEpisode
from agent_envs.evaluation.reference import NoisyOracleAgent
from agent_envs.evaluation.result import EvalResult
from agent_envs.evaluation.run_log import RunLogLocked
from agent_envs.evaluation.runner import evaluate
from agent_envs.evaluation.session import RunAborted
from agent_envs.evaluation.settings import HIDDEN, VISIBLE, EvalSettings
from agent_envs.evaluation.step_quality import step_quality
from wrappers.utils.seeding import episode_seed

__all__ = [
    "HIDDEN",
    "VISIBLE",
    "CompareResult",
    "EpisodeRecord",
    "EvalResult",
    "EvalSettings",
    "NoisyOracleAgent",
    "PerEpisode",
    "RunAborted",
    "RunLogLocked",
    "compare",
    "episode_seed",
    "evaluate",
    "pass_at_k",
    "step_quality",
]
