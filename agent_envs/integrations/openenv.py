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
import ipaddress
import json
import socket
import sys
from collections.abc import Sequence
from typing import Any

from agent_envs.arguments import BudgetArguments, Parser, add_budget_arguments, int_arg, run_command
from agent_envs.env_stack import BudgetRegime
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

        def __init__(self, env_id: str, regime: BudgetRegime) -> None:
            super().__init__()
            self.env_id = env_id
            self._env = budgeted_env(env_id, regime)
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
    env_id: str, regime: BudgetRegime | int | None = None, **legacy: Any
) -> Any:
    """Return a no-argument factory of OpenEnv environments for ``env_id`` under ``regime``.

    ``regime`` is a :class:`~agent_envs.env_stack.BudgetRegime` or an int T
    (the old keywords ``budget``, ``budgets``, ``weights`` and ``visible``
    still work, with a ``DeprecationWarning``).  The factory is what
    OpenEnv's ``create_app`` takes; each call (each session) builds a fresh
    stack.  The id and the budget are checked here, once: an unknown id, or
    one whose observations or actions are not text, is refused.
    """
    regime = BudgetRegime.of(regime, legacy, where="environment_factory")
    types = openenv_types()
    env_id = _text_env_id(env_id)
    types.TextEnvironment(env_id, regime).close()  # bad budgets fail now
    return functools.partial(types.TextEnvironment, env_id, regime)


def _text_env_id(env_id: str) -> str:
    """Return the registered id of ``env_id``; refuse an unknown id or a non-text env."""
    import gymnasium as gym

    from agent_envs.evaluation.stack import resolve_env

    make_env, env_id = resolve_env(env_id, None)
    env = make_env()
    try:
        spaces = (env.observation_space, env.action_space)
    finally:
        env.close()
    if not all(isinstance(space, gym.spaces.Text) for space in spaces):
        raise ValueError(
            f"{env_id} is not a text env (observations {type(spaces[0]).__name__}, actions "
            f"{type(spaces[1]).__name__}); serve plays envs whose observations and actions "
            "are text, such as the agent_envs/ ids (`agent-envs list`)."
        )
    return env_id


def create_app(
    env_id: str,
    max_concurrent_envs: int = 64,
    *,
    regime: BudgetRegime | int | None = None,
    **legacy: Any,
) -> Any:
    """Return OpenEnv's FastAPI app serving ``env_id``; ``regime`` as in ``environment_factory``."""
    from openenv.core.env_server.http_server import create_app as openenv_app

    regime = BudgetRegime.of(regime, legacy, where="create_app")
    types = openenv_types()
    factory = environment_factory(env_id, regime)
    return openenv_app(
        factory,
        types.TextAction,
        types.TextObservation,
        env_name=factory.args[0],  # the registered id
        max_concurrent_envs=max_concurrent_envs,
    )


# ----------------------------------------------------------------------- CLI
_PROG = "agent-envs serve"
#: Hosts that only this machine can reach; any other address gets the warning below.
_LOOPBACK = ("localhost",)


def _parser() -> tuple[Parser, BudgetArguments]:
    """Return ``serve``'s parser (the shared argument helpers) and its budget flags."""
    parser = Parser(
        prog=_PROG,
        description="Serve a registered env, under a turn budget, as an OpenEnv environment.",
    )
    parser.add_argument("env_id", help="a registered text env id, such as agent_envs/Sokoban-v0")
    parser.add_argument(
        "--port", type=int_arg(0, 65535), default=8000, help="port; 0 picks a free one (8000)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine)"
    )
    budget = add_budget_arguments(parser, default=20)
    parser.add_argument(
        "--max-sessions", type=int_arg(1), default=64, help="concurrent sessions (default: 64)"
    )
    return parser, budget


def main(argv: Sequence[str] | None = None) -> int:
    """``agent-envs serve ENV_ID [--port P] [--budget T | --budget-mix A,B,...]``.

    Every bad value is one line on stderr and exit status 2, as in the other
    commands; the id and the budget are checked before the port is opened.
    """
    return run_command(_PROG, _serve, argv, extra="openenv")


def _serve(argv: list[str]) -> int:
    parser, budget = _parser()
    args = parser.parse_args(argv)
    app = create_app(args.env_id, args.max_sessions, regime=budget.regime(args))
    import uvicorn

    sock = _bind(args.host, args.port)
    host, port = sock.getsockname()[:2]
    if not _is_loopback(args.host):
        print(
            f"{_PROG}: warning: listening on {host or 'every interface'}, reachable from other "
            "machines, and the server has no authentication: anyone who reaches the port "
            "can play and hold its sessions.",
            file=sys.stderr,
        )
    shown = f"[{host}]" if ":" in host else host
    print(f"Serving {args.env_id} on http://{shown}:{port} (OpenEnv; Ctrl-C stops)", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0


def _bind(host: str, port: int) -> socket.socket:
    """Open the listening socket, so that ``--port 0`` can print the port it got."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _is_loopback(host: str) -> bool:
    """Return whether ``host`` names only this machine (``""`` is every interface)."""
    if host in _LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
