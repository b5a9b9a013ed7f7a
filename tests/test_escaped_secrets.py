"""A key in any JSON-escaped form never reaches output or files.

A server may escape ``/`` as ``\\/`` or any character as ``\\uXXXX``, not
only in ``json.dumps``'s spelling.  Servers listen on 127.0.0.1.
"""

from __future__ import annotations

import json

import pytest
from test_secrets_and_interrupts import RawServer, assert_no_key, everything_written, openai_eval

from agent_envs.redaction import MASK, scrub

KEY = "sk-LEAK/abc+def=1234567890"


def _escaped_forms(key: str) -> list[str]:
    every = "".join(f"\\u{ord(c):04X}" for c in key)
    return [
        key.replace("/", "\\/"),  # PHP's and Java's JSON encoders escape the slash
        every,  # every character as \uXXXX
        every.lower(),
        key.replace("/", "\\u002f").replace("L", "\\u004C"),  # a mix of spellings
        json.dumps(json.dumps(key.replace("/", "\\/")))[3:-3],  # JSON inside JSON
        key.replace("+", "%2b").replace("/", "%2F"),  # URL-encoded, either case
    ]


@pytest.mark.parametrize("form", _escaped_forms(KEY))
def test_every_json_escaped_form_of_a_secret_is_masked(form):
    """Item 15: `\\/` and `\\uXXXX` spellings went through scrub whole."""
    text = f"upstream failed for {form} (retrying)"
    assert scrub(text, [KEY]) == f"upstream failed for {MASK} (retrying)"


def _leaky_reply(request: bytes) -> bytes:
    body = json.dumps({"detail": f"upstream failed for {KEY}"}).replace("/", "\\/")
    data = body.encode()
    return (
        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    ).encode() + data


@pytest.mark.parametrize("source", ["agent-kwargs", "environment"])
def test_a_key_echoed_with_escaped_slashes_is_masked_everywhere(
    tmp_path, capsys, caplog, monkeypatch, source
):
    """Item 15: the retry warnings, the final error and the --log lines held the whole key."""
    kwargs = {"api_key": KEY} if source == "agent-kwargs" else {}
    if source == "environment":
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server = RawServer(_leaky_reply)
    try:
        status = openai_eval(tmp_path, {"base_url": server.base_url, "max_retries": 1, **kwargs})
    finally:
        server.close()
    assert status == 2
    written = everything_written(tmp_path, capsys) + caplog.text
    assert_no_key(written, KEY)
    assert_no_key(written, KEY.replace("/", "\\/"))
    assert "upstream failed for ***" in written  # the message itself still reads
    assert f"Bearer {KEY}".encode() in server.requests[0]  # the server did get it
