"""Helpers the wrappers share with the layers above, which are not wrappers.

:mod:`~wrappers.utils.validators` (the one set of argument checks),
:mod:`~wrappers.utils.seeding` (every seed and random stream) and
:mod:`~wrappers.utils.text_space` (the text observation space).  They live at
the bottom layer so that the wrappers can use them; ``agent_envs`` and
``baselines`` import them from here, as Gymnasium's envs import
``gymnasium.utils``.
"""
