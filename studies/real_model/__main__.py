"""``python -m studies.real_model``: the BudgetMix study on SmolLM2-135M-Instruct."""

import sys

from studies.real_model.cli import main

sys.exit(main())
