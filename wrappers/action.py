"""Action wrappers: :class:`DiscreteActions` acts with an index into the env's action vocabulary.

:func:`action_mask` turns the admissible actions into a mask over that
vocabulary, and :func:`expose_action_masks` lets the wrappers above a
``DiscreteActions`` offer its ``action_masks`` to maskable learners.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from wrappers.errors import InvalidType, InvalidValue
from wrappers.protocol import AdmissibleActions

__all__ = ["DiscreteActions", "action_key", "action_mask", "expose_action_masks"]


def action_key(action: str) -> str:
    """Return the form under which actions are matched: lower case, single spaces.

    The env's own parser is more lenient (it also drops a leading ``Action:``);
    this light form is enough to match admissible actions, which envs already
    list in canonical form, against the vocabulary.

    >>> action_key("  Move   LEFT ")
    'move left'
    """
    return " ".join(action.lower().split())


def action_mask(index: Mapping[str, int], size: int, admissible: Iterable[str]) -> np.ndarray:
    """Return a ``bool`` array of ``size``: ``True`` at the index of each admissible action.

    ``index`` maps :func:`action_key` forms to vocabulary indices.  Actions
    outside the vocabulary are ignored.  If none is left the mask is all
    ``True``, because an all-``False`` mask leaves a masked sampler nothing
    to choose.  Training (:meth:`DiscreteActions.action_masks`) and trained
    agents call this one function, so they mask alike.

    >>> action_mask({"up": 0, "down": 1}, 2, ["Up"]).tolist()
    [True, False]
    """
    mask = np.zeros(size, dtype=bool)
    for action in admissible:
        position = index.get(action_key(action))
        if position is not None:
            mask[position] = True
    if not mask.any():
        mask[:] = True
    return mask


def expose_action_masks(wrapper: gym.Wrapper) -> None:
    """Give ``wrapper`` the ``action_masks`` method of a :class:`DiscreteActions` below it.

    Gymnasium 1.x wrappers no longer forward attributes, so without this
    sb3-contrib's ``ActionMasker(env, lambda e: e.action_masks())`` fails on a
    stack whose outermost wrapper is not ``DiscreteActions``.  The wrappers of
    this package that may sit above it call this in their constructor; where
    nothing below has masks, the wrapper gets none, so ``hasattr(env,
    "action_masks")`` stays a true test of masking support.

    >>> import gymnasium as gym  # the agent_envs/ ids are registered
    >>> from wrappers import DiscreteActions, EncodeObservation
    >>> env = EncodeObservation(DiscreteActions(gym.make("agent_envs/GuessNumber-v0")), "hashing")
    >>> _ = env.reset(seed=0, options={"task_id": 0})
    >>> int(env.action_masks().sum())
    100
    >>> hasattr(EncodeObservation(gym.make("agent_envs/GuessNumber-v0"), "hashing"), "action_masks")
    False
    """
    with contextlib.suppress(AttributeError):
        wrapper.action_masks = wrapper.env.get_wrapper_attr("action_masks")


def _vocabulary_of(env: gym.Env) -> tuple[str, ...]:
    try:
        vocabulary = env.get_wrapper_attr("action_vocabulary")
    except AttributeError:
        vocabulary = None
    if vocabulary is None:
        raise InvalidValue(
            f"{type(env.unwrapped).__name__} has no action_vocabulary, so its actions cannot be "
            "made discrete: its action set is open (free text). Use an env with a finite "
            "vocabulary, or an agent that writes text."
        )
    vocabulary = tuple(vocabulary)
    if not vocabulary or not all(isinstance(action, str) for action in vocabulary):
        raise InvalidValue(
            f"{type(env.unwrapped).__name__}.action_vocabulary must be a non-empty sequence of "
            f"str, got {vocabulary!r:.80}."
        )
    keys = [action_key(action) for action in vocabulary]
    if len(set(keys)) != len(keys):
        raise InvalidValue(
            f"{type(env.unwrapped).__name__}.action_vocabulary has actions that differ only in "
            "case or spacing; each index must name a distinct action."
        )
    return vocabulary


class DiscreteActions(gym.ActionWrapper, gym.utils.RecordConstructorArgs):
    """Turn a text action space into ``Discrete(len(action_vocabulary))``.

    Action ``i`` is sent to the env as the text ``action_vocabulary[i]``.  The
    vocabulary comes from ``env.get_wrapper_attr("action_vocabulary")``; an env
    without one (``None``) is refused at construction with a clear error.

    :meth:`action_masks` returns a boolean array with ``True`` for every
    vocabulary action that ``env.unwrapped.admissible_actions()`` lists now,
    which is the form sb3-contrib's ``MaskablePPO`` reads (it calls
    ``action_masks()`` on the env, or ``env_method("action_masks")`` on a
    vector env).  If no admissible action is in the vocabulary the mask is all
    ``True``, because an all-``False`` mask leaves a masked sampler nothing to
    choose; this never happens for envs whose admissible actions come from
    their vocabulary.

    An index outside the space, or anything that is not an integer, raises
    ``ValueError``/``TypeError``: unlike free text from an agent, a bad index
    is a programming error.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers.action import DiscreteActions
        >>> env = DiscreteActions(gym.make("agent_envs/GuessNumber-v0"))
        >>> env.action_space
        Discrete(100)
        >>> _ = env.reset(seed=0, options={"task_id": 0})
        >>> env.action_text(49), bool(env.action_masks()[49])
        ('50', True)
    """

    def __init__(self, env: gym.Env) -> None:
        vocabulary = _vocabulary_of(env)
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ActionWrapper.__init__(self, env)
        self.vocabulary: tuple[str, ...] = vocabulary
        self.action_space = spaces.Discrete(len(vocabulary))
        self._index = {action_key(action): index for index, action in enumerate(vocabulary)}
        # Checked once: masks are asked for on every step of MaskablePPO.
        base = env.unwrapped
        self._admissible = base.admissible_actions if isinstance(base, AdmissibleActions) else None

    def action(self, action: Any) -> str:
        """Return the vocabulary text for index ``action``."""
        return self.vocabulary[self._check_index(action)]

    def action_text(self, index: Any) -> str:
        """Return the text that index ``index`` stands for."""
        return self.action(index)

    def index_of(self, action: str) -> int | None:
        """Return the index of a text action, or ``None`` if it is not in the vocabulary."""
        return self._index.get(action_key(action))

    def action_masks(self) -> np.ndarray:
        """Return a ``bool`` array: ``True`` where the vocabulary action is admissible now."""
        if self._admissible is None:
            raise ValueError(
                f"{type(self.env.unwrapped).__name__} has no admissible_actions() method (the "
                "AdmissibleActions API), so DiscreteActions cannot build action masks."
            )
        return action_mask(self._index, len(self.vocabulary), self._admissible())

    def _check_index(self, action: Any) -> int:
        if isinstance(action, np.ndarray) and action.size == 1:
            # Vector envs and predict() hand over 0-d or shape-(1,) arrays.
            action = action.reshape(()).item()
        try:
            if isinstance(action, (bool, np.bool_, str)):
                raise TypeError
            index = operator.index(action)
        except TypeError:
            raise InvalidType(
                "DiscreteActions takes an integer index into the action vocabulary, got "
                f"{type(action).__name__} {action!r:.40}. Send text to the unwrapped env instead."
            ) from None
        if not 0 <= index < len(self.vocabulary):
            raise InvalidValue(
                f"Action index {index} is outside Discrete({len(self.vocabulary)}); "
                f"pass an int in [0, {len(self.vocabulary)})."
            )
        return index
