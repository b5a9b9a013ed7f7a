"""Statistics, on one floor: bootstraps, sign-flip and permutation tests, Holm families.

Everything here works on arrays (and, for the families, on the fields of a
result or a comparison); it imports no evaluator, so the evaluator, the
comparison and the studies all call down into it and nothing here calls up.
Inside, each module imports only those listed after it:

* :mod:`~agent_envs.statistics.families`: the studies' families of tests,
  each Holm-corrected, with the seed-level intervals they report.
* :mod:`~agent_envs.statistics.resampling`: the bootstrap over tasks and over
  seeds then tasks, and the resampling behind
  :func:`~agent_envs.evaluation.compare`.
* :mod:`~agent_envs.statistics.seed_tests`: the sign-flip and permutation
  tests, whose unit is the training seed, and Holm's method.

Their public names are handed on here: ``from agent_envs.statistics import holm``.
"""

from agent_envs.statistics import families, resampling, seed_tests

# Each module's __all__ names its public share (one list to keep, not two); the
# face hands them all on.
from agent_envs.statistics.families import *  # noqa: F403
from agent_envs.statistics.resampling import *  # noqa: F403
from agent_envs.statistics.seed_tests import *  # noqa: F403

__all__ = [*families.__all__, *resampling.__all__, *seed_tests.__all__]
