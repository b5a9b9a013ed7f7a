"""ShowActions: append the admissible actions to every observation."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium import spaces

from wrappers._core.text_space import TextSpace
from wrappers._core.validators import check_int
from wrappers.protocol import AdmissibleActions

__all__ = ["ShowActions"]

_HEADER = "Admissible actions: "
_NONE = "(none)"
#: Room for the "... (N more)" note that a cut list ends with (N below 10**12).
_MORE_MAX = len(f"... ({10**12} more)")
#: The list length allowed when the env has no finite action vocabulary.
DEFAULT_MAX_CHARS = 4096


class ShowActions(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """Append a line listing the admissible actions to each observation.

    This is the ALFWorld-style prompt: after the env's text comes a blank line
    and ``Admissible actions: a, b, c``, read from the unwrapped env's
    ``admissible_actions()`` at every ``reset`` and ``step``.

    The list is cut to ``max_chars`` characters, whole actions only, and then
    ends with ``... (N more)``, so observations always stay inside the
    ``observation_space``, whose ``max_length`` grows by exactly the room the
    line can take.  By default ``max_chars`` is the length of the env's whole
    ``action_vocabulary`` (so an env with a finite vocabulary is never cut),
    or 4096 where there is none.  Characters outside the observation charset
    are shown as ``?``.

    Args:
        env: the env to wrap; its unwrapped env must have ``admissible_actions()``.
        separator: what goes between two actions.
        max_chars: the longest the list may be, or ``None`` for the default.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers.show_actions import ShowActions
        >>> env = ShowActions(gym.make("agent_envs/GuessNumber-v0", max_number=5))
        >>> observation, _ = env.reset(seed=0, options={"task_id": 0})
        >>> observation.splitlines()[-1]
        'Admissible actions: 1, 2, 3, 4, 5'
    """

    def __init__(self, env: gym.Env, separator: str = ", ", max_chars: int | None = None) -> None:
        base = env.unwrapped
        if not isinstance(base, AdmissibleActions):
            raise ValueError(
                f"{type(base).__name__} has no admissible_actions() method, so ShowActions "
                "has nothing to show."
            )
        inner = env.observation_space
        if not isinstance(inner, spaces.Text):
            raise TypeError(
                f"ShowActions needs a Text observation space, got {type(inner).__name__}."
            )
        if not isinstance(separator, str) or not separator:
            raise ValueError(f"separator must be a non-empty str, got {separator!r}.")
        if any(char not in inner.character_set for char in separator):
            raise ValueError(f"separator {separator!r} has characters outside the charset.")
        if max_chars is None:
            max_chars = _vocabulary_length(base, separator)
        else:
            max_chars = check_int(max_chars, "max_chars (or None)", 1)
        gym.utils.RecordConstructorArgs.__init__(self, separator=separator, max_chars=max_chars)
        gym.Wrapper.__init__(self, env)
        self.separator = separator
        self.max_chars = max_chars
        self._charset = frozenset(inner.character_set)
        extra = len("\n\n") + len(_HEADER) + max(max_chars, len(_NONE)) + len(separator) + _MORE_MAX
        self.observation_space = TextSpace(
            max_length=inner.max_length + extra,
            min_length=inner.min_length,
            charset=inner.character_set,
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        return self._decorate(observation), info

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return self._decorate(observation), reward, terminated, truncated, info

    def _decorate(self, observation: str) -> str:
        actions = self.env.unwrapped.admissible_actions()
        return f"{observation}\n\n{_HEADER}{self.action_list(actions)}"

    def action_list(self, actions: list[str]) -> str:
        """Return ``actions`` as the wrapper shows them: joined, cleaned and cut to fit."""
        if not actions:
            return _NONE
        shown: list[str] = []
        length = 0
        for index, action in enumerate(actions):
            clean = "".join(ch if ch in self._charset and ch != "\n" else "?" for ch in action)
            added = len(clean) + (len(self.separator) if shown else 0)
            if length + added > self.max_chars:
                more = f"{self.separator if shown else ''}... ({len(actions) - index} more)"
                return self.separator.join(shown) + more
            shown.append(clean)
            length += added
        return self.separator.join(shown)


def _vocabulary_length(base: gym.Env, separator: str) -> int:
    """Return the length of the whole action vocabulary as one list, or the default."""
    vocabulary = getattr(base, "action_vocabulary", None)
    if not vocabulary:
        return DEFAULT_MAX_CHARS
    return sum(len(action) for action in vocabulary) + len(separator) * (len(vocabulary) - 1)
