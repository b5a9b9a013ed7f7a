"""OpenEnv: serve any registered id, under its turn budget, as an OpenEnv environment.

``agent-envs serve ENV_ID --port P`` (or :func:`create_app`) starts an OpenEnv
server (FastAPI, WebSocket sessions, one env per session) on 127.0.0.1.  Any
OpenEnv client plays it; with ``openenv-core``'s ``GenericEnvClient``, against
``agent-envs serve agent_envs/Sokoban-v0 --port 8000 --budget-mix 10,20,40``::

    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0, task_id=5)  # T is the server's: drawn from 10,20,40
        result = env.step({"action": "up"})
        result.observation["success"], result.observation["truncated"], result.done

``reset`` takes ``seed`` and ``task_id`` (an int below the ids reserved for
few-shot examples; ``5.9``, ``True`` and ``"7"`` are refused, not coerced).
The server's budget is the rule: a client's ``budget`` is refused unless the
server was started with a range for it (``client_budgets=(1, 50)``,
``--client-budgets 1:50``), and then it must lie in that range.  OpenEnv has
only ``done``, so each observation also carries ``terminated``, ``truncated``,
``success`` and the step's whole ``info`` (JSON values), so that nothing is
lost: ``done`` is ``terminated or truncated``.  A step after ``done`` is
refused until the next ``reset``.

Episodes are played over the WebSocket ``/ws`` (what OpenEnv's clients use).
Over plain HTTP, ``POST /reset`` answers a first observation but keeps no
session, so ``POST /step`` is refused with a message that says so.  A bad
client value gets HTTP 422 with the message (or a WebSocket error message)
and one log line.  Idle sessions are closed, foreign browser origins, large
bodies and malformed messages are refused: see
:mod:`agent_envs.integrations.openenv_guard`.  Install with the ``[openenv]``
extra.
"""

from __future__ import annotations

import argparse
import functools
import ipaddress
import json
import logging
import socket
import sys
from collections.abc import Sequence
from typing import Any

from agent_envs.arguments import (
    Parser,
    add_budget_arguments,
    budget_regime,
    int_arg,
    number_arg,
    run_command,
)
from agent_envs.env_stack import BudgetRegime
from agent_envs.integrations.common import budgeted_env, client_task_id, require
from agent_envs.integrations.openenv_guard import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_BODY, ServeGuard
from agent_envs.integrations.openenv_sessions import DEFAULT_HTTP_GRACE, guarded_server
from wrappers.errors import InvalidValue
from wrappers.protocol import BUDGET, SUCCESS, TASK_ID
from wrappers.utils.validators import MAX_SEED, MAX_TURNS, check_int, parse_int

__all__ = ["ClientError", "create_app", "environment_factory", "main", "openenv_types"]

logger = logging.getLogger(__name__)

#: The smallest ``max_body`` (bytes): a reset or step message fits far below it.
MIN_BODY = 1024
#: The largest ``max_body`` (64 MiB): far above any action, and what a server can hold per client.
MAX_BODY = 64 << 20
#: The longest ``--idle-timeout`` (one day); 0 keeps sessions forever.
MAX_IDLE_TIMEOUT = 86_400.0
#: The largest T a client may be allowed to choose (``client_budgets``): the one
#: limit on a turn budget, :data:`wrappers.utils.validators.MAX_TURNS`.
MAX_CLIENT_BUDGET = MAX_TURNS


class ClientError(InvalidValue):
    """A value a client sent that the server refuses (HTTP 422, or a WebSocket error message)."""


def client_options(
    task_id: Any, budget: Any, seed: Any, client_budgets: tuple[int, int] | None
) -> dict[str, Any]:
    """Return the reset options for a client's values, or raise :class:`ClientError`.

    The one check of a reset's values: the env's ``reset`` calls it for a
    WebSocket reset, and :class:`~agent_envs.integrations.openenv_guard.ServeGuard`
    for an HTTP ``POST /reset`` body before OpenEnv's model coerces it
    (:func:`check_reset`).  A seed is an int in ``[0, MAX_SEED]``, the limit
    of ``eval --seed``.

    >>> client_options(5, None, 0, None)
    {'task_id': 5}
    >>> client_options(5, 9, 0, None)
    Traceback (most recent call last):
    ...
    agent_envs.integrations.openenv.ClientError: this server sets the turn budget; ...
    """
    options: dict[str, Any] = {}
    try:
        if seed is not None:
            check_int(seed, "seed", 0, MAX_SEED)
        if task_id is not None:
            options[TASK_ID] = client_task_id(task_id)
    except (TypeError, ValueError) as error:
        raise ClientError(str(error)) from None
    if budget is None:
        return options
    if client_budgets is None:
        raise ClientError(
            "this server sets the turn budget; a client's budget is refused (start the "
            "server with --client-budgets LO:HI to let clients choose one in a range)."
        )
    low, high = client_budgets
    try:
        options[BUDGET] = check_int(budget, BUDGET, low, high)
    except (TypeError, ValueError) as error:
        raise ClientError(f"{error} (this server's --client-budgets)") from None
    return options


def check_reset(data: dict[str, Any], client_budgets: tuple[int, int] | None) -> None:
    """Check the JSON values of a reset (seed, task id, budget) with :func:`client_options`."""
    client_options(data.get(TASK_ID), data.get(BUDGET), data.get("seed"), client_budgets)


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

        def __init__(
            self,
            env_id: str,
            regime: BudgetRegime,
            client_budgets: tuple[int, int] | None = None,
        ) -> None:
            super().__init__()
            self.env_id = env_id
            self.client_budgets = client_budgets
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
            options = client_options(task_id, budget, seed, self.client_budgets)
            try:
                text, info = self._env.reset(seed=seed, options=options or None)
            except (TypeError, ValueError) as error:
                raise ClientError(str(error).splitlines()[0]) from None
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
    regime: BudgetRegime | int,
    *,
    client_budgets: tuple[int, int] | None = None,
) -> Any:
    """Return a no-argument factory of OpenEnv environments for ``env_id`` under ``regime``.

    ``regime`` is a :class:`~agent_envs.env_stack.BudgetRegime` or an int T.
    The factory is what
    OpenEnv's server takes; each call (each session) builds a fresh stack.
    The id and the budget are checked here, once: an unknown id, or one whose
    observations or actions are not text, is refused.  ``client_budgets=(low,
    high)`` lets a client's reset choose T in that range; without it a
    client's ``budget`` is refused.
    """
    regime = BudgetRegime.of(regime)
    types = openenv_types()
    if client_budgets is not None:
        low, high = client_budgets
        check_int(low, "the lowest client budget", 1)
        check_int(high, "the highest client budget", low, MAX_CLIENT_BUDGET)
    env_id = _text_env_id(env_id)
    types.TextEnvironment(env_id, regime, client_budgets).close()  # bad budgets fail now
    return functools.partial(types.TextEnvironment, env_id, regime, client_budgets)


def _text_env_id(env_id: str) -> str:
    """Return the registered id of ``env_id``; refuse an unknown id or a non-text env."""
    import gymnasium as gym

    from agent_envs.evaluation.stack import resolve_env

    recipe, env_id = resolve_env(env_id, None)
    env = recipe.env()
    try:
        spaces = (env.observation_space, env.action_space)
    finally:
        env.close()
    if not all(isinstance(space, gym.spaces.Text) for space in spaces):
        raise InvalidValue(
            f"{env_id} is not a text env (observations {type(spaces[0]).__name__}, actions "
            f"{type(spaces[1]).__name__}); serve plays envs whose observations and actions "
            "are text, such as the agent_envs/ ids (`agent-envs list`)."
        )
    return env_id


def create_app(
    env_id: str,
    max_concurrent_envs: int = 64,
    *,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    max_body: int = DEFAULT_MAX_BODY,
    allowed_origins: Sequence[str] = (),
    regime: BudgetRegime | int,
    client_budgets: tuple[int, int] | None = None,
    http_grace: float = DEFAULT_HTTP_GRACE,
) -> Any:
    """Return the FastAPI app serving ``env_id``; ``regime`` and ``client_budgets``
    as in :func:`environment_factory`.

    It is OpenEnv's server (``HTTPEnvServer``, at ``app.state.openenv``)
    behind :class:`~agent_envs.integrations.openenv_guard.ServeGuard`.
    Sessions silent for ``idle_timeout`` seconds are closed, WebSocket ones
    and HTTP-created (``/mcp`` ``openenv/session/create``) ones alike; ``None``
    keeps them forever.  HTTP bodies over ``max_body`` bytes, WebSocket
    messages over ``max_body`` characters, and requests from browser origins
    other than the server's own and ``allowed_origins`` are refused.  A
    :class:`ClientError` is HTTP 422.  HTTP-created sessions have their own
    cap and are closed when unused after ``http_grace`` seconds
    (:mod:`~agent_envs.integrations.openenv_sessions`).
    """
    from fastapi import FastAPI
    from openenv.core.env_server.http_server import HTTPEnvServer
    from openenv.core.env_server.types import ConcurrencyConfig

    regime = BudgetRegime.of(regime)
    types = openenv_types()
    factory = environment_factory(env_id, regime, client_budgets=client_budgets)
    check_int(max_concurrent_envs, "max_concurrent_envs", 1)
    if idle_timeout is not None and not idle_timeout > 0:
        raise InvalidValue(f"idle_timeout must be > 0 seconds or None, got {idle_timeout!r}.")
    check_int(max_body, "max_body", MIN_BODY, MAX_BODY)
    concurrency = ConcurrencyConfig(
        max_concurrent_envs=max_concurrent_envs, session_timeout=idle_timeout
    )
    app = FastAPI(title=f"agent-envs serve {env_id}", docs_url=None, redoc_url=None)
    server = guarded_server(
        HTTPEnvServer,
        factory,
        types.TextAction,
        types.TextObservation,
        concurrency_config=concurrency,
        grace=http_grace,
    )
    server.register_routes(app)
    app.state.openenv = server
    app.add_exception_handler(ClientError, _refused)
    check = functools.partial(check_reset, client_budgets=client_budgets)
    app.add_middleware(ServeGuard, max_body=max_body, idle_timeout=idle_timeout,
                       allowed_origins=allowed_origins, check_reset=check)  # fmt: skip
    return app


async def _refused(request: Any, error: Exception) -> Any:
    """Answer a :class:`ClientError` with HTTP 422 and its message, and log one line."""
    from fastapi.responses import JSONResponse

    logger.warning("refused %s %s: %s", request.method, request.url.path, error)
    return JSONResponse({"detail": str(error)}, status_code=422)


# ----------------------------------------------------------------------- CLI
_PROG = "agent-envs serve"
#: Hosts that only this machine can reach; any other address gets a warning.
_LOOPBACK = ("localhost",)


def _parser() -> Parser:
    """Return ``serve``'s parser (the shared argument helpers)."""
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
    add_budget_arguments(parser, default=20)
    parser.add_argument(
        "--max-sessions", type=int_arg(1), default=64, help="concurrent sessions (default: 64)"
    )
    _add_guard_arguments(parser)
    return parser


def _add_guard_arguments(parser: Parser) -> None:
    """Add what guards the server: client budgets, idle timeout, origins, body size."""
    parser.add_argument(
        "--client-budgets",
        type=_client_budgets,
        metavar="LO:HI",
        help="let a client's reset choose its budget in [LO, HI] (default: refused; the "
        "server's --budget or --budget-mix is the rule)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=number_arg(0, MAX_IDLE_TIMEOUT),
        default=DEFAULT_IDLE_TIMEOUT,
        metavar="SECONDS",
        help=f"close a session silent this long (default: {DEFAULT_IDLE_TIMEOUT:g}; 0: never)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed besides the server's own, such as "
        "http://localhost:3000 (repeatable; * allows any; default: none)",
    )
    parser.add_argument(
        "--max-body",
        type=int_arg(MIN_BODY, MAX_BODY),
        default=DEFAULT_MAX_BODY,
        metavar="SIZE",
        help="the largest HTTP body, in bytes, or WebSocket message, in characters "
        f"(default: {DEFAULT_MAX_BODY:,})",
    )


def _client_budgets(text: str) -> tuple[int, int]:
    """``type=`` of ``--client-budgets LO:HI``: the range a client's reset may choose T in."""
    low, colon, high = text.partition(":")
    try:
        if not colon:
            raise InvalidValue(f"takes LO:HI, two integers, got {text!r}")
        first = parse_int(low, "LO", 1)
        return first, check_int(parse_int(high, "HI"), "HI", first, MAX_CLIENT_BUDGET)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).rstrip(".")) from None


def main(argv: Sequence[str] | None = None) -> int:
    """``agent-envs serve ENV_ID [--port P] [--budget T | --budget-mix A,B,...]``.

    Every bad value is one line on stderr and exit status 2, as in the other
    commands; the id and the budget are checked before the port is opened.
    """
    return run_command(_PROG, _serve, argv, extra="openenv")


def _serve(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    guard = {
        "idle_timeout": args.idle_timeout or None,
        "max_body": args.max_body,
        "allowed_origins": args.allow_origin,
    }
    app = create_app(
        args.env_id,
        args.max_sessions,
        regime=budget_regime(args),
        client_budgets=args.client_budgets,
        **guard,
    )
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
    # The guard answers a message over --max-body with an error message; uvicorn's cap,
    # 4 times higher, closes the connection only on far larger ones.
    config = uvicorn.Config(app, log_level="warning", ws_max_size=4 * args.max_body)
    uvicorn.Server(config).run(sockets=[sock])
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
