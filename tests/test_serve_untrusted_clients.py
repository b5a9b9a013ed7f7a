"""``agent-envs serve`` treats every client as untrusted.

Servers listen on 127.0.0.1 only, in a thread of this process; every wait is
a bounded loop.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("openenv.core")
uvicorn = pytest.importorskip("uvicorn")
websockets_sync = pytest.importorskip("websockets.sync.client")
from openenv.core import GenericEnvClient  # noqa: E402
from test_integrations_openenv import ENV_ID, _Server  # noqa: E402

from agent_envs.core import FIRST_EXAMPLE_ID  # noqa: E402
from agent_envs.integrations.openenv import create_app  # noqa: E402
from agent_envs.integrations.trl import environment_factory  # noqa: E402
from wrappers.protocol import BUDGET  # noqa: E402

BAD_TASK_IDS = [-1, 2**70, 1.5, "abc", [1], {}, True, "7", 5.9, FIRST_EXAMPLE_ID, 2147483646]
BAD_BUDGETS = [0, -5, 1.5, 1e308, "10", True, 100, 2**70]


def post(url: str, path: str, body: bytes, headers: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(f"{url}{path}", data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


def ask(ws, message) -> dict:
    ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
    return json.loads(ws.recv(timeout=30))


@pytest.fixture(scope="module")
def fixed():
    """A server with --budget 3 and no client budgets: the server's T is the rule."""
    with _Server(create_app(ENV_ID, regime=3)) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def ranged():
    """A server whose clients may choose T in [1, 50]."""
    with _Server(create_app(ENV_ID, regime=3, client_budgets=(1, 50))) as base_url:
        yield base_url


# ------------------------------------------------------- item 8: the budget
def test_a_client_budget_is_refused_and_the_server_budget_ends_the_episode(fixed):
    """Item 8: reset {"budget": 100} played to success on turn 6 under --budget 3."""
    with websockets_sync.connect(ws_url(fixed)) as ws:
        refused = ask(ws, {"type": "reset", "data": {"task_id": 519, "budget": 100}})
        assert refused["type"] == "error"
        assert "client's budget is refused" in refused["data"]["message"]
        first = ask(ws, {"type": "reset", "data": {"task_id": 519}})  # secret 50
        assert first["data"]["observation"]["info"][BUDGET] == 3
        for turn in range(3):
            reply = ask(ws, {"type": "step", "data": {"action": str(turn + 1)}})
        assert reply["data"]["done"] and reply["data"]["observation"]["truncated"]
        after = ask(ws, {"type": "step", "data": {"action": "50"}})
        assert after["type"] == "error"  # no turn 4, let alone 6


@pytest.mark.parametrize("budget", BAD_BUDGETS)
def test_a_client_budget_outside_the_servers_range_is_refused(ranged, budget):
    """Item 8: budgets up to 2**70 were accepted and echoed."""
    with GenericEnvClient(base_url=ranged).sync() as env:
        with pytest.raises(RuntimeError, match="budget must be an int in \\[1, 50\\]"):
            env.reset(task_id=1, budget=budget)
        assert env.reset(task_id=1, budget=50).observation["info"][BUDGET] == 50


# --------------------------------------- item 10: HTTP errors are 422, one line
@pytest.mark.parametrize(
    "body",
    [{"task_id": value} for value in BAD_TASK_IDS] + [{"budget": value} for value in BAD_BUDGETS],
    ids=lambda body: f"{next(iter(body))}={next(iter(body.values()))!r}"[:40],
)
def test_bad_reset_values_over_http_are_422_with_one_log_line(ranged, caplog, body):
    """Items 10 and 14: 500s with 81 lines of traceback each; reserved and coerced ids accepted."""
    with caplog.at_level(logging.WARNING):
        status, reply = post(ranged, "/reset", json.dumps(body).encode())
    assert status == 422 and isinstance(reply["detail"], str), reply
    name = next(iter(body))
    assert name in reply["detail"] and "\n" not in reply["detail"]
    refusals = [r for r in caplog.records if r.getMessage().startswith("refused POST /reset")]
    assert len(refusals) == 1 and not any(r.exc_info for r in caplog.records)


def test_a_good_http_reset_still_answers_and_step_points_to_the_websocket(ranged):
    """Item 10: /step built a fresh env per request, so it failed even right after /reset."""
    status, reply = post(ranged, "/reset", json.dumps({"task_id": 519, "budget": 5}).encode())
    assert status == 200 and reply["observation"]["info"][BUDGET] == 5
    status, reply = post(ranged, "/step", json.dumps({"action": {"action": "50"}}).encode())
    assert status == 400
    assert "/ws" in reply["detail"] and "GenericEnvClient" in reply["detail"]


@pytest.mark.parametrize("task_id", BAD_TASK_IDS)
def test_reserved_and_coerced_task_ids_are_refused_over_the_websocket(ranged, task_id):
    """Item 14: the few-shot example ids (2147483646...) were accepted over OpenEnv's reset."""
    with GenericEnvClient(base_url=ranged).sync() as env:
        with pytest.raises(RuntimeError, match="task_id must be an int in"):
            env.reset(task_id=task_id)
        assert env.reset(task_id=FIRST_EXAMPLE_ID - 1).observation["text"]


@pytest.mark.parametrize("task_id", [5.9, True, "7", FIRST_EXAMPLE_ID, 2147483646, -1])
def test_the_trl_tool_env_refuses_reserved_and_coerced_task_ids(task_id):
    """Item 14: 5.9 became 5, True became 1 and "7" became 7; reserved ids were played."""
    episode = environment_factory(ENV_ID, 3)()
    with pytest.raises(ValueError, match="task_id must be an int in"):
        episode.reset(task_id=task_id)
    assert episode.reset(task_id=7).startswith("I am thinking")


# --------------------------------------- item 11: malformed WebSocket messages
def test_malformed_websocket_messages_are_answered_and_the_episode_goes_on(fixed):
    """Item 11: `[]`, `5`, `"str"`, `null`, deep nesting or a binary frame ended the session."""
    deep = "[" * 100_000 + "]" * 100_000
    with websockets_sync.connect(ws_url(fixed), max_size=None) as ws:
        ask(ws, {"type": "reset", "data": {"task_id": 519}})
        assert ask(ws, {"type": "step", "data": {"action": "10"}})["type"] == "observation"
        for message in ("[]", "5", '"str"', "null", deep, b"\x00\x01", "{not json"):
            reply = ask(ws, message)
            assert reply["type"] == "error" and reply["data"]["message"], reply
        # The same episode goes on: turn 2 of 3 wins.
        won = ask(ws, {"type": "step", "data": {"action": "50"}})
        assert won["data"]["observation"]["success"] and won["data"]["reward"] == 1.0


# ------------------------------------------------- item 12: the body size cap
def test_bodies_and_messages_over_the_cap_are_refused(tmp_path):
    """Item 12: a 300 MB body to /reset was read whole."""
    with _Server(create_app(ENV_ID, regime=3, max_body=4096)) as url:
        big = json.dumps({"task_id": 1, "pad": "x" * 10_000}).encode()
        status, reply = post(url, "/reset", big)
        assert status == 413 and "4,096 bytes" in reply["detail"]
        status, reply = post(url, "/reset", json.dumps({"task_id": 1}).encode())
        assert status == 200
        with websockets_sync.connect(ws_url(url), max_size=None) as ws:
            ask(ws, {"type": "reset", "data": {"task_id": 519}})
            reply = ask(ws, {"type": "step", "data": {"action": "1" * 10_000}})
            assert reply["type"] == "error" and "4,096 characters" in reply["data"]["message"]
            assert ask(ws, {"type": "step", "data": {"action": "50"}})["data"]["reward"] == 1.0


# --------------------------------------- item 9: idle sessions and origins
def _wait_until(condition, tries: int = 200, pause: float = 0.1) -> bool:
    for _ in range(tries):  # bounded: 20 s at most
        if condition():
            return True
        time.sleep(pause)
    return False


def _closed_for_idling(ws) -> None:
    """Wait for the server to close ``ws`` for silence (1001); a refused client gets a message."""
    with pytest.raises(Exception, match="1001"):
        ws.recv(timeout=20)


def test_idle_sessions_are_closed_and_their_slots_freed():
    """Item 9: idle WebSocket clients and never-closed HTTP sessions held every slot forever.

    Nothing races the 0.5 s idle timeout: the clients never speak (OpenEnv opens a
    session on connect), and each step waits for what the server does.
    """
    app = create_app(ENV_ID, max_concurrent_envs=3, regime=3, idle_timeout=0.5)
    sessions = app.state.openenv
    with _Server(app) as url:
        with contextlib.ExitStack() as clients:
            idle = [clients.enter_context(websockets_sync.connect(ws_url(url))) for _ in range(2)]
            request = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
            status, created = post(url, "/mcp", json.dumps(request).encode())
            assert status == 200 and created["result"]["session_id"]
            # The idle WebSockets are closed by the server (code 1001)...
            for ws in idle:
                _closed_for_idling(ws)
        # ...and the HTTP-created session by the reaper (it checks every 5 s).
        assert _wait_until(lambda: sessions.active_sessions == 0, tries=300)
        # Every slot is free again: three new clients each get a session (a client
        # over the limit is refused at once with an error message, not closed for idling).
        with contextlib.ExitStack() as clients:
            again = [clients.enter_context(websockets_sync.connect(ws_url(url))) for _ in range(3)]
            for ws in again:
                _closed_for_idling(ws)


@pytest.mark.parametrize(
    ("origin", "allowed", "accepted"),
    [
        ("http://evil.example", (), False),
        ("null", (), False),
        ("http://127.0.0.1:1", (), False),  # another port: another origin
        ("http://evil.example", ("http://evil.example",), True),
        ("http://evil.example", ("*",), True),
        (None, (), True),  # not a browser
        ("own", (), True),
    ],
)
def test_a_foreign_origin_is_refused_by_default(origin, allowed, accepted):
    """Item 9: a web page in the user's browser could drive a local server."""
    with _Server(create_app(ENV_ID, regime=3, allowed_origins=allowed)) as url:
        if origin == "own":
            origin = url
        headers = {} if origin is None else {"Origin": origin}
        try:
            with websockets_sync.connect(ws_url(url), additional_headers=headers) as ws:
                reply = ask(ws, {"type": "reset", "data": {"task_id": 1}})
            handshake = reply["type"] == "observation"
        except Exception as error:  # websockets' InvalidStatus
            assert "403" in str(error)
            handshake = False
        assert handshake == accepted
        status, _ = post(url, "/reset", b'{"task_id": 1}', headers)
        assert (status == 200) == accepted and status in (200, 403)


def test_serve_refuses_bad_guard_flags_in_one_line(capsys):
    """Items 8, 9, 12: the new flags are checked before the server starts."""
    from agent_envs.integrations.openenv import main

    for flags in (["--client-budgets", "x"], ["--client-budgets", "5:2"], ["--idle-timeout", "-1"],
                  ["--max-body", "10"]):  # fmt: skip
        assert main([ENV_ID, *flags]) == 2  # serve's flags go through run_command too
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("agent-envs serve: error:"), err


# ------------------------------- one check of a reset's values, HTTP and WebSocket
#: Raw JSON bodies: numbers JSON cannot hold, and values OpenEnv's HTTP model coerced.
UNCHECKED_SEEDS = ['{"seed": 1e999}', '{"seed": NaN}', '{"seed": "12"}', '{"seed": true}',
                   '{"seed": -1}', '{"seed": 9223372036854775808}', '{"seed": 1.5}']  # fmt: skip


@pytest.mark.parametrize("body", UNCHECKED_SEEDS)
def test_http_and_websocket_refuse_the_same_seeds(ranged, caplog, body):
    """POST /reset {"seed":1e999} or NaN answered 500 with a traceback, and "12" or true
    were taken as seeds; the WebSocket refused them all.  Both now refuse them alike."""
    with caplog.at_level(logging.WARNING):
        status, reply = post(ranged, "/reset", body.encode())
    assert status == 422 and "\n" not in reply["detail"], reply
    assert not any(record.exc_info for record in caplog.records)
    with websockets_sync.connect(ws_url(ranged)) as ws:
        refused = ask(ws, '{"type": "reset", "data": ' + body + "}")
        assert refused["type"] == "error", refused
        assert ask(ws, {"type": "reset", "data": {"seed": 12}})["type"] == "observation"
    status, reply = post(ranged, "/reset", b'{"seed": 9223372036854775807}')  # eval's limit
    assert status == 200, reply
