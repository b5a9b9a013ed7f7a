"""ChatClient: POST requests to an OpenAI-compatible ``/v1/chat/completions`` server.

The standard library only (``http.client`` and threads), so the ``openai`` SDK
is not needed.  It knows nothing of prompts: it sends a JSON body and returns
the reply's text.

Errors.  Connection failures, timeouts, HTTP 408, 409, 429 and 5xx are
transient: they are retried up to ``max_retries`` times, waiting
``backoff * 2**attempt`` seconds, or the server's ``Retry-After`` if that is
longer, and never more than ``max_backoff``.  A prompt the server refuses as
longer than the model's context (HTTP 400/413/422 whose message speaks of the
context or of too many tokens) raises :class:`ContextTooLong`, so that the
agent can shorten it; anything else, or a transient error that outlasts the
retries, raises :class:`ChatCompletionError`.

Secrets (the URL check and the key's holder are
:mod:`baselines.llm.agents.chat_endpoint`).  The API key goes only into the
``Authorization`` header of requests to ``base_url`` itself: it is never
logged, never in ``repr`` and never in an exception message.  Design
decision: redirects are never followed (``urllib`` re-sends every header, the
bearer token included, to wherever a 30x points); a 30x is an error that names
the new address, so that the user can point ``base_url`` there knowingly.  A
user name or password inside ``base_url`` is refused (a URL is printed in
warnings and errors), without echoing them.

Limits.  ``timeout`` is a deadline for the whole request (connect, send,
headers and body), enforced by a timer that shuts the socket down: a socket
timeout alone bounds each read, and a server sending a byte a second would
hold the request for ever.  A reply longer than ``max_reply_bytes`` (8 MiB by
default) is refused unread beyond that bound.

Proxies.  ``HTTP(S)_PROXY`` variables are not read (``urllib`` read them):
serve the model where the evaluator can reach it, or point ``base_url`` at a
reverse proxy.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import math
import os
import re
import socket
import threading
import urllib.parse
from typing import Any, NamedTuple

from agent_envs.redaction import redact_url, remember, scrub, secret_values
from baselines.llm.agents.chat_endpoint import Secret, chat_completions_url
from wrappers.errors import InvalidType
from wrappers.utils.validators import check_int, check_number

__all__ = [
    "DEFAULT_MAX_REPLY_BYTES",
    "MAX_TIMEOUT",
    "ChatClient",
    "ChatCompletionError",
    "Completion",
    "ContextTooLong",
    "chat_completions_url",
]

logger = logging.getLogger(__name__)

_TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
# How vLLM, SGLang, llama.cpp, TGI and OpenAI word a prompt that is too long.
_CONTEXT_STATUS = frozenset({400, 413, 422})
_CONTEXT_ERROR = re.compile(
    r"context|too long|too many tokens|maximum.{0,40}tokens|tokens.{0,40}must be <=", re.IGNORECASE
)
_ERROR_BODY_LIMIT = 500
_READ_CHUNK = 1 << 16

#: The most bytes read from one reply, unless ``max_reply_bytes`` says otherwise.
DEFAULT_MAX_REPLY_BYTES = 8 * 2**20
#: The longest ``timeout`` accepted, in seconds (one day): a longer one is a typo.
MAX_TIMEOUT = 86_400.0


class Completion(NamedTuple):
    """One reply: its text (its message in tool mode) and the usage the server reported.

    ``prompt_tokens`` and ``completion_tokens`` are the reply's ``usage``
    fields, ``None`` when the server did not report them.
    """

    content: str | dict[str, Any]
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def _usage_count(usage: Any, name: str) -> int | None:
    """Return ``usage[name]`` if the server reported it as a count, else ``None``."""
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if type(value) is int and value >= 0 else None


class ChatCompletionError(RuntimeError):
    """A chat-completions request failed for good (the message never holds the API key)."""


def _clip(text: str) -> str:
    """Mask secrets, then cut to the error-body limit (masking first leaves no part of one)."""
    return scrub(text)[:_ERROR_BODY_LIMIT]


class ChatClient:
    """Send chat-completions requests to one server: retries, a deadline, a capped reply.

    Args:
        base_url: the server, e.g. ``"http://localhost:8000/v1"`` (:func:`chat_completions_url`).
        api_key: the bearer token; by default ``$OPENAI_API_KEY``; none is sent
            when neither is set (local servers need none).
        timeout: seconds one request may take in all, from connecting to the
            last byte of the reply (at most :data:`MAX_TIMEOUT`).
        max_retries: how often a transient failure is retried.
        backoff: the first retry waits this many seconds, doubling each time.
        max_backoff: the longest wait between two tries.
        max_reply_bytes: the most bytes read from one reply (8 MiB by default); a
            longer reply raises :class:`ChatCompletionError`.
    """

    #: Return the reply's whole message (a dict, unscrubbed: its ``tool_calls``
    #: are read and scrubbed by the agent) instead of its text;
    #: ``OpenAIChatAgent(tool_calls=True)`` sets it.
    tool_calls = False

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        self.url = chat_completions_url(base_url)
        check_number(timeout, "timeout (seconds)", 0.0, MAX_TIMEOUT, open_low=True)
        check_number(backoff, "backoff", 0.0)
        check_number(max_backoff, "max_backoff", 0.0)
        self.max_retries = check_int(max_retries, "max_retries", 0)
        self.max_reply_bytes = check_int(max_reply_bytes, "max_reply_bytes", 1)
        if api_key is not None and not isinstance(api_key, str):
            raise InvalidType("api_key must be a str or None.")
        self.timeout, self.backoff, self.max_backoff = map(float, (timeout, backoff, max_backoff))
        self._api_key = Secret(api_key or os.environ.get("OPENAI_API_KEY") or None)
        remember(secret_values({"base_url": base_url}))
        #: The endpoint as messages show it (secret query parameters masked).
        self.shown_url = redact_url(self.url)
        #: Completion tokens the server reported so far (when it reports usage).
        self.completion_tokens = 0
        self._setup_threads()

    def _setup_threads(self) -> None:
        self._usage_lock = threading.Lock()
        # Set by interrupt(): no retry starts, and the requests in flight are cut.
        self._stopped = threading.Event()
        self._in_flight: set[Any] = set()  # the cut-off callbacks of live requests
        self._in_flight_lock = threading.Lock()

    def interrupt(self) -> None:
        """Stop at once: cut every request in flight and send no retry, until :meth:`resume`."""
        self._stopped.set()
        with self._in_flight_lock:
            cut = list(self._in_flight)
        for expire in cut:
            expire()

    def resume(self) -> None:
        """Send requests again after :meth:`interrupt`."""
        self._stopped.clear()

    def __repr__(self) -> str:
        return f"ChatClient(url={self.shown_url!r}, api_key={self._api_key!r})"

    def __getstate__(self) -> dict[str, Any]:
        # Pickles (sent to worker processes, say) do not carry the key; the
        # receiving side reads $OPENAI_API_KEY again.
        state = dict(self.__dict__)
        state["_api_key"] = Secret(None)
        for name in ("_usage_lock", "_stopped", "_in_flight", "_in_flight_lock"):
            del state[name]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup_threads()
        self._api_key = Secret(os.environ.get("OPENAI_API_KEY") or None)

    def send(self, body: dict[str, Any]) -> Completion:
        """POST ``body``; return the reply's text (its message if :attr:`tool_calls`) and usage.

        Transient failures are retried.

        Raises:
            ContextTooLong: the server refused the prompt as too long.
            ChatCompletionError: the request failed for good.
        """
        data = json.dumps(body).encode("utf-8")
        for attempt in range(self.max_retries + 1):
            try:
                reply = self._post(data)
            except _Transient as failure:
                if attempt == self.max_retries or self._stopped.is_set():
                    raise ChatCompletionError(
                        f"POST {self.shown_url} failed after {attempt + 1} tries: {failure}"
                        + ("; interrupted, so not retried" if self._stopped.is_set() else "")
                    ) from None
                wait = self.backoff * 2**attempt
                if failure.retry_after is not None:
                    wait = max(wait, failure.retry_after)
                wait = min(wait, self.max_backoff)
                logger.warning(
                    "POST %s: %s; retry %d of %d in %.2fs.",
                    self.shown_url,
                    failure,
                    attempt + 1,
                    self.max_retries,
                    wait,
                )
                if self._stopped.wait(wait):  # interrupted while waiting: no retry
                    raise ChatCompletionError(
                        f"POST {self.shown_url}: interrupted, so not retried: {failure}"
                    ) from None
                continue
            return self._content(reply)
        raise AssertionError("unreachable")  # pragma: no cover

    def _post(self, data: bytes) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key.value:
            headers["Authorization"] = f"Bearer {self._api_key.value}"
        status, reason, reply_headers, payload = self._exchange(data, headers)
        if 300 <= status < 400:
            location = scrub(reply_headers.get("Location") or "nowhere")
            raise ChatCompletionError(
                f"POST {self.shown_url} was redirected (HTTP {status}) to {location}; "
                "redirects are not followed, so that the API key goes nowhere else: "
                "set base_url to the server's own address."
            )
        if status >= 400:
            detail = _clip(payload.decode("utf-8", "replace")).strip() or "(empty body)"
            # The reason phrase too: a server may echo the key anywhere.
            message = scrub(f"HTTP {status} {reason}: {detail}")
            if status in _TRANSIENT_STATUS:
                raise _Transient(message, _retry_after(reply_headers.get("Retry-After")))
            if status in _CONTEXT_STATUS and _CONTEXT_ERROR.search(detail):
                raise ContextTooLong(message)
            raise ChatCompletionError(f"POST {self.shown_url} failed with {message}")
        try:
            return json.loads(payload)
        except ValueError:
            snippet = _clip(payload.decode("utf-8", "replace"))
            raise ChatCompletionError(
                f"POST {self.shown_url} returned a body that is not JSON: {snippet!r}"
            ) from None

    def _exchange(
        self, data: bytes, headers: dict[str, str]
    ) -> tuple[int, str, http.client.HTTPMessage, bytes]:
        """POST ``data`` once and return (status, reason, headers, body) within ``timeout``.

        ``http.client`` rather than ``urllib``: it follows no redirect, and it
        exposes the socket that the deadline timer shuts down.
        """
        parts = urllib.parse.urlsplit(self.url)
        connection_class = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        connection = connection_class(parts.hostname, parts.port, timeout=self.timeout)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        expired = threading.Event()
        # The socket, held here: a response that closes the connection takes it
        # over, and connection.sock becomes None while the body is still read.
        held: list[socket.socket] = []

        def expire() -> None:
            expired.set()
            sock = held[0] if held else connection.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        if self._stopped.is_set():
            raise _Transient("interrupted before sending")
        with self._in_flight_lock:
            self._in_flight.add(expire)  # interrupt() cuts this request as the deadline would
        timer = threading.Timer(self.timeout, expire)
        timer.daemon = True
        timer.start()
        too_slow = _Transient(f"no complete response within {self.timeout:g}s")
        try:
            connection.connect()
            held.append(connection.sock)
            if expired.is_set():  # the deadline passed while connecting
                raise too_slow
            connection.request("POST", target, body=data, headers=headers)
            response = connection.getresponse()
            payload = self._read_capped(response)
            if expired.is_set():  # a shut-down socket reads as a short body
                raise too_slow
            return response.status, response.reason, response.headers, payload
        except (OSError, http.client.HTTPException) as error:
            if expired.is_set() or isinstance(error, TimeoutError):
                raise too_slow from None
            # A garbage status line or a refused header may quote the key.
            raise _Transient(scrub(f"connection failed: {type(error).__name__}: {error}")) from None
        finally:
            timer.cancel()
            with self._in_flight_lock:
                self._in_flight.discard(expire)
            connection.close()

    def _read_capped(self, response: http.client.HTTPResponse) -> bytes:
        """Read the body, refusing it as soon as it passes ``max_reply_bytes``."""
        limit = self.max_reply_bytes
        declared = response.getheader("Content-Length") or ""
        if declared.isdigit() and int(declared) > limit:
            raise self._too_large()
        chunks, size = [], 0
        while True:
            chunk = response.read(min(_READ_CHUNK, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise self._too_large()

    def _too_large(self) -> ChatCompletionError:
        return ChatCompletionError(
            f"POST {self.shown_url} returned a reply larger than max_reply_bytes="
            f"{self.max_reply_bytes}; lower max_new_tokens or raise max_reply_bytes."
        )

    def _content(self, reply: dict[str, Any]) -> Completion:
        try:
            message = reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            snippet = _clip(json.dumps(reply))
            raise ChatCompletionError(
                f"POST {self.shown_url} returned no choices[0].message: {snippet}"
            ) from None
        usage = reply.get("usage") if isinstance(reply, dict) else None
        prompt_tokens = _usage_count(usage, "prompt_tokens")
        completion_tokens = _usage_count(usage, "completion_tokens")
        if completion_tokens is not None:
            with self._usage_lock:
                self.completion_tokens += completion_tokens
        if self.tool_calls:
            content = message if isinstance(message, dict) else {}
        else:
            text = message.get("content") if isinstance(message, dict) else None
            # A reply with only tool calls or a refusal has no content: an empty
            # action, which the env answers as invalid.
            content = scrub(text) if isinstance(text, str) else ""
        return Completion(content, prompt_tokens, completion_tokens)


class ContextTooLong(Exception):
    """The server refused the prompt as too long for the model's context."""


class _Transient(Exception):
    """A failure worth retrying."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date; the exponential backoff applies
    return max(seconds, 0.0) if seconds is not None and math.isfinite(seconds) else None
