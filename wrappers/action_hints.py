"""ActionHints: put the admissible and oracle actions (and the env's id) into ``info``."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym

from wrappers._core.validators import check_bool
from wrappers.action import expose_action_masks
from wrappers.protocol import (
    ADMISSIBLE_ACTIONS,
    ENV_ID,
    ORACLE_ACTIONS,
    AdmissibleActions,
    Oracle,
)

__all__ = ["ActionHints"]


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
                raise ValueError(
                    f"{type(base).__name__} has no {key}() method (the {api.__name__} API), "
                    f"so ActionHints cannot provide info['{key}']."
                )
        spec = base.spec
        if env_id and spec is None:
            raise ValueError(
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
