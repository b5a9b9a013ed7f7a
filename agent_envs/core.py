"""The base class every agent_envs environment builds on.

:class:`TextEnv` owns everything the design contract makes common: the ``Text``
spaces, the split between *tasks* (fixed by ``task_id``) and *seeds* (in-episode
randomness), lenient action parsing, invalid actions that use up the turn, the
success-only reward, the info keys, and the never-truncate rule.  A family only
describes its own world through a handful of hooks.
"""

from __future__ import annotations

import hashlib
import re
import string
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding as gym_seeding

from wrappers.errors import InvalidValue
from wrappers.protocol import DEAD_END, SUCCESS, TASK_ID, VALID_ACTION
from wrappers.utils import seeding
from wrappers.utils.text_space import TextSpace
from wrappers.utils.validators import check_int

__all__ = [
    "CHARSET",
    "EXAMPLE_POOL",
    "FIRST_EXAMPLE_ID",
    "MAX_TASK_ID",
    "TextEnv",
    "normalize_action",
    "parse_bracket_call",
    "sanitize",
]

#: Every character an env may emit or an agent may send inside the action space:
#: printable ASCII plus newline.  Agents may still send anything; characters
#: outside the charset make an action invalid, never a crash.
CHARSET: str = "".join(sorted(set(string.printable) - set("\t\r\x0b\x0c")))

#: Task ids are drawn from ``[0, MAX_TASK_ID)`` when ``reset`` is not given one.
MAX_TASK_ID: int = 2**31 - 1
#: How many task ids at the top of the id space are reserved for few-shot examples.
EXAMPLE_POOL: int = 32
#: The lowest reserved example id: clients, evaluation and training use lower ids.
FIRST_EXAMPLE_ID: int = MAX_TASK_ID - EXAMPLE_POOL

_CHARSET_SET = frozenset(CHARSET)
_ACTION_PREFIXES = ("action:", "action :")
#: Distinct action texts whose parse an env remembers (at most about 1 MB).  It
#: covers the largest action vocabulary (Household-Large, 4,180 commands) in
#: practice; past it, new texts are parsed without being remembered, so free-form
#: agent text cannot grow the memo, and a full memo costs no churn.
_MOVE_MEMO_SIZE = 4096

TaskT = TypeVar("TaskT")
#: Public attributes that do not shape the task (see ``TextEnv.instance_key``).
_NOT_SHAPING = frozenset({TASK_ID, "render_mode", "stochastic"})
_UNPARSED = object()  # a memo miss; None is a remembered unparsable action


def sanitize(text: str, limit: int = 40) -> str:
    """Return ``text`` cut to ``limit`` characters with non-charset characters as ``?``.

    Feedback that quotes the agent's action goes through this, so that whatever
    the agent sends, the observation stays inside the observation space.
    """
    cut = text if len(text) <= limit else text[: limit - 3] + "..."
    return "".join(ch if ch in _CHARSET_SET and ch != "\n" else "?" for ch in cut)


def normalize_action(action: str) -> str:
    """Canonicalise agent text: strip, drop a leading ``Action:``, fold case and spaces.

    >>> normalize_action("  Action:   Move   LEFT \\n")
    'move left'
    """
    text = action.strip().lower()
    for prefix in _ACTION_PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix) :]
            break
    text = " ".join(text.split())
    # Agents often quote or punctuate the action ("`up`", "up."); drop that wrapping.
    return text.strip("`'\".").strip()


_BRACKET_CALL = re.compile(r"^([a-z_]+)\s*\[(.*)\]$", re.S)


def parse_bracket_call(action: str, verbs: frozenset[str]) -> tuple[str, str] | None:
    """Split a normalised ``verb[argument]`` tool call, as WebShop-style envs use.

    Returns ``None`` for an unknown verb or an empty argument.

    >>> parse_bracket_call("search [red mug]", frozenset({"search", "click"}))
    ('search', 'red mug')
    """
    match = _BRACKET_CALL.match(action)
    if match is None or match.group(1) not in verbs or not match.group(2).strip():
        return None
    return match.group(1), match.group(2).strip()


class TextEnv(gym.Env[str, str], Generic[TaskT]):
    """Base class for turn-based text environments with verifiable success.

    Subclasses implement the hooks below.  The base class turns them into the
    Gymnasium API and guarantees the environment contract (the README's
    "Environments" section; the info keys and the oracle API are spelled in
    code in :mod:`wrappers.protocol`):

    * ``reset(seed=s, options={"task_id": i})`` builds task ``i`` from ``i``
      alone (``_make_task`` gets a generator derived from the family and ``i``);
      ``s`` seeds only ``self.np_random``, the in-episode randomness.
    * ``step`` accepts any string.  Over-long, unparsable or illegal actions
      leave the state unchanged, return short feedback and use up the turn.
      A non-``str`` action raises ``TypeError``.
    * The reward is ``1.0`` on the step that reaches success, else ``0.0``.
    * ``terminated`` is set on success or on a failure the env ends; an env
      never truncates.

    Hooks for subclasses:
        _make_task(task_id, rng): build the immutable task instance.  The last
            task is cached, so K attempts at one task build it once; a task
            object may memoise oracle results on itself.  ``rng`` is ``None``
            in a family that sets ``uses_task_rng = False``.
        _start(task): set the mutable episode state from the task.
        _intro(): the goal and action format, in plain words.
        _view(): the current view of the world.
        _parse(action): a normalised action string to a move, or ``None``.  It
            must be a pure function of the action and the constructor's
            arguments, returning an immutable move: ``step`` memoises it.
        _apply(move): carry out the move; return ``(feedback, valid)``.
        _is_success(), _is_failure(): terminal conditions.
        _is_dead_end(): success no longer reachable (default: ``_is_failure()``).
        admissible_actions(), oracle_actions(), oracle_turns(): the oracle API.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    #: Upper bound on the length of any observation; subclasses raise it if needed.
    max_observation_length: ClassVar[int] = 4096
    #: Actions longer than this are invalid (not a crash).
    max_action_length: ClassVar[int] = 256
    #: Canonical discrete actions for RL libraries, or ``None`` where the set is open.
    action_vocabulary: tuple[str, ...] | None = None
    #: A short hint shown when an action cannot be parsed.
    action_format: ClassVar[str] = ""
    #: True when the same state and action can lead to different outcomes (the
    #: seed matters).  The oracle tests replay only deterministic envs exactly.
    stochastic: bool = False
    #: The number of distinct tasks, where it is finite enough to matter: task
    #: ids then repeat instances, and the evaluator warns when asked for more
    #: tasks than this.  ``None``: too many to repeat in any evaluation.
    task_supply: int | None = None
    #: False in a family that builds its task without the task generator (plain
    #: arithmetic on ``task_id``, or ``seeding.first_integer`` on the task stream's
    #: key): its ``_make_task`` gets ``rng=None``, which saves building a generator.
    uses_task_rng: ClassVar[bool] = True
    #: True when the oracle reads what the agent cannot see (a hidden map, hidden
    #: object locations): its figures then measure access to information as
    #: much as decision making, and the evaluator marks them.
    privileged_oracle: ClassVar[bool] = False
    #: Whether the family overrides ``_is_failure`` or ``_is_dead_end`` (set per subclass).
    _can_fail: ClassVar[bool] = True
    _task_salt: ClassVar[int] = seeding.name_salt("TextEnv")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The family name salts the task stream so that task 7 of two families
        # are unrelated; crc32 is stable across processes, unlike hash().
        cls._task_salt = seeding.name_salt(cls.__name__)
        # A family that keeps the default failure hooks never fails, and step
        # can skip asking: the hooks cost more than the rest of the info dict.
        cls._can_fail = (
            cls._is_failure is not TextEnv._is_failure
            or cls._is_dead_end is not TextEnv._is_dead_end
        )

    def __init__(self, render_mode: str | None = None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise InvalidValue(
                f"render_mode must be one of {self.metadata['render_modes']} or None, "
                f"got {render_mode!r}."
            )
        self.render_mode = render_mode
        self.observation_space = TextSpace(
            max_length=self.max_observation_length, min_length=0, charset=CHARSET
        )
        self.action_space = spaces.Text(
            max_length=self.max_action_length, min_length=0, charset=CHARSET
        )
        self.task_id: int | None = None
        self._task: TaskT | None = None
        self._moves: dict[str, Any] = {}  # action text -> parsed move (see _parse)
        self._success = False

    # ------------------------------------------------------------------ hooks
    def _make_task(self, task_id: int, rng: np.random.Generator | None) -> TaskT:
        raise NotImplementedError

    def _start(self, task: TaskT) -> None:
        raise NotImplementedError

    def _intro(self) -> str:
        raise NotImplementedError

    def _view(self) -> str:
        raise NotImplementedError

    def _parse(self, action: str) -> Any | None:
        raise NotImplementedError

    def _apply(self, move: Any) -> tuple[str, bool]:
        raise NotImplementedError

    def _is_success(self) -> bool:
        raise NotImplementedError

    def _is_failure(self) -> bool:
        return False

    def _is_dead_end(self) -> bool:
        return self._is_failure()

    def parse_action(self, action: str) -> Any | None:
        """Return the move the env reads in ``action``, or ``None`` if it reads none.

        A pure function of the text (the state is not consulted), so that two
        spellings of one move compare equal: the evaluator's diagnostics use it
        to judge "guess 50" as the oracle's "50".  Part of the
        :class:`~wrappers.protocol.ActionParser` API.
        """
        return self._parse(normalize_action(action))

    def admissible_actions(self) -> list[str]:
        """Return the legal actions in the current state."""
        raise NotImplementedError

    def oracle_actions(self) -> list[str]:
        """Return the actions on some optimal path to success; empty in a dead end."""
        raise NotImplementedError

    def oracle_turns(self) -> int | None:
        """Return the fewest turns to success from now, or ``None`` if unreachable."""
        raise NotImplementedError

    def instance_key(self) -> str:
        """Return a short key of the current task's *instance*: equal keys, identical tasks.

        Two task ids can build the same instance (GuessNumber-20 has 20, Hanoi-3
        has 6), so disjointness between few-shot examples, training and
        evaluation is checked on these keys, not on ids.  The key hashes the
        family, its task-shaping arguments (the public scalar attributes set
        in ``__init__``, such as ``max_number``) and :meth:`_instance_data`.
        Memoised oracle results are no part of it: it is the same before and
        after an episode.

        >>> import gymnasium as gym
        >>> env = gym.make("agent_envs/GuessNumber-20-v0").unwrapped
        >>> keys = []
        >>> for task_id in (2147483644, 2147483640):  # both build secret 5
        ...     _ = env.reset(options={"task_id": task_id})
        ...     keys.append(env.instance_key())
        >>> keys[0] == keys[1], len(keys[0])
        (True, 16)
        """
        shape = sorted(
            (name, value)
            for name, value in vars(self).items()
            if not name.startswith("_")
            and name not in _NOT_SHAPING
            and isinstance(value, (bool, int, float, str))
        )
        text = f"{type(self).__name__}|{shape!r}|{self._instance_data()!r}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _instance_data(self) -> Any:
        """Return what identifies the current task: by default the task object itself.

        Its ``repr`` must be deterministic and leave out memoised results (task
        dataclasses mark such fields ``repr=False``).  Override where the task
        object holds more than the instance.
        """
        return self.task

    def answer(self) -> str | None:
        """Return the hidden answer of the task (a word, a number), or ``None`` if it has none.

        For people: ``agent-envs play`` reveals it when an episode ends
        unsolved.  Tasks whose goal is in plain view (a maze, a Sokoban level)
        have none.  Agents never see it.
        """
        return None

    # -------------------------------------------------------------- gym API
    @property
    def task(self) -> TaskT:
        """The current task instance (read-only by convention)."""
        if self._task is None:
            raise gym.error.ResetNeeded("Call reset() before using the environment.")
        return self._task

    def _task_generator(self, task_id: int) -> np.random.Generator:
        return seeding.stream(self._task_salt, task_id)

    # Gymnasium builds the episode generator in ``reset(seed=...)``, but most
    # episodes never draw from it (an evaluator passes the task id), and building
    # one costs more than the rest of a reset.  So ``reset`` keeps the seed, and
    # the generator is built on first use from that seed: the same stream.  A
    # reset that draws its task id from a fresh seed takes that one number
    # without a generator (``seeding.first_integer``); a generator built after
    # it skips the draw.  ``_np_random`` stays readable, as Gymnasium's checker reads it.
    _lazy_rng: np.random.Generator | None = None
    _lazy_seed: int | None = None
    _lazy_drawn: bool = False

    @property
    def _np_random(self) -> np.random.Generator | None:  # type: ignore[override]
        if self._lazy_rng is None and self._lazy_seed is not None:
            self._lazy_rng = seeding.episode_generator(self._lazy_seed)
            if self._lazy_drawn:
                self._lazy_rng.integers(0, MAX_TASK_ID)
            self._lazy_seed = None
        return self._lazy_rng

    @_np_random.setter
    def _np_random(self, value: np.random.Generator | None) -> None:
        self._lazy_rng, self._lazy_seed = value, None

    def _seed(self, seed: int) -> None:
        """Do what ``gymnasium.Env.reset(seed=seed)`` does, leaving the generator for later."""
        if type(seed) is not int or seed < 0:
            gym_seeding.np_random(seed)  # raises Gymnasium's own error for a bad seed
        self._lazy_rng, self._lazy_seed, self._lazy_drawn = None, seed, False
        self._np_random_seed = seed

    def _draw_task_id(self) -> int:
        """Draw a task id from the episode generator, as ``np_random.integers`` would."""
        if self._lazy_rng is None and self._lazy_seed is not None and not self._lazy_drawn:
            self._lazy_drawn = True
            return seeding.first_integer(MAX_TASK_ID, self._lazy_seed)
        return int(self.np_random.integers(0, MAX_TASK_ID))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        if seed is not None:
            self._seed(seed)
        task_id = (options or {}).get(TASK_ID)
        if task_id is None:
            task_id = self._draw_task_id()
        else:
            task_id = check_int(task_id, f"options[{TASK_ID!r}]", 0, MAX_TASK_ID - 1)
        # The cache lives on the instance, whose task-shaping arguments are fixed,
        # so the task id alone identifies the task.
        if task_id != self.task_id or self._task is None:
            rng = self._task_generator(task_id) if self.uses_task_rng else None
            self._task = self._make_task(task_id, rng)
        self.task_id = task_id
        self._start(self._task)
        self._success = False
        observation = f"{self._intro()}\n\n{self._view()}"
        return observation, {TASK_ID: task_id, SUCCESS: False}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(
                f"Actions must be str, got {type(action).__name__}. "
                "Wrap the env with wrappers.DiscreteActions to act with indices."
            )
        if self._task is None:
            raise gym.error.ResetNeeded("Call reset() before step().")
        # Agents repeat a small set of actions, so the parse is memoised on the
        # raw text: normalising and parsing cost more than the move itself.
        move = self._moves.get(action, _UNPARSED)
        if move is _UNPARSED:
            move = self._parse_new(action)
        if move is None:
            feedback, valid = self._unparsable_feedback(action), False
        else:
            feedback, valid = self._apply(move)
        reward = 0.0
        success = self._success
        if not success and self._is_success():
            self._success = success = True
            reward = 1.0
        if self._can_fail:
            dead_end = not success and self._is_dead_end()
            terminated = success or self._is_failure()
        else:
            dead_end, terminated = False, success
        info = {TASK_ID: self.task_id, SUCCESS: success, VALID_ACTION: valid, DEAD_END: dead_end}
        return f"{feedback}\n\n{self._view()}", reward, terminated, False, info

    def _parse_new(self, action: str) -> Any | None:
        """Parse an action not seen lately (see :meth:`parse_action`) and remember its move."""
        if len(action) > self.action_space.max_length:
            return None
        move = self.parse_action(action)
        if len(self._moves) < _MOVE_MEMO_SIZE:
            self._moves[action] = move
        return move

    def _unparsable_feedback(self, action: str) -> str:
        if len(action) > self.action_space.max_length:
            return f"Invalid action: longer than {self.action_space.max_length} characters."
        hint = f" {self.action_format}" if self.action_format else ""
        return f"Invalid action '{sanitize(action)}'.{hint}"

    def render(self) -> str | np.ndarray | None:
        """Return the current view: text for ``"ansi"``, an image for ``"rgb_array"``.

        ``"rgb_array"`` is offered by the families that list it in
        ``metadata["render_modes"]`` (the grid families): an ``(H, W, 3)``
        ``uint8`` array of fixed shape :meth:`image_shape`, drawn with numpy alone.
        """
        if self.render_mode == "ansi":
            return self._view()
        if self.render_mode == "rgb_array":
            return self._rgb_array()
        return None

    def image_shape(self) -> tuple[int, int, int]:
        """Return the ``(H, W, 3)`` shape of every ``rgb_array`` frame of this env."""
        raise NotImplementedError(f"{type(self).__name__} draws no images.")

    def _rgb_array(self) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} draws no images.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} task_id={self.task_id}>"
