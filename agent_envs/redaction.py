"""Keep secrets out of everything the project prints or stores.

Two layers, because a secret travels both by name and by value.

*By name.*  Agent settings travel far: into the table title, the ``agent``
field of a result, the header of a run log (which the resume check compares)
and error messages.  A keyword argument or header whose *name* looks secret
(``api_key``, ``token``, ``password``, ``secret``, ``Authorization``, anything
ending in ``_key`` or ``_token``, in snake_case, camelCase or kebab-case:
``accessToken``, ``x-api-key``) is shown as ``"***"``, a user name or password
in a URL as ``***@``, and a secret-named query parameter as ``api_key=***``.

*By value.*  A server may echo the key in an error, a library may print a
header, an agent may put it in an exception.  So every secret value an agent
is given is remembered (:func:`remember`): secret-named arguments and
headers, URL user names, passwords and secret query parameters
(:func:`secret_values`), and secret-named environment variables such as
``OPENAI_API_KEY`` (:func:`environment_secrets`).  :func:`scrub` masks each of
them, and every JSON-escaped (``\\/``, ``\\uXXXX``, doubled backslashes) and
URL-encoded spelling of it, in any text; the project
scrubs what it prints (the command line wraps stdout and stderr, Ray workers
too), episode errors, run-log lines (transcripts included) and result files,
always *before* a text is cut to length.

Design decisions:

* A secret is replaced by the same ``"***"`` whatever its value, not by a hash
  of it.  An API key does not change what an agent does, so two runs that
  differ only in the key *are* the same agent: a run resumes after the key is
  rotated, and everything that does change behaviour (model, URL,
  temperature...) still tells agents apart in the resume check.  A hash would
  also hand out material for guessing short passwords offline.
* Values shorter than :data:`MIN_SECRET_LENGTH` characters are masked by
  name and position only, never by value: masking the URL user name ``u``
  everywhere would turn every letter u of a message into ``***``, and a value
  that short is no secret against guessing anyway.

>>> redact_kwargs({"model": "m", "api_key": "sk-123", "auth": {"password": "p"}})
{'model': 'm', 'api_key': '***', 'auth': {'password': '***'}}
>>> redact_url("https://user:pw@example.com:8443/v1?api_key=sk-123&n=1")
'https://***@example.com:8443/v1?api_key=***&n=1'
>>> scrub("HTTP 401 bad key sk-abcdef (sk-abcdef%0A)", ["sk-abcdef\\n"])
'HTTP 401 bad key *** (***)'
"""

from __future__ import annotations

import functools
import os
import re
import sys
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "ScrubbingStream",
    "environment_secrets",
    "is_secret_name",
    "redact_kwargs",
    "redact_url",
    "remember",
    "scrub",
    "scrubbed_output",
    "secret_values",
]

MASK = "***"
#: Shorter values are masked by name and position only (see the module's design notes).
MIN_SECRET_LENGTH = 6

_SECRET_NAME = re.compile(
    r"(^|_)(api_?key|apikey|token|password|passwd|passphrase|secret|credentials?|authorization"
    r"|cookie)$|_key$|_token$|_secret$",
    re.IGNORECASE,
)
# user:password@ (or user@) right after an http(s) scheme, anywhere in a text.
_URL_USERINFO = re.compile(r"(?i)\b(https?://)[^/@\s]+@")
# name=value after ?, & or ; : a query parameter, masked when its name is secret.
_QUERY_PARAMETER = re.compile(r"([?&;])([A-Za-z0-9_.\-]+)=([^&#\s\"'<>]*)")
# "Bearer sk-...": the credential of an Authorization header alone, too.
_SCHEME = re.compile(r"^(bearer|basic|token|digest)\s+", re.IGNORECASE)


def _snake(name: str) -> str:
    """``accessToken`` / ``x-api-key`` / ``Authorization`` -> ``access_token`` / ... (lowercase)."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"[-.\s]+", "_", name).lower()


def is_secret_name(name: str) -> bool:
    """Return whether an argument, header or variable called ``name`` holds a secret.

    >>> [is_secret_name(n) for n in ("api_key", "hf_token", "password", "max_tokens", "key")]
    [True, True, True, False, False]
    >>> [is_secret_name(n) for n in ("accessToken", "secretKey", "x-api-key", "Authorization")]
    [True, True, True, True]
    """
    return bool(_SECRET_NAME.search(_snake(name)))


def _mask_query(match: re.Match[str]) -> str:
    separator, name, value = match.groups()
    shown = MASK if value and is_secret_name(urllib.parse.unquote_plus(name)) else value
    return f"{separator}{name}={shown}"


def redact_url(text: str) -> str:
    """Return ``text`` with URL credentials and secret-named query parameters masked."""
    text = _URL_USERINFO.sub(lambda match: f"{match.group(1)}{MASK}@", text)
    return _QUERY_PARAMETER.sub(_mask_query, text) if "=" in text else text


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


def _strings(value: Any) -> Iterator[str]:
    """Every string inside ``value`` (a secret-named entry may hold a dict or a list)."""
    if isinstance(value, str):
        yield value
        match = _SCHEME.match(value)
        if match:
            yield value[match.end() :]
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _url_secrets(text: str) -> Iterator[str]:
    for match in _URL_USERINFO.finditer(text):
        userinfo = match.group(0)[len(match.group(1)) : -1]
        for part in userinfo.split(":", 1):
            yield part
            yield urllib.parse.unquote(part)
    for _, name, value in _QUERY_PARAMETER.findall(text):
        if value and is_secret_name(urllib.parse.unquote_plus(name)):
            yield value
            yield urllib.parse.unquote_plus(value)


def secret_values(value: Any) -> list[str]:
    """Return the secret strings held in ``value``, at any depth.

    They are the values of secret-named entries (and the credential after
    ``Bearer`` in one), URL user names and passwords, and the values of
    secret-named URL query parameters.
    """
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and is_secret_name(key):
                found.extend(_strings(item))
            else:
                found.extend(secret_values(item))
    elif isinstance(value, (list, tuple)):
        for item in value:
            found.extend(secret_values(item))
    elif isinstance(value, str):
        found.extend(_url_secrets(value))
    return [secret for secret in dict.fromkeys(found) if secret]


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Return the values of the secret-named environment variables (``OPENAI_API_KEY``...)."""
    environ = os.environ if environ is None else environ
    return [value for name, value in environ.items() if value and is_secret_name(name)]


# The JSON short escapes; any character may also be written \\uXXXX.
_JSON_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r",
                 "\t": "t"}  # fmt: skip


def _hex(value: int, width: int) -> str:
    """A regex for ``value`` in ``width`` hex digits, in either case (``\\u002F``, ``%2f``)."""
    digits = f"{value:0{width}x}"
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in digits)


def _char_pattern(char: str) -> str:
    """A regex for one character of a secret in each form a text may carry it.

    Itself; a JSON escape (``\\/``, ``\\n``, ``\\u00e9``, a surrogate pair),
    behind any number of backslashes, as JSON inside JSON doubles them; a
    ``repr`` escape (``\\x0a``); a URL escape (``%2F``, ``+`` for a space).
    """
    code = ord(char)
    # UTF-16 code units: one, or a surrogate pair outside the Basic Multilingual Plane.
    wide = char.encode("utf-16-be", "surrogatepass")
    units = [int.from_bytes(wide[i : i + 2], "big") for i in range(0, len(wide), 2)]
    options = [re.escape(char), "".join(rf"\\+u{_hex(unit, 4)}" for unit in units)]
    if char in _JSON_ESCAPES or char == "'":
        options.append(r"\\+" + re.escape(_JSON_ESCAPES.get(char, char)))
    if code < 256:
        options.append(rf"\\+x{_hex(code, 2)}")
    options.append("".join(f"%{_hex(byte, 2)}" for byte in char.encode()))
    if char == " ":
        options.append(r"\+")
    return f"(?:{'|'.join(options)})"


def _forms(secret: str) -> set[str]:
    """Regexes for a secret as it may appear in a text: itself or trimmed, in any escaped form.

    Each character may be escaped on its own, so a server's JSON that writes
    ``/`` as ``\\/`` or a letter as ``\\u0041`` is masked as surely as
    ``json.dumps``'s output.
    """
    values = {
        value for value in {secret, secret.strip()} if len(value.strip()) >= MIN_SECRET_LENGTH
    }
    return {"".join(map(_char_pattern, value)) for value in values}


class _Registry:
    """The secret forms this process masks: remembered ones and the environment's."""

    def __init__(self) -> None:
        self.remembered: set[str] = set()
        self.environment: set[str] | None = None  # read on first use
        self.ordered: list[str] = []

    def add(self, secrets: Iterable[str]) -> None:
        new = set().union(*(_forms(secret) for secret in secrets if isinstance(secret, str)))
        if not new <= self.remembered:
            self.remembered |= new
            self.ordered = []

    def forms(self) -> list[str]:
        if self.environment is None:
            self.environment = set().union(*map(_forms, environment_secrets()))
            self.ordered = []
        if not self.ordered and (self.remembered or self.environment):
            # Longest first, so that a secret containing another is masked whole.
            self.ordered = sorted(self.remembered | self.environment, key=len, reverse=True)
        return self.ordered


@functools.lru_cache(maxsize=64)
def _matcher(forms: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled alternation of the secret regexes (cached: most calls reuse one set)."""
    return re.compile("|".join(forms))


_REGISTRY = _Registry()


def remember(secrets: Iterable[str], environment: bool = False) -> None:
    """Mask ``secrets`` (and, with ``environment``, the environment's, read again) from now on.

    Agents built by :func:`agent_envs.plugins.make_agent` have their secret
    arguments remembered; an agent holding a key by other means (such as
    ``$OPENAI_API_KEY``) should remember it itself.
    """
    _REGISTRY.add(secrets)
    if environment:
        _REGISTRY.environment = None


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """Return ``text`` with every secret masked: ``secrets``, remembered ones, URL credentials.

    Each secret's escaped and encoded forms are masked too (see :func:`remember`).
    """
    extra = set().union(*(_forms(secret) for secret in secrets if isinstance(secret, str)))
    forms = _REGISTRY.forms()
    if extra:
        forms = sorted(extra.union(forms), key=len, reverse=True)
    if forms:
        text = _matcher(tuple(forms)).sub(MASK, text)
    return redact_url(text)


class ScrubbingStream:
    """A text stream that :func:`scrub` s everything written to it, then passes it on."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        """Write ``text`` with its secrets masked; return ``len(text)`` as streams do."""
        self.stream.write(scrub(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextmanager
def scrubbed_output() -> Iterator[None]:
    """Scrub everything written to ``sys.stdout`` and ``sys.stderr`` within the block."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ScrubbingStream(sys.stdout), ScrubbingStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
