"""The BudgetMix study on a real pretrained model (SmolLM2-135M-Instruct): see :mod:`.design`.

``design`` declares the model, env, regimes, seeds, T and K grids, the three
primary tests and the calibration bands; ``jobs`` holds the job functions
handed to :func:`studies.runner.run_jobs`; ``report`` computes the tests and
writes the results; ``cli`` is ``python -m studies.real_model``.
"""
