"""The LLM BudgetMix study (a tiny Llama, GRPO with TRL, on GuessNumber-20): see :mod:`.design`.

``design`` declares the regimes, settings and primary tests; ``jobs`` holds
the job functions handed to :func:`studies.runner.run_jobs`; ``report``
writes ``results.md`` and ``results.json``; ``cli`` is
``python -m studies.llm_budgetmix``.
"""
