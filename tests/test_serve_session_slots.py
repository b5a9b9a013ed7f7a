"""Sessions created over HTTP cannot hold every slot of ``agent-envs serve``.

Servers listen on 127.0.0.1 only, in a thread of this process.  No test waits
for a timer: the grace period's clock is set by the test.
"""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("openenv.core")
pytest.importorskip("uvicorn")
from openenv.core import GenericEnvClient
from test_integrations_openenv import ENV_ID, _Server
from test_serve_untrusted_clients import post

from agent_envs.integrations.openenv import create_app


def create_session(url: str) -> dict:
    request = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
    status, reply = post(url, "/mcp", json.dumps(request).encode())
    assert status == 200, reply
    return reply


def test_a_flood_of_http_sessions_leaves_slots_for_websocket_clients():
    """Item 5: 63 `openenv/session/create` calls held 63 of 64 slots; now a quarter at most."""
    app = create_app(ENV_ID, max_concurrent_envs=64, regime=3)
    with _Server(app) as url:
        replies = [create_session(url) for _ in range(63)]
        created = [reply for reply in replies if "result" in reply]
        refused = [reply for reply in replies if "error" in reply]
        assert len(created) == 16 and len(refused) == 47
        assert "capacity" in refused[0]["error"]["message"].lower()
        clients = [GenericEnvClient(base_url=url).sync() for _ in range(3)]
        try:
            for task_id, env in enumerate(clients):
                env.connect()
                assert env.reset(task_id=task_id).observation["text"]
        finally:
            for env in clients:
                env.close()


def test_unused_http_sessions_are_closed_after_the_grace_and_used_ones_are_not():
    """Item 5: a session no request uses within the grace period is closed; a used one stays.

    A `tools/list` call answered "Environment does not support MCP" is no use:
    it kept a session past the grace, holding a slot.
    """
    app = create_app(ENV_ID, max_concurrent_envs=12, regime=3, http_grace=1e6)
    server = app.state.openenv
    now = [0.0]
    server.clock = lambda: now[0]
    with _Server(app) as url:
        unused, asked, used = (create_session(url)["result"]["session_id"] for _ in range(3))
        request = {
            "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"session_id": asked},
        }  # fmt: skip
        _, reply = post(url, "/mcp", json.dumps(request).encode())
        assert "does not support MCP" in reply["error"]["message"]
        server._session_info[used].last_activity_at += 1  # a use the server counted

        def close_unused():
            future = asyncio.run_coroutine_threadsafe(server.close_unused(), server.loop)
            return future.result(timeout=30)

        now[0] = 1e6 - 1  # within the grace: nothing is closed
        assert close_unused() == [] and server.active_sessions == 3
        now[0] = 1e6  # the grace is over: the unused one and the one only asked go
        assert sorted(close_unused()) == sorted([unused, asked])
        assert server.active_sessions == 1 and used in server._sessions


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_http_sessions_never_take_the_last_slot(slots):
    """At --max-sessions 1 an HTTP session took the only slot, and a WebSocket client got
    CAPACITY_REACHED; HTTP now gets a quarter of the slots, at least one, never all."""
    app = create_app(ENV_ID, max_concurrent_envs=slots, regime=3)
    with _Server(app) as url:
        replies = [create_session(url) for _ in range(slots)]
        assert sum("result" in reply for reply in replies) == min(1, slots - 1)
        with GenericEnvClient(base_url=url).sync() as env:
            assert env.reset(task_id=1).observation["text"]
