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
    """Item 5: a session no request uses within the grace period is closed; a used one stays."""
    app = create_app(ENV_ID, max_concurrent_envs=8, regime=3, http_grace=1e6)
    server = app.state.openenv
    now = [0.0]
    server.clock = lambda: now[0]
    with _Server(app) as url:
        unused, used = (create_session(url)["result"]["session_id"] for _ in range(2))
        request = {
            "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"session_id": used},
        }  # fmt: skip
        post(url, "/mcp", json.dumps(request).encode())  # any request on it is a use

        def close_unused():
            future = asyncio.run_coroutine_threadsafe(server.close_unused(), server.loop)
            return future.result(timeout=30)

        now[0] = 1e6 - 1  # within the grace: nothing is closed
        assert close_unused() == [] and server.active_sessions == 2
        now[0] = 1e6  # the grace is over: only the unused one goes
        assert close_unused() == [unused]
        assert server.active_sessions == 1 and used in server._sessions
