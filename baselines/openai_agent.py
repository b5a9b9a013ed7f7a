"""OpenAIChatAgent: a model behind an OpenAI-compatible chat-completions server.

vLLM, SGLang, llama.cpp's server, TGI and the OpenAI API itself all serve
``POST /v1/chat/completions``.  This agent talks to it with the standard
library only (``urllib`` and threads), so the ``openai`` SDK is not needed.

Prompts and parsing are the ones :class:`~baselines.hf_agent.HFAgent` uses
(:mod:`baselines.llm_prompting`): the dialogue from ``info["messages"]`` or the
observation alone, the system prompt first, and the action parsed out of the
reply, whose full text is kept as ``AgentAction.raw``.  The server applies the
chat template; the agent does not trim long dialogues (use
``wrappers.ChatHistory(window=N)`` to bound them).

Seeds.  Each request carries ``seed``, derived from the agent's ``seed``,
``info["episode_seed"]`` (different for every attempt), the turn and the
prompt.  Servers that honour it (vLLM, SGLang, llama.cpp) then make a rerun
draw the same samples while the K attempts of Pass@K stay independent.

Errors.  Connection failures, timeouts, HTTP 408, 409, 429 and 5xx are
transient: they are retried up to ``max_retries`` times, waiting
``backoff * 2**attempt`` seconds, or the server's ``Retry-After`` if that is
longer, and never more than ``max_backoff``.  Anything else, or a transient error that
outlasts the retries, raises :class:`ChatCompletionError`.  The API key goes
only into the ``Authorization`` header: it is never logged, never in
``repr`` and never in an exception message.

Long dialogues.  When the server refuses a prompt as longer than the model's
context (HTTP 400/413/422 whose message speaks of the context or of too many
tokens), the agent drops the older half of the exchanges between the task
statement and the latest exchange and sends the request again, as
``HFAgent`` trims its prompts; the system prompt, the task statement and the
latest exchange are always kept.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agent_envs.protocol import EPISODE_SEED, AgentAction
from baselines.llm_prompting import (
    DEFAULT_SYSTEM_PROMPT,
    build_messages,
    check_sampling,
    count_exchanges,
    derive_seed,
    drop_exchanges,
    to_agent_action,
    turn_of,
)
from wrappers.validators import check_int, check_number

__all__ = ["ChatCompletionError", "OpenAIChatAgent"]

logger = logging.getLogger(__name__)

_TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
# How vLLM, SGLang, llama.cpp, TGI and OpenAI word a prompt that is too long.
_CONTEXT_STATUS = frozenset({400, 413, 422})
_CONTEXT_ERROR = re.compile(
    r"context|too long|too many tokens|maximum.{0,40}tokens|tokens.{0,40}must be <=", re.IGNORECASE
)
_ERROR_BODY_LIMIT = 500


class ChatCompletionError(RuntimeError):
    """A chat-completions request failed for good (the message never holds the API key)."""


class _Secret:
    """Hold the API key so that it never prints."""

    __slots__ = ("value",)

    def __init__(self, value: str | None) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "'***'" if self.value else "None"

    def scrub(self, text: str) -> str:
        """Return ``text`` with the key (if any) blanked out."""
        return text.replace(self.value, "***") if self.value else text


def chat_completions_url(base_url: str) -> str:
    """Return the chat-completions endpoint for ``base_url``.

    ``http://host:8000/v1`` and ``http://host:8000`` both give
    ``http://host:8000/v1/chat/completions``; a URL that already ends with
    ``/chat/completions`` is used as it is.

    >>> chat_completions_url("http://127.0.0.1:8000")
    'http://127.0.0.1:8000/v1/chat/completions'
    >>> chat_completions_url("https://api.example.com/v1/")
    'https://api.example.com/v1/chat/completions'
    """
    if not isinstance(base_url, str):
        raise TypeError(f"base_url must be a str, got {type(base_url).__name__}.")
    parsed = urllib.parse.urlsplit(base_url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(
            f"base_url must be an http(s) URL such as 'http://localhost:8000/v1', got {base_url!r}."
        )
    path = parsed.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions" if path.endswith("/v1") else "/v1/chat/completions"
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path, parsed.query, ""))


class OpenAIChatAgent:
    """Act with a model served behind an OpenAI-compatible ``/v1/chat/completions``.

    Args:
        base_url: the server, e.g. ``"http://localhost:8000/v1"``.
        model: the model name the server knows.
        api_key: the bearer token; by default ``$OPENAI_API_KEY``; none is sent
            when neither is set (local servers need none).
        system_prompt: put first in every prompt (``None`` for none); a system
            message from ``wrappers.ChatHistory`` takes its place.
        temperature: ``0`` for greedy decoding, else the sampling temperature.
        top_p: nucleus sampling threshold in ``(0, 1]``.
        max_tokens: the most tokens generated per turn.
        timeout: seconds to wait for one response.
        max_retries: how often a transient failure is retried.
        backoff: the first retry waits this many seconds, doubling each time.
        max_backoff: the longest wait between two tries.
        concurrency: the most requests in flight during ``act_batch``.
        seed: the agent's seed, mixed into every request's ``seed``.
        extra_body: more JSON fields for every request, such as
            ``{"stop": ["\\n\\n"]}`` or vLLM's ``{"top_k": 20}``.

    Example::

        agent = OpenAIChatAgent("http://localhost:8000/v1", "Qwen/Qwen2.5-7B-Instruct")
        action = agent.act(observation, info)   # an AgentAction; action.raw is the reply
    """

    budget_aware = False

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 256,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        concurrency: int = 16,
        seed: int = 0,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.url = chat_completions_url(base_url)
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty str, got {model!r}.")
        check_sampling(temperature, top_p, max_tokens, "max_tokens")
        check_number(timeout, "timeout (seconds)", 0.0, open_low=True)
        check_number(backoff, "backoff", 0.0)
        check_number(max_backoff, "max_backoff", 0.0)
        check_int(max_retries, "max_retries", 0)
        check_int(concurrency, "concurrency", 1)
        check_int(seed, "seed")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise TypeError(f"system_prompt must be a str or None, got {system_prompt!r}.")
        if extra_body is not None and not isinstance(extra_body, dict):
            raise TypeError(f"extra_body must be a dict or None, got {type(extra_body).__name__}.")
        if api_key is not None and not isinstance(api_key, str):
            raise TypeError("api_key must be a str or None.")
        self.model = model
        self.system_prompt = system_prompt
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.max_tokens = max_tokens
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.concurrency = concurrency
        self.seed = seed
        self.extra_body = dict(extra_body or {})
        # Checked now so that a bad extra_body fails here, not on the first turn.
        json.dumps(self.extra_body)
        self._api_key = _Secret(api_key or os.environ.get("OPENAI_API_KEY") or None)
        #: Completion tokens the server reported so far (when it reports usage).
        self.completion_tokens = 0
        self._usage_lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"OpenAIChatAgent(url={self.url!r}, model={self.model!r}, "
            f"temperature={self.temperature}, top_p={self.top_p}, max_tokens={self.max_tokens}, "
            f"concurrency={self.concurrency}, seed={self.seed}, api_key={self._api_key!r})"
        )

    def __getstate__(self) -> dict[str, Any]:
        # Pickles (sent to worker processes, say) do not carry the key; the
        # receiving side reads $OPENAI_API_KEY again.
        state = dict(self.__dict__)
        state["_api_key"] = _Secret(None)
        del state["_usage_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._usage_lock = threading.Lock()
        self._api_key = _Secret(os.environ.get("OPENAI_API_KEY") or None)

    # ---------------------------------------------------------------- acting
    def act(self, observation: str, info: dict[str, Any]) -> AgentAction:
        """Return the action for one episode."""
        return to_agent_action(self.complete(self.request_body(observation, info)))

    def act_batch(
        self, observations: list[str], infos: list[dict[str, Any]]
    ) -> list[AgentAction | ChatCompletionError]:
        """Return one action per episode, with up to ``concurrency`` requests in flight.

        A request that fails for good leaves its :class:`ChatCompletionError`
        in that episode's slot, so the evaluator records an error for that
        episode alone and the others go on.
        """
        if len(observations) != len(infos):
            raise ValueError(
                f"act_batch got {len(observations)} observations but {len(infos)} infos."
            )
        bodies = [
            self.request_body(obs, info) for obs, info in zip(observations, infos, strict=True)
        ]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(bodies))) as pool:
            futures = [pool.submit(self.complete, body) for body in bodies]
        return [
            to_agent_action(future.result()) if future.exception() is None else future.exception()
            for future in futures
        ]

    def request_body(self, observation: str, info: dict[str, Any]) -> dict[str, Any]:
        """Return the JSON body of the request for one turn."""
        messages = build_messages(observation, info, self.system_prompt)
        prompt_key = json.dumps(messages, sort_keys=True)
        return {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "n": 1,
            "seed": derive_seed(self.seed, info.get(EPISODE_SEED), turn_of(info), prompt_key),
            **self.extra_body,
        }

    # ---------------------------------------------------------------- HTTP
    def complete(self, body: dict[str, Any]) -> str:
        """Send one request and return the reply's text.

        Transient failures are retried; a prompt the server finds too long is
        sent again with the older half of the exchanges dropped.
        """
        while True:
            try:
                return self._complete_once(body)
            except _ContextTooLong as failure:
                messages = body["messages"]
                exchanges = count_exchanges(messages)
                if exchanges == 0:
                    raise ChatCompletionError(
                        f"POST {self.url}: the prompt is too long even without history "
                        f"(system prompt, task and latest exchange): {failure}"
                    ) from None
                dropped = (exchanges + 1) // 2
                logger.info("Prompt too long for the server; dropping %d exchanges.", dropped)
                body = {**body, "messages": drop_exchanges(messages, dropped)}

    def _complete_once(self, body: dict[str, Any]) -> str:
        data = json.dumps(body).encode("utf-8")
        for attempt in range(self.max_retries + 1):
            try:
                reply = self._post(data)
            except _Transient as failure:
                if attempt == self.max_retries:
                    raise ChatCompletionError(
                        f"POST {self.url} failed after {attempt + 1} tries: {failure}"
                    ) from None
                wait = self.backoff * 2**attempt
                if failure.retry_after is not None:
                    wait = max(wait, failure.retry_after)
                wait = min(wait, self.max_backoff)
                logger.warning(
                    "POST %s: %s; retry %d of %d in %.2fs.",
                    self.url,
                    failure,
                    attempt + 1,
                    self.max_retries,
                    wait,
                )
                time.sleep(wait)
                continue
            return self._content(reply)
        raise AssertionError("unreachable")  # pragma: no cover

    def _post(self, data: bytes) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key.value:
            headers["Authorization"] = f"Bearer {self._api_key.value}"
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            detail = self._api_key.scrub(_read_error(error))
            message = f"HTTP {error.code} {error.reason}: {detail}"
            if error.code in _TRANSIENT_STATUS:
                raise _Transient(message, _retry_after(error)) from None
            if error.code in _CONTEXT_STATUS and _CONTEXT_ERROR.search(detail):
                raise _ContextTooLong(message) from None
            raise ChatCompletionError(f"POST {self.url} failed with {message}") from None
        except TimeoutError:
            raise _Transient(f"no response within {self.timeout:g}s") from None
        except urllib.error.URLError as error:
            if isinstance(error.reason, TimeoutError):
                raise _Transient(f"no response within {self.timeout:g}s") from None
            raise _Transient(f"connection failed: {error.reason}") from None
        except (ConnectionError, http.client.HTTPException) as error:
            raise _Transient(f"connection failed: {type(error).__name__}: {error}") from None
        try:
            return json.loads(payload)
        except ValueError:
            snippet = self._api_key.scrub(payload[:_ERROR_BODY_LIMIT].decode("utf-8", "replace"))
            raise ChatCompletionError(
                f"POST {self.url} returned a body that is not JSON: {snippet!r}"
            ) from None

    def _content(self, reply: dict[str, Any]) -> str:
        try:
            message = reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            snippet = self._api_key.scrub(json.dumps(reply)[:_ERROR_BODY_LIMIT])
            raise ChatCompletionError(
                f"POST {self.url} returned no choices[0].message: {snippet}"
            ) from None
        usage = reply.get("usage") if isinstance(reply, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            with self._usage_lock:
                self.completion_tokens += usage["completion_tokens"]
        content = message.get("content") if isinstance(message, dict) else None
        # A reply with only tool calls or a refusal has no content: an empty
        # action, which the env answers as invalid.
        return content if isinstance(content, str) else ""


class _ContextTooLong(Exception):
    """The server refused the prompt as too long for the model's context."""


class _Transient(Exception):
    """A failure worth retrying."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _read_error(error: urllib.error.HTTPError) -> str:
    try:
        body = error.read()[:_ERROR_BODY_LIMIT].decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        body = ""
    return body.strip() or "(empty body)"


def _retry_after(error: urllib.error.HTTPError) -> float | None:
    value = error.headers.get("Retry-After") if error.headers else None
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None  # an HTTP date; the exponential backoff applies
