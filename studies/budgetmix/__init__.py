"""The classic BudgetMix study (SB3 policies on FrozenLake and Maze): see :mod:`.design`.

``design`` declares the regimes, settings and primary tests; ``jobs`` is the
job function handed to :func:`studies.runner.run_jobs`; ``report`` writes
``results.md`` and ``results.json``; ``cli`` is ``python -m studies.budgetmix``.
"""
