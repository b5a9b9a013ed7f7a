"""The research studies run on this bench, and what they share.

The top layer: a study may import ``baselines``, ``agent_envs`` and
``wrappers``; nothing imports a study.  Each study is a subpackage whose
``design`` module declares only its regimes, settings and primary tests
(``python -m studies.<name>`` runs it).  What they share:

* :mod:`studies.runner`: one durable runner for (regime x seed) jobs; each
  finished job's summary is written atomically, and a rerun skips it;
* :mod:`studies.report`: the report kit (tables, seed-level surfaces,
  reference agents, GRPO training logs, results files);
"""
