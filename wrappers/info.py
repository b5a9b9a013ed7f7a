"""Info wrappers: what ``info`` carries beside the observation.

* :class:`ActionHints` puts the admissible and oracle actions (and the env's
  id) into ``info``.
* :class:`ChatHistory` keeps the dialogue as chat messages in
  ``info["messages"]`` for language agents; :func:`chat_stack` builds the
  budgeted stack it sits on.
* :class:`NumpyInfo` gives the scalar info values numpy types, for readers
  that ask for ``.dtype``.  TorchRL's ``default_info_dict_reader`` builds its
  specs from ``value.dtype``, so a Python ``bool`` such as ``info["success"]``
  stops it.  The envs keep Python scalars (JSON logs and ``is True`` checks
  rely on them); this wrapper converts them at the edge, for the libraries
  that need it.
"""

from __future__ import annotations

from collections import deque
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from wrappers.action import expose_action_masks
from wrappers.budget import resolve_budget
from wrappers.errors import InvalidType, InvalidValue
from wrappers.protocol import (
    ADMISSIBLE_ACTIONS,
    ENV_ID,
    MESSAGES,
    ORACLE_ACTIONS,
    AdmissibleActions,
    Oracle,
)
from wrappers.utils.validators import check_bool, check_int

__all__ = ["ActionHints", "ChatHistory", "NumpyInfo", "chat_stack", "numpy_info"]


class ActionHints(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """Add the admissible actions, the oracle's actions and/or the env's id to ``info``.

    This is how baseline agents such as the random and oracle agents receive
    what they need while ``act(observation, info)`` stays the only interface.
    Each key costs a call to the unwrapped env's method of the same name on
    every reset and step, so ask only for what the agent reads.  The lists are
    fresh copies; an agent may keep or change them.  ``env_id`` adds the id
    the unwrapped env was registered under (``env.unwrapped.spec.id``).

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers import ActionHints
        >>> env = ActionHints(gym.make("agent_envs/GuessNumber-v0"), oracle=True)
        >>> _, info = env.reset(seed=0, options={"task_id": 0})
        >>> info["oracle_actions"]
        ['50']
    """

    def __init__(
        self, env: gym.Env, admissible: bool = True, oracle: bool = False, env_id: bool = False
    ) -> None:
        check_bool(admissible, "admissible")
        check_bool(oracle, "oracle")
        check_bool(env_id, "env_id")
        base = env.unwrapped
        for wanted, api, key in (
            (admissible, AdmissibleActions, ADMISSIBLE_ACTIONS),
            (oracle, Oracle, ORACLE_ACTIONS),
        ):
            if wanted and not isinstance(base, api):
                raise InvalidValue(
                    f"{type(base).__name__} has no {key}() method (the {api.__name__} API), "
                    f"so ActionHints cannot provide info['{key}']."
                )
        spec = base.spec
        if env_id and spec is None:
            raise InvalidValue(
                f"{type(base).__name__} was not made from a registered id (it has no spec), "
                "so ActionHints cannot provide info['registered_id']."
            )
        gym.utils.RecordConstructorArgs.__init__(
            self, admissible=admissible, oracle=oracle, env_id=env_id
        )
        gym.Wrapper.__init__(self, env)
        expose_action_masks(self)
        self.admissible = admissible
        self.oracle = oracle
        self.env_id = spec.id if env_id and spec is not None else None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        return observation, self._hints(info)

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated, self._hints(info)

    def _hints(self, info: dict[str, Any]) -> dict[str, Any]:
        base = self.env.unwrapped
        info = dict(info)
        if self.admissible:
            info[ADMISSIBLE_ACTIONS] = list(base.admissible_actions())
        if self.oracle:
            info[ORACLE_ACTIONS] = list(base.oracle_actions())
        if self.env_id is not None:
            info[ENV_ID] = self.env_id
        return info


_RECORD_CHOICES = ("action", "raw")


class ChatHistory(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """Expose the dialogue so far as chat messages in ``info["messages"]``.

    The env's text is the ``user`` side and the agent's actions are the
    ``assistant`` side::

        [{"role": "system", "content": system_prompt},    # only if given
         {"role": "user", "content": <reset observation>},  # the task statement
         {"role": "assistant", "content": <action 1>},
         {"role": "user", "content": <observation 1>},
         ...]

    The last message is always the current observation, so an agent can build
    its whole prompt from ``info["messages"]``.  Observations, rewards and
    flags pass through unchanged.

    ``info["messages"]`` is a fresh list of fresh dicts on every call: an agent
    may keep or change it without touching the wrapper's record.

    Args:
        env: the env to wrap.
        window: keep only the last ``window`` exchanges (an action and the
            observation that answered it); the system prompt and the task
            statement (the reset observation) are always kept.  ``None``
            keeps everything.
        system_prompt: put a system message first.  Agents that bring their
            own system prompt use this one instead when it is set.
        record: what the assistant side holds: ``"action"`` (the action string
            sent to ``step``) or ``"raw"`` (the action's ``raw`` attribute when it
            has one, such as the full generation behind an ``AgentAction``:
            a ``str`` subclass with ``raw``), else the action).

    Nothing carries over from one episode to the next: ``reset`` starts a new
    dialogue.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers.info import ChatHistory
        >>> env = ChatHistory(gym.make("agent_envs/GuessNumber-v0"), window=2)
        >>> _, info = env.reset(seed=0, options={"task_id": 0})
        >>> _, _, _, _, info = env.step("50")
        >>> [message["role"] for message in info["messages"]]
        ['user', 'assistant', 'user']
        >>> info["messages"][1]["content"]
        '50'
    """

    def __init__(
        self,
        env: gym.Env,
        window: int | None = None,
        system_prompt: str | None = None,
        record: str = "action",
    ) -> None:
        if window is not None:
            # >= 1: the last exchange holds the current observation.
            window = check_int(window, "window (None keeps the whole dialogue)", 1)
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise InvalidType(f"system_prompt must be a str or None, got {system_prompt!r}.")
        if record not in _RECORD_CHOICES:
            raise InvalidValue(f"record must be one of {_RECORD_CHOICES}, got {record!r}.")
        gym.utils.RecordConstructorArgs.__init__(
            self, window=window, system_prompt=system_prompt, record=record
        )
        gym.Wrapper.__init__(self, env)
        self.window = window
        self.system_prompt = system_prompt
        self.record = record
        self._task_statement: str | None = None
        self._exchanges: deque[tuple[str, str]] = deque(maxlen=window)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self._task_statement = observation
        self._exchanges.clear()
        return observation, {**info, MESSAGES: self.messages()}

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._task_statement is None:
            raise gym.error.ResetNeeded("Call reset() before step().")
        observation, reward, terminated, truncated, info = self.env.step(action)
        said = getattr(action, "raw", None) if self.record == "raw" else None
        self._exchanges.append((str(action) if not isinstance(said, str) else said, observation))
        return observation, reward, terminated, truncated, {**info, MESSAGES: self.messages()}

    def messages(self) -> list[dict[str, str]]:
        """Return a fresh copy of the dialogue kept so far (empty before ``reset``)."""
        if self._task_statement is None:
            return []
        messages = []
        if self.system_prompt is not None:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": self._task_statement})
        for action, observation in self._exchanges:
            messages.append({"role": "assistant", "content": action})
            messages.append({"role": "user", "content": observation})
        return messages


def chat_stack(
    env: gym.Env,
    max_budget: int,
    *,
    visible_budget: bool = False,
    window: int | None = None,
    record: str = "action",
) -> ChatHistory:
    """Return the stack a language agent plays: ``env``, its turn budget, then the dialogue.

    The budget is the stack's own or a new ``TurnBudget(max_budget, visible=visible_budget)``
    (:func:`wrappers.budget.resolve_budget`); ``ChatHistory(window, record)``
    goes outside it, so that with a visible budget the messages carry the
    turns-left line too.  ``record="raw"`` keeps a model's whole replies, so
    that each prompt extends the tokens it generated: the stack GRPO training
    plays, and the one to evaluate a model trained that way on.  Each
    episode's budget is set with ``reset(options={"budget": T})``.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> env = chat_stack(gym.make("agent_envs/GuessNumber-v0"), 20, visible_budget=True)
        >>> _, info = env.reset(seed=0, options={"task_id": 0, "budget": 7})
        >>> info["budget"], info["messages"][-1]["role"]
        (7, 'user')
    """
    env = resolve_budget(env, max_budget, visible=visible_budget)
    return ChatHistory(env, window=window, record=record)


def numpy_info(info: dict[str, Any]) -> dict[str, Any]:
    """Return ``info`` with each ``bool``/``int``/``float`` value as a numpy scalar.

    Other values (strings, lists, arrays) are kept as they are.

    >>> from wrappers.info import numpy_info
    >>> converted = numpy_info({"success": True, "turn": 3, "task_id": 7, "note": "hi"})
    >>> [type(value).__name__ for value in converted.values()]
    ['bool', 'int64', 'int64', 'str']
    """
    converted = dict(info)
    for key, value in info.items():
        if isinstance(value, (bool, np.bool_)):
            converted[key] = np.bool_(value)
        elif isinstance(value, int):
            converted[key] = np.int64(value)
        elif isinstance(value, float):
            converted[key] = np.float64(value)
    return converted


class NumpyInfo(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Apply :func:`numpy_info` to the info of every ``reset`` and ``step``.

    Example:
        >>> import gymnasium as gym  # the agent_envs/ ids are registered
        >>> from wrappers.info import NumpyInfo
        >>> env = NumpyInfo(gym.make("agent_envs/GuessNumber-v0"))
        >>> _, info = env.reset(seed=0, options={"task_id": 0})
        >>> info["success"].dtype
        dtype('bool')
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        expose_action_masks(self)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        return observation, numpy_info(info)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated, numpy_info(info)
