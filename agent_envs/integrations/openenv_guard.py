"""What stands between ``agent-envs serve`` and the network: origins, sizes, idle and bad clients.

:class:`ServeGuard` is an ASGI middleware around OpenEnv's app.  It treats
every request as untrusted:

- **Origin.** A browser sends ``Origin`` with each WebSocket handshake and
  cross-site request; a request from another origin than the server itself
  (``http://127.0.0.1:PORT``, ``http://localhost:PORT``) is refused with 403
  unless that origin was allowed (``--allow-origin``).  Clients that are not
  browsers send no ``Origin`` and are not affected.
- **Size.** An HTTP body longer than ``max_body`` bytes is refused with 413
  without being read whole; a WebSocket message longer than ``max_body``
  characters, which the server has already received, is answered with an
  error message.
- **WebSocket messages.** A message that is not a JSON object (``[]``, ``5``,
  a binary frame, JSON nested too deep for the parser) is answered with an
  error message, and the session goes on.
- **Idle WebSocket clients.** A connection that sends nothing for
  ``idle_timeout`` seconds is closed (code 1001) and its session freed.
- **``POST /step``.** OpenEnv's HTTP ``/step`` builds a fresh env for every
  request, so an HTTP step can never continue an episode; it is refused with
  a message that points to the WebSocket client.
- **``POST /reset``.** OpenEnv's HTTP model coerces a reset's values
  (``"12"`` and ``true`` became seeds) and answered ``1e999`` or ``NaN``
  with a 500.  The body is checked here first by ``check_reset``, the
  function the env's own ``reset`` checks a WebSocket reset with, so both
  paths take and refuse the same values (422 here).  A number JSON cannot
  hold (``NaN``, ``Infinity``, ``1e999``) is refused in any body or message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from agent_envs.integrations.openenv_sessions import OVER_HTTP

__all__ = ["DEFAULT_IDLE_TIMEOUT", "DEFAULT_MAX_BODY", "ServeGuard"]

logger = logging.getLogger(__name__)

#: Seconds a WebSocket client or an HTTP-created session may stay silent (5 minutes).
DEFAULT_IDLE_TIMEOUT = 300.0
#: The largest request body or WebSocket message (1 MiB; an action is a line of text).
DEFAULT_MAX_BODY = 1 << 20

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
STEP_OVER_HTTP = (
    "POST /step is not served over HTTP: each HTTP request gets a fresh env, so a step "
    "cannot continue an episode. Play episodes over the WebSocket /ws, for example with "
    "openenv's GenericEnvClient(base_url=...).sync() (see docs/integrations.md)."
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class ServeGuard:
    """ASGI middleware: origin check, body cap, WebSocket message checks, idle timeout.

    Args:
        app: the ASGI app it guards (OpenEnv's FastAPI app).
        max_body: the largest HTTP body, in bytes, or WebSocket message, in characters.
        idle_timeout: seconds of silence after which a WebSocket is closed
            (``None``: never).
        allowed_origins: origins allowed besides the server's own (``"*"``: any).
        check_reset: raises a ``ValueError`` for a reset's values (a JSON
            object) that the env refuses; ``None``: no check here.
    """

    def __init__(
        self,
        app: Callable[..., Awaitable[None]],
        max_body: int = DEFAULT_MAX_BODY,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        allowed_origins: Iterable[str] = (),
        check_reset: Callable[[dict[str, Any]], object] | None = None,
    ) -> None:
        self.app = app
        self.check_reset = check_reset
        self.max_body = max_body
        self.idle_timeout = idle_timeout
        self.allowed_origins = {origin.rstrip("/").lower() for origin in allowed_origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _foreign_origin(self, scope: Scope) -> str | None:
        """Return the request's ``Origin`` if it is neither the server's own nor allowed."""
        origin = _header(scope, b"origin")
        if origin is None or "*" in self.allowed_origins:
            return None
        if origin.rstrip("/").lower() in self.allowed_origins:
            return None
        parts = urlsplit(origin)
        server = scope.get("server") or (None, None)
        own_hosts = _LOOPBACK | {str(server[0]).lower()}
        try:
            same = (
                parts.scheme in ("http", "https")
                and (parts.hostname or "").lower() in own_hosts
                and (parts.port or (443 if parts.scheme == "https" else 80)) == server[1]
            )
        except ValueError:  # a port that is not a number
            same = False
        return None if same else origin

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope.get("method", ""), scope.get("path", "")
        origin = self._foreign_origin(scope)
        if origin is not None:
            return await _refuse(send, 403, f"requests from the origin {origin!r:.80} are refused.")
        if method == "POST" and path.rstrip("/") == "/step":
            return await _refuse(send, 400, STEP_OVER_HTTP)
        declared = _header(scope, b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            return await _refuse(send, 413, self._too_large())
        body, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_body:
                return await _refuse(send, 413, self._too_large())
        problem = self._body_problem(method, path, bytes(body))
        if problem is not None:  # logged as the app logs a refused value
            logger.warning("refused %s %s: %s", method, path, problem)
            return await _refuse(send, 422, problem, log=False)
        token = OVER_HTTP.set(True)  # a session this request creates is an HTTP one
        try:
            await self.app(
                scope, _replay({"type": "http.request", "body": bytes(body)}, receive), send
            )
        finally:
            OVER_HTTP.reset(token)

    def _body_problem(self, method: str, path: str, body: bytes) -> str | None:
        """Return why an HTTP body is refused (422), else ``None``: OpenEnv reads the rest."""
        if method != "POST" or not body.strip():
            return None
        try:
            value = strict_json(body)
        except NotFinite as error:
            return str(error)
        except (ValueError, RecursionError):
            return None  # OpenEnv answers malformed JSON itself
        if path.rstrip("/") == "/reset" and isinstance(value, dict) and self.check_reset:
            try:
                self.check_reset(value)
            except ValueError as error:
                return str(error)
        return None

    def _too_large(self) -> str:
        return f"the body is larger than this server's limit of {self.max_body:,} bytes."

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        connect = await receive()
        origin = self._foreign_origin(scope)
        if origin is not None:
            logger.warning("refused a WebSocket from the origin %.80r.", origin)
            await send({"type": "websocket.close", "code": 1008})
            return
        connection = _Connection(send)
        messages = self._messages(receive, connection)
        await self.app(scope, _replay(connect, messages), connection.send)

    def _messages(self, receive: Receive, connection: _Connection) -> Receive:
        """Return a ``receive`` that answers bad messages itself and ends idle connections."""

        async def checked() -> Message:
            while True:
                try:
                    message = await asyncio.wait_for(receive(), self.idle_timeout)
                except asyncio.TimeoutError:
                    await connection.send({"type": "websocket.close", "code": 1001})
                    return {"type": "websocket.disconnect", "code": 1001}
                if message["type"] == "websocket.disconnect":
                    connection.closed = True
                problem = self._problem(message) if message["type"] == "websocket.receive" else None
                if problem is None:
                    return message
                code, text = problem
                error = {"type": "error", "data": {"message": text, "code": code}}
                await connection.send({"type": "websocket.send", "text": json.dumps(error)})

        return checked

    def _problem(self, message: Message) -> tuple[str, str] | None:
        """Return ``(code, message)`` for a WebSocket message OpenEnv cannot take, else ``None``."""
        text = message.get("text")
        if text is None:
            return "INVALID_JSON", "binary frames are not read: send a JSON object as text."
        if len(text) > self.max_body:
            return "INVALID_JSON", f"the message is longer than {self.max_body:,} characters."
        try:
            value = strict_json(text)
        except RecursionError:
            return "INVALID_JSON", "the message nests JSON too deeply."
        except NotFinite as error:
            return "INVALID_JSON", str(error)
        except ValueError:
            return None  # OpenEnv answers invalid JSON itself, naming the position
        if not isinstance(value, dict):
            return (
                "INVALID_JSON",
                f'a message is a JSON object such as {{"type": "reset", "data": {{}}}}, '
                f"not a {type(value).__name__}.",
            )
        return None


class _Connection:
    """A WebSocket's ``send`` that goes quiet once the connection is closed.

    After an idle close or the client's disconnect, OpenEnv still closes the
    socket itself; that second close would raise inside the server and log a
    traceback per connection, so it is dropped.
    """

    def __init__(self, send: Send) -> None:
        self._send = send
        self.closed = False

    async def send(self, message: Message) -> None:
        if self.closed:
            return
        if message["type"] == "websocket.close":
            self.closed = True
            with contextlib.suppress(Exception):  # the client may be gone already
                await self._send(message)
            return
        await self._send(message)


class NotFinite(ValueError):
    """A JSON number that is not a finite number (``NaN``, ``Infinity``, ``1e999``)."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotFinite(f"the number {text:.40} is too large; send finite numbers.")
    return value


def _constant(text: str) -> float:
    raise NotFinite(f"{text} is not a JSON number; send finite numbers.")


def strict_json(text: str | bytes) -> Any:
    """Return the JSON ``text``, refusing ``NaN``, ``Infinity`` and numbers too large for a float.

    Python's parser takes them (as JSON does not), and OpenEnv's answers to
    them failed with a 500; :class:`NotFinite` says which one it was.
    """
    return json.loads(text, parse_float=_finite, parse_constant=_constant)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1").strip()
    return None


def _replay(first: Message, receive: Receive) -> Receive:
    """Return a ``receive`` that gives ``first`` once, then whatever ``receive`` gives."""
    pending = [first]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


async def _refuse(send: Send, status: int, detail: str, log: bool = True) -> None:
    """Answer an HTTP request with ``{"detail": detail}`` and log it on one line (``log``)."""
    if log:
        logger.warning("refused a request (%d): %s", status, detail)
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
