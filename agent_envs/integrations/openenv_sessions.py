"""Sessions created over HTTP: a cap of their own and a short grace period to be used.

OpenEnv's ``/mcp`` method ``openenv/session/create`` reserves one of the
server's ``--max-sessions`` slots with no connection behind it.  Without a
limit, 63 such calls held 63 of 64 slots, and WebSocket clients got
``CAPACITY_REACHED`` for the whole idle timeout.  :func:`guarded_server`
returns OpenEnv's server with two rules for these anonymous sessions:

- **a cap of their own**, a quarter of ``--max-sessions`` and never all of
  them (:func:`http_session_cap`), so that WebSocket clients always keep a slot;
- **a grace period**: a session that no request uses within ``grace``
  seconds of its creation is closed.  A used one lives under the idle
  timeout like any other session.  A call the env cannot answer (an MCP
  call to an env that speaks no MCP, as every env served here) is no use.

A request is known to come over HTTP by :data:`OVER_HTTP`, which
:class:`~agent_envs.integrations.openenv_guard.ServeGuard` sets for HTTP
requests; a WebSocket's session is never counted here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

__all__ = ["DEFAULT_HTTP_GRACE", "OVER_HTTP", "guarded_server", "http_session_cap"]

logger = logging.getLogger(__name__)

#: Set (by ServeGuard) while an HTTP request, not a WebSocket, is served.
OVER_HTTP: ContextVar[bool] = ContextVar("agent_envs_over_http", default=False)
#: Seconds an HTTP-created session has to be used before it is closed.
DEFAULT_HTTP_GRACE = 30.0


def http_session_cap(max_sessions: int) -> int:
    """Return how many HTTP-created sessions may be open.

    A quarter of the slots, at least one, but never every slot: one slot is
    always left to WebSocket clients, so a server of one slot takes no
    HTTP-created session at all.

    >>> [http_session_cap(n) for n in (64, 8, 4, 3, 2, 1)]
    [16, 2, 1, 1, 1, 0]
    """
    return min(max_sessions - 1, max(1, max_sessions // 4))


def guarded_server(
    base: type, *args: Any, grace: float = DEFAULT_HTTP_GRACE,
    clock: Callable[[], float] = time.monotonic, **kwargs: Any,
) -> Any:  # fmt: skip
    """Return OpenEnv's ``HTTPEnvServer`` (``base``) with the rules above; ``args`` are base's.

    ``clock`` and ``grace`` (server attributes too) are injectable: a test
    sets the clock and calls ``close_unused`` instead of waiting.
    """

    class HttpGuardedServer(_HttpSessionUse, base):  # type: ignore[misc, valid-type]
        """OpenEnv's server with a cap and a grace period on HTTP-created sessions."""

        def __init__(self) -> None:
            super().__init__(*args, **kwargs)
            self.http_cap = http_session_cap(self._max_concurrent_envs)
            self.grace, self.clock = grace, clock
            self.loop: asyncio.AbstractEventLoop | None = None  # the server's, once it serves
            self.http_sessions: dict[str, tuple] = {}  # id -> (created, activity stamp)

        async def _create_session(self) -> tuple[str, Any]:
            if not OVER_HTTP.get():
                return await super()._create_session()
            self._forget_closed()
            if len(self.http_sessions) >= self.http_cap:
                from openenv.core.env_server.exceptions import SessionCapacityError

                raise SessionCapacityError(len(self.http_sessions), self.http_cap)
            session_id, env = await super()._create_session()
            self.http_sessions[session_id] = (self.clock(), self._activity(session_id))
            self.loop = asyncio.get_running_loop()
            self.loop.call_later(self.grace, lambda: asyncio.ensure_future(self.close_unused()))
            return session_id, env

    return HttpGuardedServer()


class _HttpSessionUse:
    """What counts as a use of an HTTP-created session, and closing the unused ones.

    Mixed in before OpenEnv's server class, whose session tables it reads.
    """

    http_sessions: dict[str, tuple]
    grace: float
    clock: Callable[[], float]
    _sessions: dict[str, Any]
    _session_info: dict[str, Any]

    def _update_session_activity(self, session_id: str, increment_step: bool = False) -> None:
        # OpenEnv stamps a session after every /mcp call, even one it answered with
        # "Environment does not support MCP".  An HTTP-created session of an env that
        # speaks no MCP can do nothing else, so no call on it is a use.
        env = self._sessions.get(session_id)
        speaks_mcp = any(
            getattr(env, name, None) is not None for name in ("mcp_client", "mcp_server")
        )
        if session_id not in self.http_sessions or speaks_mcp:
            super()._update_session_activity(session_id, increment_step)  # type: ignore[misc]

    def _activity(self, session_id: str) -> float | None:
        info = self._session_info.get(session_id)
        return None if info is None else info.last_activity_at

    def _forget_closed(self) -> None:
        """Drop HTTP sessions closed by a client or the idle timeout."""
        for session_id in [sid for sid in self.http_sessions if sid not in self._sessions]:
            del self.http_sessions[session_id]

    async def close_unused(self) -> list[str]:
        """Close the HTTP-created sessions unused ``grace`` seconds after creation."""
        self._forget_closed()
        now, closed = self.clock(), []
        for session_id, (created, stamp) in list(self.http_sessions.items()):
            if now - created < self.grace or self._activity(session_id) != stamp:
                continue  # too young, or used: the idle timeout governs it
            await self._destroy_session(session_id)  # type: ignore[attr-defined]
            self.http_sessions.pop(session_id, None)
            closed.append(session_id)
        if closed:
            logger.warning(
                "closed %d HTTP-created sessions unused for %gs.", len(closed), self.grace
            )
        return closed
