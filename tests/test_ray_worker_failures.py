"""The Ray backend's failures: worker output is scrubbed, and a chunk that keeps
killing its worker ends in one line."""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import sys
from pathlib import Path

import pytest

from agent_envs.evaluation import RunAborted, evaluate
from baselines.simple_agents import NoisyOracleAgent

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="the [ray] extra is not installed (pip install -e '.[ray]')",
)

GRID = dict(ks=[1], budgets=[5], tasks=2, samples=1, n_bootstrap=10, backend="ray", workers=1)
SECRET_VARIABLE = "HARDENING_SERVICE_TOKEN"
SECRET = "tok-ray-worker-0123456789"


@pytest.fixture(scope="module")
def ray_logs():
    """A Ray instance of this module's own, whose workers inherit a secret variable."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    os.environ[SECRET_VARIABLE] = SECRET
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=1, include_dashboard=False, logging_level=logging.WARNING)
    yield Path(ray._private.worker._global_node.get_session_dir_path()) / "logs"
    ray.shutdown()
    del os.environ[SECRET_VARIABLE]


class PrintsItsToken(NoisyOracleAgent):
    """Prints the token from its environment in the worker, as a chatty library might."""

    def act(self, observation, info):
        token = os.environ.get(SECRET_VARIABLE, "")
        print(f"stdout: using {token}", flush=True)
        print(f"stderr: using {token}", file=sys.stderr, flush=True)
        return super().act(observation, info)


def test_a_secret_never_reaches_the_ray_worker_logs(ray_logs):
    """Item 3: the key stayed on disk in a Ray worker's log file."""
    result = evaluate(PrintsItsToken(), "agent_envs/GuessNumber-v0", **GRID)
    assert result.errors == 0
    written = "".join(
        path.read_text(errors="replace") for path in ray_logs.glob("worker-*") if path.is_file()
    )
    assert "using ***" in written  # the worker did print, and it was masked
    assert SECRET not in written


class KillsEveryWorker(NoisyOracleAgent):
    """SIGKILLs whatever Ray worker plays it."""

    def __init__(self, driver_pid: int) -> None:
        super().__init__()
        self.driver_pid = driver_pid

    def act(self, observation, info):
        if os.getpid() != self.driver_pid:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().act(observation, info)


def test_a_chunk_that_keeps_killing_workers_stops_in_one_line(ray_logs):
    """Item 10: a RuntimeError traceback; now RunAborted (exit 2 in the CLI), one line."""
    with pytest.raises(RunAborted) as stopped:
        evaluate(KillsEveryWorker(os.getpid()), "agent_envs/GuessNumber-v0", **GRID)
    message = str(stopped.value)
    assert "lost its Ray worker 3 times" in message and "last cause:" in message
    assert "\n" not in message


class PrintsItsTokenEscaped(NoisyOracleAgent):
    """Prints its token as a JSON encoder that escapes every character would."""

    def act(self, observation, info):
        token = os.environ.get(SECRET_VARIABLE, "")
        escaped = "".join(f"\\u{ord(char):04x}" for char in token)
        print(f'stderr: {{"detail": "{escaped}"}}', file=sys.stderr, flush=True)
        return super().act(observation, info)


def test_a_json_escaped_secret_never_reaches_the_ray_worker_logs(ray_logs):
    """A \\uXXXX-escaped key reached the Ray worker logs whole."""
    result = evaluate(PrintsItsTokenEscaped(), "agent_envs/GuessNumber-v0", **GRID)
    assert result.errors == 0
    written = "".join(
        path.read_text(errors="replace") for path in ray_logs.glob("worker-*") if path.is_file()
    )
    assert '"detail": "***"' in written
    assert "\\u0074\\u006f\\u006b" not in written  # "tok", escaped
