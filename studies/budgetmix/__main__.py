"""``python -m studies.budgetmix``: run the classic BudgetMix study."""

import sys

from studies.budgetmix.cli import main

sys.exit(main())
