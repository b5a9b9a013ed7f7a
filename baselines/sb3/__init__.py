"""Stable-Baselines3 baselines (the ``[sb3]`` extra).

- ``baselines.sb3.env``: the one training and evaluation stack (``TrainConfig``,
  ``stack_settings``, ``make_env``);
- ``baselines.sb3.agent``: ``SB3Agent``, a saved model as a compliant policy;
- ``baselines.sb3.sidecar``: the algorithms and a saved model's JSON sidecar;
- ``baselines.sb3.bc``: the behaviour-cloning warm start from noisy-oracle play;
- ``baselines.sb3.defaults``: the tuned per-env settings (``defaults.json``) that
  ``TrainConfig`` fills in for settings left at ``None``;
- ``baselines.sb3.training``: ``train``, the atomic save and the evaluation;
- ``baselines.sb3.train``: the ``agent-envs train-sb3`` command.

Importing this package imports nothing heavy; each module imports its extra.
"""
