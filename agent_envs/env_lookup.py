"""Check an env id a user gave: a one-line user error that suggests only ids that could be meant.

:func:`check_env_id` is :func:`agent_envs.registration.resolve_env_id` with
its refusal raised as :class:`~wrappers.errors.InvalidValue` (a user error,
one line and exit status 2 in a command), and a suggestion drawn only from
the namespace the id names: ``foo/Bar-v0`` is not "MountainCar-v0" misspelled.

>>> suggest_ids("agent_envs/Sokobn-v0", ["agent_envs/Sokoban-v0", "MountainCar-v0"])
['agent_envs/Sokoban-v0']
>>> suggest_ids("foo/Bar-v0", ["agent_envs/Sokoban-v0", "MountainCar-v0"])
[]
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import gymnasium as gym

from agent_envs import registration
from wrappers.errors import InvalidValue

__all__ = ["check_env_id", "suggest_ids"]


def _namespace(env_id: str) -> str | None:
    """Return the namespace of ``ns/Name-v0`` (``None`` for an id without one)."""
    return env_id.rsplit("/", 1)[0] if "/" in env_id else None


def suggest_ids(env_id: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Return up to ``n`` ids of ``known`` close to ``env_id``, from its namespace only.

    An id in a namespace that nothing registers gets no suggestion: any id
    from another namespace would be a guess at a different env.
    """
    namespace = _namespace(env_id)
    pool = [
        candidate for candidate in known if namespace is None or _namespace(candidate) == namespace
    ]
    return difflib.get_close_matches(env_id, pool, n=n, cutoff=0.5)


def check_env_id(text: str) -> str:
    """Return the registered id ``text`` names; refuse any other with :class:`InvalidValue`."""
    try:
        return registration.resolve_env_id(text)
    except ValueError as error:  # resolve_env_id's documented refusal of a bad id
        message = str(error)
        if message.startswith("Unknown env id"):  # rebuilt with a suggestion from the namespace
            close = suggest_ids(text.split(":", 1)[-1], list(gym.registry))
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            message = (
                f"Unknown env id {text!r}.{hint} Run `agent-envs list` for the registered ids, "
                "or name the module that registers it: module:EnvId."
            )
        raise InvalidValue(message) from None
