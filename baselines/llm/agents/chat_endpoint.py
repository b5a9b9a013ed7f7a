"""Where a chat-completions request goes, and the key it carries, neither ever printed.

:func:`chat_completions_url` turns a ``base_url`` into the endpoint and
refuses a user name or password inside it (URLs are printed in warnings and
errors); :class:`Secret` holds the API key so that it never prints.  The HTTP
client that uses both is :class:`baselines.llm.agents.openai_client.ChatClient`.
"""

from __future__ import annotations

import urllib.parse

from agent_envs.redaction import remember
from wrappers.errors import InvalidType, InvalidValue

__all__ = ["Secret", "chat_completions_url"]


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
        raise InvalidType(f"base_url must be a str, got {type(base_url).__name__}.")
    parsed = urllib.parse.urlsplit(base_url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        # Whatever precedes an "@" may be a password, even in a malformed URL.
        shown = f"***@{base_url.rsplit('@', 1)[1]}" if "@" in base_url else base_url
        raise InvalidValue(
            f"base_url must be an http(s) URL such as 'http://localhost:8000/v1', got {shown!r}."
        )
    if "@" in parsed.netloc:
        raise InvalidValue(
            "base_url must not hold a user name or password (URLs are printed in warnings "
            "and errors); pass the token as api_key or $OPENAI_API_KEY."
        )
    try:
        parsed.port  # noqa: B018 (raises ValueError for a bad port)
    except ValueError:
        raise InvalidValue(f"base_url has an invalid port: {base_url!r}.") from None
    path = parsed.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions" if path.endswith("/v1") else "/v1/chat/completions"
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path, parsed.query, ""))


class Secret:
    """Hold the API key so that it never prints, and have every text the project writes mask it.

    The key is trimmed: one read from a file often ends in a newline, which
    ``http.client`` refuses in a header (and quotes, key included).
    """

    __slots__ = ("value",)

    def __init__(self, value: str | None) -> None:
        self.value = value.strip() or None if value else None
        if value:
            remember([value])

    def __repr__(self) -> str:
        return "'***'" if self.value else "None"
