"""Observation wrappers: what the agent sees.

* :class:`EncodeObservation` turns text observations into arrays that classic
  RL libraries accept.  The encoding itself is
  :class:`wrappers.text_encoder.TextEncoder`'s.
* :class:`ImageObservation` puts the env's ``rgb_array`` frame beside the
  text, for vision-language agents.
* :class:`ShowActions` appends the admissible actions to every observation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from wrappers.action import expose_action_masks
from wrappers.errors import InvalidType, InvalidValue
from wrappers.protocol import TURNS_LEFT, AdmissibleActions, CompactView
from wrappers.text_encoder import TextEncoder
from wrappers.utils.text_space import TextSpace
from wrappers.utils.validators import check_bool, check_int

__all__ = [
    "IMAGE",
    "LAYOUTS",
    "TEXT",
    "EncodeObservation",
    "ImageObservation",
    "ShowActions",
]


#: How EncodeObservation hands the array over; see :class:`EncodeObservation`.
LAYOUTS = ("array", "box", "dict")
#: The keys of ``layout="dict"``, RLlib's action-masking convention (TorchRL's
#: ``ActionMask`` reads ``"action_mask"`` by default too).
OBSERVATIONS_KEY, ACTION_MASK_KEY = "observations", "action_mask"


def _check_layout(layout: str, mode: str) -> None:
    if layout not in LAYOUTS:
        raise InvalidValue(f"layout must be one of {LAYOUTS}, got {layout!r}.")
    if layout != "array" and mode == "tokens":
        raise InvalidValue(
            f"layout={layout!r} needs mode 'chars' or 'hashing': one-hot token ids would be huge."
        )


def _text_charset(space: spaces.Space) -> str:
    """The characters a ``Text`` observation space can emit, for mode='chars'."""
    if not isinstance(space, spaces.Text):
        raise InvalidValue(
            f"mode='chars' needs charset= when the observation space is not Text, got {space}."
        )
    return "".join(sorted(space.character_set))


def _view_settings(env: gym.Env, mode: str, given: dict, whole_text: bool) -> dict:
    """Return the view settings to encode with: the ones given, else the env's compact view.

    The compact view is the default for ``mode="chars"`` on an env that
    declares ``compact_view()``, when no view setting is given and
    ``whole_text`` is off.
    """
    chosen = {name: value for name, value in given.items() if value is not None}
    compact: dict[str, Any] = {}
    if mode == "chars" and not chosen and not whole_text and isinstance(env.unwrapped, CompactView):
        compact = dict(env.unwrapped.compact_view())
    return {**given, "keep": "tail", "view_only": False, **compact, **chosen}


class EncodeObservation(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Replace each text observation by :class:`TextEncoder`'s array.

    The arguments are :class:`TextEncoder`'s.  With ``budget_scale`` the
    turns left come from ``info["turns_left"]`` (a ``TurnBudget`` or
    ``BudgetMix`` inside this wrapper provides it).

    What is encoded: for ``mode="chars"`` on an env that declares
    ``compact_view()`` (``CompactView``), and where none of ``max_length``,
    ``keep``, ``view_only``, ``charset`` and ``feedback_length`` is given,
    the compact view is the default: FrozenLake's 4x4 map in ``FHSG@`` is 217
    one-hot inputs where its whole text is 25,088.  ``whole_text=True`` (or
    any of those settings) encodes the whole text instead.
    Otherwise the charset defaults to the env's ``Text`` observation charset
    (sorted), so that no emitted character is unknown.  The encoder's settings
    are :meth:`encoder_config`; an agent rebuilds the same encoder from them.

    ``layout`` says how the array is handed over.  ``"array"`` (the default)
    is :class:`TextEncoder`'s array in its own space.  ``"box"`` is a flat
    ``Box(0, 1, float32)`` that any MLP takes as it is: a ``"chars"`` array is
    one-hot encoded (as with ``budget_scale``), a ``Box`` is left alone, and
    ``"tokens"`` is refused (the one-hot vector would be huge).  ``"dict"`` is
    ``Dict({"observations": <the "box" array>, "action_mask": MultiBinary(n)})``,
    the form RLlib's action-masking module and TorchRL's ``ActionMask`` read;
    the mask is the ``action_masks()`` of a ``DiscreteActions`` below this
    wrapper (as ``int8``, 1 where the action is admissible), which it needs.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers.observation import EncodeObservation
        >>> env = EncodeObservation(gym.make("agent_envs/GuessNumber-v0"), "hashing", dim=64)
        >>> observation, _ = env.reset(seed=0)
        >>> observation.shape, observation.dtype
        ((64,), dtype('float32'))
        >>> from wrappers import DiscreteActions
        >>> masked = EncodeObservation(DiscreteActions(gym.make("agent_envs/FrozenLake-v0")),
        ...                            "chars", max_length=20, layout="dict")
        >>> observation, _ = masked.reset(seed=0, options={"task_id": 0})
        >>> observation["observations"].shape, observation["action_mask"].tolist()
        ((1960,), [1, 1, 1, 0])
    """

    def __init__(
        self,
        env: gym.Env,
        mode: str = "chars",
        *,
        max_length: int | None = None,
        keep: str | None = None,
        view_only: bool | None = None,
        charset: str | None = None,
        dim: int = 1024,
        ngram_range: Sequence[int] = (2, 4),
        tokenizer: Any = None,
        budget_scale: int | None = None,
        feedback_length: int | None = None,
        layout: str = "array",
        whole_text: bool = False,
    ) -> None:
        _check_layout(layout, mode)
        check_bool(whole_text, "whole_text")
        given = dict(max_length=max_length, keep=keep, view_only=view_only, charset=charset,
                     feedback_length=feedback_length)  # fmt: skip
        view = _view_settings(env, mode, given, whole_text)
        max_length, keep, view_only = view["max_length"], view["keep"], view["view_only"]
        charset, feedback_length = view["charset"], view["feedback_length"]
        if mode == "chars" and charset is None:
            charset = _text_charset(env.observation_space)
        # One dict for the encoder and the record, so the recorded settings are
        # always the ones the encoder was built with.
        settings = dict(max_length=max_length, keep=keep, view_only=view_only, charset=charset,
                        dim=dim, ngram_range=ngram_range, tokenizer=tokenizer,
                        budget_scale=budget_scale, feedback_length=feedback_length)  # fmt: skip
        encoder = TextEncoder(mode, **settings)
        settings["ngram_range"] = tuple(ngram_range)  # recorded as a copy the caller cannot change
        gym.utils.RecordConstructorArgs.__init__(
            self, mode=mode, **settings, layout=layout, whole_text=whole_text
        )
        gym.Wrapper.__init__(self, env)
        expose_action_masks(self)
        self.encoder = encoder
        self.layout = layout
        self.observation_space = self._space()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        return self._observation(observation, info), info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return self._observation(observation, info), reward, terminated, truncated, info

    def _space(self) -> spaces.Space:
        space = self.encoder.space
        if self.layout == "array" or isinstance(space, spaces.Box):
            box = space
        else:  # "chars" without budget_scale: one-hot, as budget_scale does
            width = int(space.nvec.size * space.nvec[0])
            box = spaces.Box(0.0, 1.0, shape=(width,), dtype=np.float32)
        if self.layout != "dict":
            return box
        if not hasattr(self, "action_masks"):
            raise InvalidValue(
                "layout='dict' carries an action mask: put a DiscreteActions inside "
                "EncodeObservation."
            )
        size = int(self.action_space.n)
        return spaces.Dict({OBSERVATIONS_KEY: box, ACTION_MASK_KEY: spaces.MultiBinary(size)})

    def _observation(self, text: str, info: dict[str, Any]) -> Any:
        encoded = self.encoder.encode(text, info.get(TURNS_LEFT))
        if self.layout == "array":
            return encoded
        if encoded.dtype != np.float32:  # "chars" indices: one-hot, flat
            categories = int(self.encoder.space.nvec[0])
            encoded = np.eye(categories, dtype=np.float32)[encoded].ravel()
        if self.layout == "box":
            return encoded
        mask = np.asarray(self.action_masks(), dtype=np.int8)
        return {OBSERVATIONS_KEY: encoded, ACTION_MASK_KEY: mask}

    def encoder_config(self) -> dict[str, Any]:
        """Return the encoder's JSON-serialisable settings (see :meth:`TextEncoder.config`)."""
        return self.encoder.config()


#: The keys of the observation dict.
TEXT, IMAGE = "text", "image"


class ImageObservation(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Make each observation ``{"text": <the text>, "image": <render()>}``.

    The env must be made with ``render_mode="rgb_array"`` and draw frames of a
    fixed shape, which its unwrapped env's ``image_shape()`` gives; the space
    becomes ``Dict(text=<the inner space>, image=Box(0, 255, shape, uint8))``.
    The frame is taken after each ``reset`` and ``step``, so it shows the
    state the text describes.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers.observation import ImageObservation
        >>> env = ImageObservation(gym.make("agent_envs/Sokoban-v0", render_mode="rgb_array"))
        >>> observation, _ = env.reset(seed=0, options={"task_id": 0})
        >>> observation["image"].shape, observation["image"].dtype, observation["text"][:7]
        ((96, 96, 3), dtype('uint8'), 'Sokoban')
    """

    def __init__(self, env: gym.Env) -> None:
        if env.render_mode != "rgb_array":
            raise InvalidValue(
                "ImageObservation needs an env made with render_mode='rgb_array', got "
                f"{env.render_mode!r}."
            )
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        expose_action_masks(self)
        shape = tuple(env.unwrapped.image_shape())
        self.observation_space = spaces.Dict(
            {TEXT: env.observation_space, IMAGE: spaces.Box(0, 255, shape, dtype=np.uint8)}
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        text, info = self.env.reset(seed=seed, options=options)
        return {TEXT: text, IMAGE: self.env.render()}, info

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        text, reward, terminated, truncated, info = self.env.step(action)
        return {TEXT: text, IMAGE: self.env.render()}, reward, terminated, truncated, info


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
        >>> from wrappers.observation import ShowActions
        >>> env = ShowActions(gym.make("agent_envs/GuessNumber-v0", max_number=5))
        >>> observation, _ = env.reset(seed=0, options={"task_id": 0})
        >>> observation.splitlines()[-1]
        'Admissible actions: 1, 2, 3, 4, 5'
    """

    def __init__(self, env: gym.Env, separator: str = ", ", max_chars: int | None = None) -> None:
        base = env.unwrapped
        if not isinstance(base, AdmissibleActions):
            raise InvalidValue(
                f"{type(base).__name__} has no admissible_actions() method, so ShowActions "
                "has nothing to show."
            )
        inner = env.observation_space
        if not isinstance(inner, spaces.Text):
            raise InvalidType(
                f"ShowActions needs a Text observation space, got {type(inner).__name__}."
            )
        if not isinstance(separator, str) or not separator:
            raise InvalidValue(f"separator must be a non-empty str, got {separator!r}.")
        if any(char not in inner.character_set for char in separator):
            raise InvalidValue(f"separator {separator!r} has characters outside the charset.")
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
