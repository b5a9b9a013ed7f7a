"""``python -m studies.llm_budgetmix``: run the LLM BudgetMix study."""

import sys

from studies.llm_budgetmix.cli import main

sys.exit(main())
