"""Doctest setup and the skip policy for the whole repository.

The examples in ``wrappers`` use the registered ``agent_envs/`` ids, but the
``wrappers`` package must never import ``agent_envs`` (the layering test checks
its doctests too), so the ids are registered here, once, for every doctest.

A skip is allowed only if :data:`ALLOWED_SKIPS` declares it, with its reason.
CI installs every extra (the README's test command), so any other skip is a
broken install or a test that quietly stopped running: it fails the run.  It
is here, not in ``tests/conftest.py``, so that it covers the doctests too.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import gymnasium as gym
import pytest

import agent_envs

gym.register_envs(agent_envs)


class AllowedSkip(NamedTuple):
    """A skip the suite may take: where, the message it gives, and why it is allowed."""

    path: str
    message: str
    why: str


#: The only skips a run may take; any other fails it (set AGENT_ENVS_ALLOW_SKIPS=1
#: to run with fewer extras installed: undeclared skips are then listed, not failed).
ALLOWED_SKIPS = (
    AllowedSkip(
        "tests/test_llamacpp_agent.py",
        "llama-cpp-python is not installed",
        "CI does not build llama-cpp-python: pip compiles llama.cpp from source (minutes).",
    ),
    AllowedSkip(
        "tests/test_untrusted_model_files.py",
        "giving a folder to another user needs root",
        "only root can give a folder to another user, and CI runs as an ordinary user.",
    ),
    AllowedSkip(
        "tests/test_report_browser.py",
        "Chromium is not installed",
        ".ci/run installs Debian's chromium with apt-get; a machine without apt, or a user "
        "who is not root, cannot, and the report's browser test then has no browser.",
    ),
    AllowedSkip(
        "tests/test_file_modes.py",
        "file modes are POSIX",
        "Windows has no POSIX permission bits to check.",
    ),
)

#: ``(node id, message)`` of each skip so far, allowed or not (a module skipped at
#: import is collected twice, once for its doctests: it counts once).
_skips: dict[str, dict[tuple[str, str], None]] = {"allowed": {}, "undeclared": {}}


def _record_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    longrepr = report.longrepr
    message = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    message = message.removeprefix("Skipped: ")
    path = report.nodeid.split("::")[0]
    allowed = any(path == a.path and a.message in message for a in ALLOWED_SKIPS)
    _skips["allowed" if allowed else "undeclared"][report.nodeid, message] = None


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _record_skip(report)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _record_skip(report)


def pytest_terminal_summary(terminalreporter) -> None:
    allowed, undeclared = _skips["allowed"], _skips["undeclared"]
    reasons = sorted({message for _, message in allowed})
    counts = ", ".join(f"{sum(m == r for _, m in allowed)} x {r!r}" for r in reasons)
    terminalreporter.section("skips")
    terminalreporter.write_line(f"{len(allowed)} allowed skips{': ' + counts if counts else ''}")
    if undeclared:
        verdict = "which fail the run" if _strict() else "allowed by AGENT_ENVS_ALLOW_SKIPS=1"
        terminalreporter.write_line(
            f"{len(undeclared)} undeclared skips, {verdict} (declare one in "
            "conftest.py's ALLOWED_SKIPS with its reason, or fix the install):",
            red=True,
        )
        for nodeid, message in undeclared:
            terminalreporter.write_line(f"  {nodeid}: {message}", red=True)


def _strict() -> bool:
    return os.environ.get("AGENT_ENVS_ALLOW_SKIPS") != "1"


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _skips["undeclared"] and _strict() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
