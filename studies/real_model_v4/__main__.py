"""``python -m studies.real_model_v4``: see :mod:`studies.real_model_v4.cli`."""

from studies.real_model_v4.cli import main

raise SystemExit(main())
