"""The wrappers' private helpers, which are not wrappers.

:mod:`~wrappers._core.validators` (the one set of argument checks),
:mod:`~wrappers._core.seeding` (every seed and random stream) and
:mod:`~wrappers._core.text_space` (the text observation space).  They live at
the bottom layer so that the wrappers can use them; the layers above import
them from here too, but they are not part of the wrappers' public API.
"""
