"""Keep secrets out of everything the project prints or stores.

Agent settings travel far: into the table title, the ``agent`` field of a
result, the header of a run log (which the resume check compares) and error
messages.  A keyword argument whose *name* looks secret (``api_key``,
``token``, ``password``, ``secret``, anything ending in ``_key`` or
``_token``) is shown as ``"***"`` everywhere, and a user name or password in a
URL is shown as ``***@``.

Design decision: a secret is replaced by the same ``"***"`` whatever its
value, not by a hash of it.  An API key does not change what an agent does, so
two runs that differ only in the key *are* the same agent: a run resumes after
the key is rotated, and everything that does change behaviour (model, URL,
temperature...) still tells agents apart in the resume check.  A hash would
also hand out material for guessing short passwords offline.

>>> redact_kwargs({"model": "m", "api_key": "sk-123", "auth": {"password": "p"}})
{'model': 'm', 'api_key': '***', 'auth': {'password': '***'}}
>>> redact_url("https://user:pw@example.com:8443/v1")
'https://***@example.com:8443/v1'
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MASK", "is_secret_name", "redact_kwargs", "redact_url", "scrub", "secret_values"]

MASK = "***"

_SECRET_NAME = re.compile(
    r"(^|_)(api_?key|token|password|passwd|secret|credentials?)$|_key$|_token$", re.IGNORECASE
)
# user:password@ (or user@) right after an http(s) scheme, anywhere in a text.
_URL_USERINFO = re.compile(r"(?i)\b(https?://)[^/@\s]+@")


def is_secret_name(name: str) -> bool:
    """Return whether a keyword argument called ``name`` holds a secret.

    >>> [is_secret_name(n) for n in ("api_key", "hf_token", "password", "max_tokens", "key")]
    [True, True, True, False, False]
    """
    return bool(_SECRET_NAME.search(name))


def redact_url(text: str) -> str:
    """Return ``text`` with the user name and password of every http(s) URL masked."""
    return _URL_USERINFO.sub(lambda match: f"{match.group(1)}{MASK}@", text)


def redact_kwargs(value: Any) -> Any:
    """Return a copy of ``value`` with secret-named entries masked, at any depth.

    Strings elsewhere keep their text, except that URL credentials are masked.
    """
    if isinstance(value, Mapping):
        return {
            key: MASK
            if isinstance(key, str) and is_secret_name(key) and item is not None
            else redact_kwargs(item)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(redact_kwargs(item) for item in value)
    if isinstance(value, str):
        return redact_url(value)
    return value


def secret_values(value: Any) -> list[str]:
    """Return the secret strings held in ``value`` (secret-named entries, URL credentials)."""
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and is_secret_name(key) and isinstance(item, str):
                found.append(item)
            else:
                found.extend(secret_values(item))
    elif isinstance(value, (list, tuple)):
        for item in value:
            found.extend(secret_values(item))
    elif isinstance(value, str):
        for match in _URL_USERINFO.finditer(value):
            userinfo = urllib.parse.unquote(match.group(0)[len(match.group(1)) : -1])
            found.extend(part for part in userinfo.split(":", 1) if part)
    return [secret for secret in found if secret]


def scrub(text: str, secrets: Iterable[str]) -> str:
    """Return ``text`` with every one of ``secrets`` (and URL credentials) masked."""
    # Longest first, so that a secret containing another is masked whole.
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return redact_url(text)
