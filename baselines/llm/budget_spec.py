"""``BudgetSpec``, the name ``studies/real_model`` imports for a run's :class:`BudgetRegime`.

Training budgets are :class:`agent_envs.env_stack.BudgetRegime` (its ``shared``
says whether a GRPO group shares one T).  ``studies/real_model`` is frozen
while its study runs from a pinned checkout, and its code here imports this
name; it is the same class, not a second concept.  Delete this module when
that code imports ``BudgetRegime``.
"""

from agent_envs.env_stack import BudgetRegime

__all__ = ["BudgetSpec"]

BudgetSpec = BudgetRegime
