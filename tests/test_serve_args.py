"""``agent-envs serve``'s own flags: one line and exit 2, the real port."""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("openenv.core")
uvicorn = pytest.importorskip("uvicorn")

from agent_envs.integrations import openenv  # noqa: E402

ENV_ID = "agent_envs/GuessNumber-v0"


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        ([ENV_ID, "--port", "70000"], "--port"),
        ([ENV_ID, "--port", "-1"], "--port"),
        ([ENV_ID, "--max-sessions", "0"], "--max-sessions"),
        ([ENV_ID, "--budget", "0"], "--budget"),
        ([ENV_ID, "--budget-mix", "4,x"], "--budget-mix"),
        ([ENV_ID, "--weights", "1"], "--weights"),
        (["CartPole-v1"], "not a text env"),
        (["agent_envs/Nope-v0"], "Nope"),
        # harden's guard flags go through the same argument helpers (type= converters)
        ([ENV_ID, "--client-budgets", "0:3"], "--client-budgets"),
        ([ENV_ID, "--client-budgets", "1:99999999"], "--client-budgets"),
        ([ENV_ID, "--idle-timeout", "nan"], "--idle-timeout"),
        ([ENV_ID, "--max-body", "abc"], "--max-body"),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2_before_anything_starts(
    argv, named, capsys, monkeypatch
):
    started = _FakeServer.install(monkeypatch)
    assert openenv.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("agent-envs serve: error:") and named in err
    assert not started


class _FakeServer:
    """Stands in for uvicorn's server: records the sockets it would serve, serves nothing.

    uvicorn's own ``Config`` would point the logging at this test's captured
    stderr, which later tests would write to after it is closed.
    """

    def __init__(self, config, runs) -> None:
        self.runs = runs

    def run(self, sockets=None) -> None:
        self.runs.append(sockets)

    @classmethod
    def install(cls, monkeypatch) -> list:
        runs: list = []
        monkeypatch.setattr(uvicorn, "Config", lambda app, **kwargs: app)
        monkeypatch.setattr(uvicorn, "Server", lambda config: cls(config, runs))
        return runs


class _Bound:
    """Stands in for the listening socket: bound on 127.0.0.1 whatever --host says."""

    def __init__(self) -> None:
        self.hosts: list[str] = []

    def __call__(self, host: str, port: int) -> socket.socket:
        self.hosts.append(host)
        sock = socket.socket()
        sock.bind(("127.0.0.1", port))
        return sock


@pytest.mark.parametrize(("host", "warned"), [("127.0.0.1", False), ("0.0.0.0", True), ("", True)])
def test_port_0_prints_the_real_port_and_a_foreign_host_is_warned_once(
    host, warned, capsys, monkeypatch
):
    runs = _FakeServer.install(monkeypatch)
    bound = _Bound()
    monkeypatch.setattr(openenv, "_bind", bound)
    assert openenv.main([ENV_ID, "--port", "0", "--host", host]) == 0
    out, err = capsys.readouterr()
    port = runs[0][0].getsockname()[1]
    runs[0][0].close()
    assert port != 0 and out.rstrip().endswith(f"127.0.0.1:{port} (OpenEnv; Ctrl-C stops)")
    assert bound.hosts == [host]
    assert err.count("no authentication") == (1 if warned else 0)


def test_loopback_hosts():
    assert openenv._is_loopback("127.0.0.1") and openenv._is_loopback("::1")
    assert openenv._is_loopback("localhost") and openenv._is_loopback("127.0.0.2")
    assert not openenv._is_loopback("") and not openenv._is_loopback("0.0.0.0")
    assert not openenv._is_loopback("192.168.1.4") and not openenv._is_loopback("example.com")


def test_bind_port_0_listens_on_a_real_port():
    sock = openenv._bind("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        sock.close()
    assert port != 0
