"""OpenEnv: serve any registered id, under its turn budget, as an OpenEnv environment.

``agent-envs serve ENV_ID --port P`` (or :func:`create_app`) starts an OpenEnv
server (FastAPI, WebSocket sessions, one env per session) on 127.0.0.1.  Any
OpenEnv client plays it; with ``openenv-core``'s ``GenericEnvClient``::

    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0, task_id=5, budget=10)
        result = env.step({"action": "up"})
        result.observation["success"], result.observation["truncated"], result.done

``reset`` takes ``seed``, ``task_id`` and ``budget`` (this episode's T; without
it a ``BudgetMix`` draws one).  OpenEnv has only ``done``, so each observation
also carries ``terminated``, ``truncated``, ``success`` and the step's whole
``info`` (JSON values), so that nothing is lost: ``done`` is
``terminated or truncated``.  A step after ``done`` is refused until the next
``reset``.  Install with the ``[openenv]`` extra.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Sequence
from typing import Any

from agent_envs.integrations.common import budgeted_env, require
from agent_envs.protocol import BUDGET, SUCCESS, TASK_ID

__all__ = ["create_app", "environment_factory", "main", "openenv_types"]


@functools.cache
def openenv_types() -> argparse.Namespace:
    """Return the OpenEnv classes, defined on first use (OpenEnv is imported only then).

    ``TextAction`` has one field, ``action`` (the text sent to the env).
    ``TextObservation`` has ``text``, ``success``, ``terminated``,
    ``truncated`` and ``info`` besides OpenEnv's ``done`` and ``reward``.
    """
    require("openenv.core", "openenv")
    text_action, text_observation = _message_types()
    return argparse.Namespace(
        TextAction=text_action,
        TextObservation=text_observation,
        TextEnvironment=_environment_class(text_action, text_observation),
    )


def _message_types() -> tuple[type, type]:
    """Define OpenEnv's action and observation types for text envs (OpenEnv imported)."""
    from openenv.core.env_server.types import Action, Observation
    from pydantic import Field

    class TextAction(Action):
        action: str = Field(description="The action text, as an agent would write it.")

    class TextObservation(Observation):
        text: str = Field(description="The env's observation text.")
        success: bool = Field(default=False, description="The task is solved.")
        terminated: bool = Field(default=False, description="Ended by success or failure.")
        truncated: bool = Field(default=False, description="Ended by the turn budget.")
        info: dict[str, Any] = Field(default_factory=dict, description="The step's info.")

    return TextAction, TextObservation


def _environment_class(TextAction: type, TextObservation: type) -> type:
    """Define the OpenEnv ``Environment`` that plays one registered id under its budget."""
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import State

    class TextEnvironment(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True  # each session builds its own env

        def __init__(self, env_id: str, **budget: Any) -> None:
            super().__init__()
            self.env_id = env_id
            self._env = budgeted_env(env_id, **budget)
            self._state = State(env_id=env_id)
            self._done = True

        def reset(
            self,
            seed: int | None = None,
            episode_id: str | None = None,
            task_id: int | None = None,
            budget: int | None = None,
            **kwargs: Any,
        ) -> TextObservation:
            options = {key: value for key, value in ((TASK_ID, task_id), (BUDGET, budget))
                       if value is not None}  # fmt: skip
            text, info = self._env.reset(seed=seed, options=options or None)
            self._done = False
            self._state = State(episode_id=episode_id, step_count=0, env_id=self.env_id,
                                task_id=info.get(TASK_ID), budget=info.get(BUDGET))  # fmt: skip
            return _observation(TextObservation, text, 0.0, False, False, info)

        def step(self, action: TextAction, timeout_s: float | None = None, **kwargs: Any):
            if self._done:
                raise RuntimeError("The episode is over (or not started): call reset first.")
            text, reward, terminated, truncated, info = self._env.step(action.action)
            self._done = terminated or truncated
            self._state.step_count += 1
            return _observation(TextObservation, text, reward, terminated, truncated, info)

        @property
        def state(self) -> State:
            return self._state

        def close(self) -> None:
            self._env.close()

    return TextEnvironment


def _observation(
    cls: type, text: str, reward: Any, terminated: bool, truncated: bool, info: dict[str, Any]
) -> Any:
    # default=str: an info value JSON cannot hold (a numpy scalar, a set) travels as its text.
    safe = json.loads(json.dumps(info, default=str))
    return cls(
        text=text, reward=float(reward), done=bool(terminated or truncated),
        success=bool(info.get(SUCCESS, False)), terminated=bool(terminated),
        truncated=bool(truncated), info=safe,
    )  # fmt: skip


def environment_factory(
    env_id: str,
    budget: int | None = None,
    budgets: Sequence[int] | None = None,
    weights: Sequence[float] | None = None,
    visible: bool = False,
) -> Any:
    """Return a no-argument factory of OpenEnv environments for ``env_id`` under the budget.

    The factory is what OpenEnv's ``create_app`` takes; each call (each
    session) builds a fresh stack.  The budget is checked here, once.
    """
    types = openenv_types()
    settings = {BUDGET: budget, "budgets": budgets, "weights": weights, "visible": visible}
    types.TextEnvironment(env_id, **settings).close()  # bad ids and budgets fail now
    return functools.partial(types.TextEnvironment, env_id, **settings)


def create_app(env_id: str, max_concurrent_envs: int = 64, **budget: Any) -> Any:
    """Return OpenEnv's FastAPI app serving ``env_id``; ``budget`` as in ``environment_factory``."""
    from openenv.core.env_server.http_server import create_app as openenv_app

    types = openenv_types()
    return openenv_app(
        environment_factory(env_id, **budget),
        types.TextAction,
        types.TextObservation,
        env_name=env_id,
        max_concurrent_envs=max_concurrent_envs,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-envs serve",
        description="Serve a registered env, under a turn budget, as an OpenEnv environment.",
    )
    parser.add_argument("env_id", help="a registered id, such as agent_envs/Sokoban-v0")
    parser.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine)"
    )
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--budget", type=int, help="turns per episode (default: 20)")
    budget.add_argument(
        "--budget-mix", help="comma-separated budgets, one drawn per episode (a BudgetMix)"
    )
    parser.add_argument(
        "--visible-budget", action="store_true", help="show the turns left (default: hidden)"
    )
    parser.add_argument(
        "--max-sessions", type=int, default=64, help="concurrent sessions (default: 64)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``agent-envs serve ENV_ID [--port P] [--budget T | --budget-mix A,B,...]``."""
    parser = _parser()
    args = parser.parse_args(argv)
    budget: dict[str, Any] = {"visible": args.visible_budget}
    if args.budget_mix is not None:
        try:
            budget["budgets"] = [int(part) for part in args.budget_mix.split(",")]
        except ValueError:
            parser.error(f"--budget-mix takes comma-separated integers, got {args.budget_mix!r}")
    else:
        budget[BUDGET] = 20 if args.budget is None else args.budget
    try:
        app = create_app(args.env_id, max_concurrent_envs=args.max_sessions, **budget)
    except ImportError as error:
        parser.exit(1, f"agent-envs serve: {error}\n")
    except Exception as error:  # a bad id or budget: one line, usage error
        parser.error(str(error).splitlines()[0] if str(error) else type(error).__name__)
    import uvicorn

    print(f"Serving {args.env_id} on http://{args.host}:{args.port} (OpenEnv; Ctrl-C stops)")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
