"""Text as a fixed-size array: :class:`TextEncoder`, a pure function of the text.

Its settings round-trip through :meth:`TextEncoder.config`, so a trained agent
rebuilds the very same encoder and sees at evaluation time exactly what the
network saw in training.  :class:`wrappers.observation.EncodeObservation`
applies it to an env's observations.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from wrappers.budget import strip_budget_line
from wrappers.errors import InvalidType, InvalidValue
from wrappers.utils.validators import MAX_COUNT, check_at_most, check_bool, check_int

__all__ = ["MODES", "TextEncoder"]

#: The encodings on offer; see :class:`TextEncoder`.
MODES = ("chars", "hashing", "tokens")

# Default text lengths per mode: characters for "chars" and "hashing", tokens for "tokens".
_DEFAULT_LENGTH = {"chars": 256, "hashing": 4096, "tokens": 128}
_PAD, _UNKNOWN = 0, 1
_WORD = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
# Salts (crc32 start values) keep words and character n-grams in separate hash streams.
_WORD_SALT, _NGRAM_SALT = zlib.crc32(b"word"), zlib.crc32(b"char-ngram")
_CACHE_SIZE = 4096


def _size(value: Any, name: str) -> int:
    """Return ``value`` as an array size: an int in ``[1, MAX_COUNT]``.

    Bounded like every count (:data:`~wrappers.utils.validators.MAX_COUNT`):
    the encoder allocates arrays of this many entries, so ``10**12`` would
    fail deep inside numpy with a ``MemoryError`` (or take the machine's
    memory) instead of in one line here.
    """
    return check_at_most(check_int(value, name, 1), name, MAX_COUNT)


class TextEncoder:
    """Encode text as a fixed-size array, deterministically.

    Modes:
        ``"chars"``: the text as ``max_length`` character indices, a
            ``MultiDiscrete([len(charset) + 2] * max_length)`` array that SB3
            one-hot encodes.  Index 0 is padding, 1 is a character outside
            ``charset`` (never an error), ``2 + i`` is ``charset[i]``.  It
            keeps positions, so it suits grid envs; give a small ``charset``
            (the characters of the grid) to keep the one-hot input small.
        ``"hashing"``: a hashed bag of lower-cased words and character
            n-grams (``ngram_range``, inclusive), ``Box(0, 1, (dim,), float32)``:
            ``log1p`` counts, L2-normalised.  Hashing is ``crc32``, stable
            across processes.  It ignores positions, so it suits free text.
        ``"tokens"``: ``max_length`` token ids from ``tokenizer``, an object
            with ``encode(text, add_special_tokens=False)`` and ``len()`` (a
            transformers tokenizer, say, loaded by the caller: this module
            loads none), shifted by one so that 0 is padding:
            ``MultiDiscrete([len(tokenizer) + 1] * max_length)``.  Its
            ``name_or_path`` is what :meth:`config` saves.
            SB3's default extractor one-hot encodes this, which only suits a
            small vocabulary; with a large one, give the policy an embedding
            feature extractor.

    Cutting: with ``view_only=True`` only the text after the last blank line
    is kept.  The env contract builds every observation as intro or feedback,
    a blank line, then the current view (and a visible budget line, if any,
    right after the view), so this keeps the view and the budget line and
    drops the feedback.  Then text longer than ``max_length`` (characters; for
    ``"tokens"``, tokens) is cut: ``keep="tail"`` (the default) keeps the end,
    where the view is, and right-aligns short text so that the view sits at
    fixed positions; ``keep="head"`` keeps the start and left-aligns.

    The budget as a number: with ``budget_scale=S`` the array also carries
    the turns left, ``min(turns_left, S) / S``, as its last entry, and the
    space becomes a ``Box(0, 1)`` (``"chars"`` is one-hot encoded here, so
    that text and number share one flat vector; ``"tokens"`` refuses it).
    :meth:`encode` then needs ``turns_left``, and a visible budget line at the
    end of the text is dropped before encoding: the number carries it, and
    the view stays at fixed positions whatever the number of digits.

    The feedback too: with ``feedback_length=F`` (``"chars"`` only) the first
    ``F`` characters of the *feedback* (the text before the last blank line:
    a step's feedback, or the reset's intro) are encoded as well, left-aligned
    at fixed positions, ahead of the selected text.  Use it with
    ``view_only=True``: a memoryless policy then sees what its last action did
    (on Maze, ``You moved east.``: its heading) beside the current view.  It is
    a function of the text, so every policy that is shown the same
    observation, in training, evaluation or on a replayed reference state,
    gets the same array.

    Example:
        >>> from wrappers.text_encoder import TextEncoder
        >>> encoder = TextEncoder("chars", max_length=4, charset="ab")
        >>> encoder.encode("abz").tolist()  # right-aligned, "z" is unknown
        [0, 2, 3, 1]
        >>> TextEncoder.from_config(encoder.config()).encode("abz").tolist()
        [0, 2, 3, 1]
        >>> timed = TextEncoder("chars", max_length=1, charset="ab", budget_scale=10)
        >>> timed.encode("b", turns_left=4).tolist()  # one-hot of "b", then 4 / 10
        [0.0, 0.0, 0.0, 1.0, 0.4000000059604645]
        >>> told = TextEncoder("chars", max_length=2, charset="ab", view_only=True,
        ...                    feedback_length=3)
        >>> told.encode("ba\\n\\nb").tolist()  # feedback "ba" left-aligned, then the view "b"
        [3, 2, 0, 0, 3]
    """

    def __init__(
        self,
        mode: str = "chars",
        *,
        max_length: int | None = None,
        keep: str = "tail",
        view_only: bool = False,
        charset: str | None = None,
        dim: int = 1024,
        ngram_range: Sequence[int] = (2, 4),
        tokenizer: Any = None,
        budget_scale: int | None = None,
        feedback_length: int | None = None,
    ) -> None:
        if mode not in MODES:
            raise InvalidValue(f"mode must be one of {MODES}, got {mode!r}.")
        if mode == "tokens" and budget_scale is not None:
            raise InvalidValue(
                "budget_scale needs mode 'chars' or 'hashing': one-hot token ids would be huge."
            )
        if keep not in ("tail", "head"):
            raise InvalidValue(f"keep must be 'tail' or 'head', got {keep!r}.")
        if feedback_length is not None and mode != "chars":
            raise InvalidValue(f"feedback_length needs mode 'chars', got {mode!r}.")
        check_bool(view_only, "view_only")
        self.mode = mode
        self.keep = keep
        self.view_only = view_only
        self.max_length = _size(
            _DEFAULT_LENGTH[mode] if max_length is None else max_length, "max_length"
        )
        self.charset: str | None = None
        self.dim: int | None = None
        self.ngram_range: tuple[int, int] | None = None
        self.tokenizer_name: str | None = None
        self.feedback_length = (
            None if feedback_length is None else _size(feedback_length, "feedback_length")
        )
        self._cache: dict[str, np.ndarray] = {}
        if mode == "chars":
            self._init_chars(charset)
        elif mode == "hashing":
            self._init_hashing(dim, ngram_range)
        else:
            self._init_tokens(tokenizer)
        self.budget_scale: int | None = None
        if budget_scale is not None:
            self._init_budget(budget_scale)

    # ------------------------------------------------------------ set-up
    def _init_chars(self, charset: str | None) -> None:
        if not isinstance(charset, str) or not charset:
            raise InvalidValue(
                "mode='chars' needs charset, a non-empty str of the characters to index "
                "(EncodeObservation takes it from the env's Text space by default)."
            )
        # Duplicates would give one character two indices; keep the first.
        self.charset = "".join(dict.fromkeys(charset))
        largest = max(ord(char) for char in self.charset)
        self._table = np.full(largest + 1, _UNKNOWN, dtype=np.int64)
        for index, char in enumerate(self.charset):
            self._table[ord(char)] = index + 2
        self.space: spaces.Space = spaces.MultiDiscrete(
            np.full(self._chars_width(), len(self.charset) + 2, dtype=np.int64)
        )

    def _chars_width(self) -> int:
        """Return the number of character positions of ``"chars"``: feedback, then text."""
        return (self.feedback_length or 0) + self.max_length

    def _init_hashing(self, dim: int, ngram_range: Sequence[int]) -> None:
        self.dim = _size(dim, "dim")
        if (
            isinstance(ngram_range, (str, bytes))
            or not isinstance(ngram_range, Sequence)
            or len(ngram_range) != 2
        ):
            raise InvalidValue(f"ngram_range must be (low, high), got {ngram_range!r}.")
        low = check_int(ngram_range[0], "ngram_range[0]", 1)
        high = check_int(ngram_range[1], "ngram_range[1]", low)
        self.ngram_range = (low, high)
        self.space = spaces.Box(0.0, 1.0, shape=(self.dim,), dtype=np.float32)

    def _init_tokens(self, tokenizer: Any) -> None:
        # The bottom layer loads no tokenizer: the caller does, and passes the object.
        if isinstance(tokenizer, str):
            raise InvalidValue(
                f"mode='tokens' needs a tokenizer object, not the name {tokenizer!r}: load it "
                "first (transformers' AutoTokenizer.from_pretrained(path, "
                "local_files_only=True) does) and pass the object."
            )
        if not callable(getattr(tokenizer, "encode", None)) or not hasattr(tokenizer, "__len__"):
            raise InvalidValue(
                "mode='tokens' needs tokenizer: an object with encode(text, "
                "add_special_tokens=False) and len(), such as a loaded Hugging Face tokenizer."
            )
        name = getattr(tokenizer, "name_or_path", None)
        self.tokenizer_name = name if isinstance(name, str) and name else None
        self._tokenizer = tokenizer
        self.space = spaces.MultiDiscrete(
            np.full(self.max_length, len(tokenizer) + 1, dtype=np.int64)
        )

    def _init_budget(self, budget_scale: int) -> None:
        self.budget_scale = check_int(budget_scale, "budget_scale", 1)
        if self.mode == "chars":
            self._categories = len(self.charset) + 2
            width = self._chars_width() * self._categories
        else:
            width = self.dim
        self.space = spaces.Box(0.0, 1.0, shape=(width + 1,), dtype=np.float32)

    # ---------------------------------------------------------- encoding
    def select(self, text: str) -> str:
        """Return the part of ``text`` that is encoded (before the length cut).

        With ``feedback_length`` the feedback is encoded as well: see :meth:`feedback`.
        """
        text = self._without_budget_line(text)
        if self.view_only:
            text = text.rsplit("\n\n", 1)[-1]
        if self.mode != "tokens" and len(text) > self.max_length:
            text = text[-self.max_length :] if self.keep == "tail" else text[: self.max_length]
        return text

    def feedback(self, text: str) -> str:
        """Return the feedback that ``feedback_length`` encodes: the text before the last
        blank line, cut to ``feedback_length`` characters (empty without a blank line)."""
        head, blank, _ = self._without_budget_line(text).rpartition("\n\n")
        return head[: self.feedback_length] if blank and self.feedback_length else ""

    def _without_budget_line(self, text: str) -> str:
        if not isinstance(text, str):
            raise InvalidType(f"TextEncoder encodes str, got {type(text).__name__}.")
        return strip_budget_line(text) if self.budget_scale is not None else text

    def encode(self, text: str, turns_left: int | None = None) -> np.ndarray:
        """Return the array for ``text``; it always lies in :attr:`space`.

        ``turns_left`` is needed (and only used) with ``budget_scale``.
        """
        cached = self._cache.get(text)
        if cached is None:
            if self.mode == "chars":
                cached = self._encode_chars(self.select(text))
                if self.feedback_length:
                    told = np.zeros(self.feedback_length, dtype=np.int64)
                    codes = self._char_codes(self.feedback(text))
                    told[: len(codes)] = codes
                    cached = np.concatenate([told, cached])
                if self.budget_scale is not None:
                    cached = np.eye(self._categories, dtype=np.float32)[cached].ravel()
            elif self.mode == "hashing":
                cached = self._encode_hashing(self.select(text))
            else:
                cached = self._encode_tokens(self.select(text))
            cached.setflags(write=False)
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[text] = cached
        if self.budget_scale is None:
            return cached.copy()
        if turns_left is None:
            raise InvalidValue(
                "This encoder shows the turns left as a number (budget_scale) and needs "
                "turns_left: put a TurnBudget or BudgetMix inside EncodeObservation, or pass "
                "info['turns_left']."
            )
        left = min(max(int(turns_left), 0), self.budget_scale) / self.budget_scale
        return np.append(cached, np.float32(left))

    def encode_batch(
        self, texts: Sequence[str], turns_left: Sequence[int | None] | None = None
    ) -> np.ndarray:
        """Return the stacked arrays for ``texts`` (with per-text ``turns_left``, if given)."""
        lefts = [None] * len(texts) if turns_left is None else list(turns_left)
        return np.stack([self.encode(text, left) for text, left in zip(texts, lefts, strict=True)])

    def _place(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros(self.max_length, dtype=np.int64)
        if self.keep == "tail":
            out[self.max_length - len(values) :] = values
        else:
            out[: len(values)] = values
        return out

    def _char_codes(self, text: str) -> np.ndarray:
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        inside = codes < len(self._table)
        values = np.full(len(codes), _UNKNOWN, dtype=np.int64)
        values[inside] = self._table[codes[inside]]
        return values

    def _encode_chars(self, text: str) -> np.ndarray:
        return self._place(self._char_codes(text))

    def _encode_hashing(self, text: str) -> np.ndarray:
        text = text.lower()
        counts = np.zeros(self.dim, dtype=np.float64)
        for word in _WORD.findall(text):
            counts[zlib.crc32(word.encode(), _WORD_SALT) % self.dim] += 1.0
        low, high = self.ngram_range
        data = text.encode("utf-8", "replace")
        for n in range(low, high + 1):
            for start in range(len(data) - n + 1):
                counts[zlib.crc32(data[start : start + n], _NGRAM_SALT) % self.dim] += 1.0
        features = np.log1p(counts)
        norm = float(np.linalg.norm(features))
        if norm > 0:
            features /= norm
        # Rounding can push a lone feature a hair above 1.0, outside the Box.
        return np.clip(features, 0.0, 1.0).astype(np.float32)

    def _encode_tokens(self, text: str) -> np.ndarray:
        ids = list(self._tokenizer.encode(text, add_special_tokens=False))
        if len(ids) > self.max_length:
            ids = ids[-self.max_length :] if self.keep == "tail" else ids[: self.max_length]
        return self._place(np.asarray(ids, dtype=np.int64) + 1)

    # ----------------------------------------------------------- settings
    def config(self) -> dict[str, Any]:
        """Return the JSON-serialisable settings that :meth:`from_config` rebuilds exactly."""
        config: dict[str, Any] = {
            "mode": self.mode,
            "max_length": self.max_length,
            "keep": self.keep,
            "view_only": self.view_only,
        }
        if self.mode == "chars":
            config["charset"] = self.charset
        elif self.mode == "hashing":
            config["dim"] = self.dim
            config["ngram_range"] = list(self.ngram_range)
        else:
            if self.tokenizer_name is None:
                raise InvalidValue(
                    "This tokenizer has no name_or_path, so the encoding cannot be saved; "
                    "load it by name or local path, which it then records."
                )
            config["tokenizer"] = self.tokenizer_name
        if self.budget_scale is not None:
            config["budget_scale"] = self.budget_scale
        if self.feedback_length is not None:
            config["feedback_length"] = self.feedback_length
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any], tokenizer: Any = None) -> TextEncoder:
        """Rebuild an encoder from :meth:`config` output (for example, a JSON sidecar).

        A ``"tokens"`` config names its tokenizer; load that tokenizer and
        pass the object as ``tokenizer`` (other modes ignore it).  The
        rebuilt encoder's :meth:`config` names the tokenizer as ``config`` did.
        """
        if not isinstance(config, dict) or "mode" not in config:
            raise InvalidValue(f"An encoder config is a dict with a 'mode', got {config!r:.80}.")
        known = {
            "mode", "max_length", "keep", "view_only", "charset", "dim", "ngram_range",
            "budget_scale", "feedback_length",
        }  # fmt: skip
        unknown = set(config) - known - {"tokenizer"}
        if unknown:
            raise InvalidValue(
                f"Unknown encoder settings {sorted(unknown)}; known: {sorted(known)}."
            )
        settings = dict(config)
        name = settings.pop("tokenizer", None)
        if isinstance(settings.get("ngram_range"), list):  # JSON has no tuples
            settings["ngram_range"] = tuple(settings["ngram_range"])
        if settings["mode"] != "tokens":
            return cls(**settings)
        if tokenizer is None or isinstance(tokenizer, str):
            raise InvalidValue(
                f"This 'tokens' config names the tokenizer {name!r}: load it first "
                "(transformers' AutoTokenizer.from_pretrained(path, local_files_only=True) "
                "does) and pass the object, TextEncoder.from_config(config, tokenizer=...)."
            )
        encoder = cls(**settings, tokenizer=tokenizer)
        if isinstance(name, str) and name:
            encoder.tokenizer_name = name
        return encoder
