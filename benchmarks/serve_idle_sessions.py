"""Memory and open sessions of ``agent-envs serve`` after many clients go silent.

Starts the server (``create_app``, 127.0.0.1, in a thread of this process)
with a short idle timeout, opens ``--sessions`` sessions (half WebSocket
clients that reset once and then stay silent, half ``/mcp``
``openenv/session/create`` calls over HTTP that are never closed), waits past
the timeout, and prints the process's RSS and the server's open-session count
before, with every session open, and after.

    python benchmarks/serve_idle_sessions.py --sessions 200 --idle-timeout 30
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import threading
import time
import urllib.request

ENV_ID = "agent_envs/GuessNumber-v0"


def rss_mib() -> float:
    """This process's resident set size now (not the peak), in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def create_http_session(url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
    request = urllib.request.Request(f"{url}/mcp", data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert "session_id" in json.loads(reply.read())["result"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--idle-timeout", type=float, default=30.0)
    args = parser.parse_args()

    import uvicorn
    from websockets.sync.client import connect

    from agent_envs.integrations.openenv import create_app

    app = create_app(ENV_ID, regime=20, max_concurrent_envs=args.sessions + 8,
                     idle_timeout=args.idle_timeout)  # fmt: skip
    sessions = app.state.openenv
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    print(f"started: RSS {rss_mib():.1f} MiB, open sessions {sessions.active_sessions}")
    with contextlib.ExitStack() as clients:
        for index in range(args.sessions):
            if index % 2:
                create_http_session(url)
            else:
                ws = clients.enter_context(connect(f"ws://127.0.0.1:{port}/ws"))
                ws.send(json.dumps({"type": "reset", "data": {"task_id": index}}))
                ws.recv(timeout=30)
        opened = sessions.active_sessions
        print(f"{args.sessions} sessions open: RSS {rss_mib():.1f} MiB, open sessions {opened}")
        # OpenEnv's reaper looks every max(timeout / 4, 5) s; wait for two rounds.
        deadline = time.monotonic() + args.idle_timeout + 15
        while sessions.active_sessions and time.monotonic() < deadline:
            time.sleep(0.2)
        waited = time.monotonic() - deadline + args.idle_timeout + 15
        print(
            f"after {waited:.1f} s idle (timeout {args.idle_timeout:g} s): "
            f"RSS {rss_mib():.1f} MiB, open sessions {sessions.active_sessions}"
        )
    server.should_exit = True


if __name__ == "__main__":
    main()
