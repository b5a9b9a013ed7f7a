"""The docs agree with the code: their examples run as written.

The OpenEnv example of ``docs/integrations.md`` and of the
``agent_envs.integrations.openenv`` docstring is run, as written, against the
``agent-envs serve`` command written beside it (a real server process on
127.0.0.1, stopped afterwards), so a call the server refuses (a client
budget where the server sets the turn budget, say) fails here.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTED_URL = "http://127.0.0.1:8000"
CLI = [sys.executable, "-c", "from agent_envs.cli import main; raise SystemExit(main())"]


# ------------------------------------------------- 6: the OpenEnv example
def _from_the_guide() -> tuple[str, str]:
    """The ``serve`` command and the client snippet of docs/integrations.md's OpenEnv section."""
    doc = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    section = doc.split("## OpenEnv: serve any env", 1)[1].split("\n## ", 1)[0]
    command = re.search(r"```bash\n(agent-envs serve [^\n#]*)", section).group(1)
    code = re.search(
        r"```python\n(from openenv\.core import GenericEnvClient\n.*?)```", section, re.S
    )
    return command, code.group(1)


def _from_the_docstring() -> tuple[str, str]:
    """The ``serve`` command and the client snippet of the openenv module's docstring."""
    from agent_envs.integrations import openenv

    text = openenv.__doc__
    match = re.search(r"``(agent-envs serve [^`]+)``::\n\n((?:    .*\n|\n)+)", text)
    assert match, "the docstring's example names no serve command"
    return match.group(1), textwrap.dedent(match.group(2))


def _wait_for_port(server: subprocess.Popen, port: int) -> None:
    """Return once ``port`` accepts a connection (at most 1200 tries, 0.1 s apart)."""
    for _ in range(1200):
        assert server.poll() is None, "the documented serve command exited"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.1)
    raise AssertionError(f"the server never listened on port {port}")


@contextlib.contextmanager
def _documented_server(command: str, folder: Path):
    """Run ``command`` (``agent-envs serve ... --port 8000 ...``) on a free port; yield the port.

    The server's output goes to a log file in ``folder``; the process is
    stopped (killed if it will not stop) when the block ends.
    """
    argv = shlex.split(command)
    assert argv[:2] == ["agent-envs", "serve"] and "--port" in argv
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv[argv.index("--port") + 1] = str(port)
    with (folder / "server.log").open("w") as log:
        server = subprocess.Popen([*CLI, *argv[1:]], stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for_port(server, port)
            yield port
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=30)


@pytest.mark.parametrize("source", [_from_the_guide, _from_the_docstring])
def test_the_documented_openenv_example_plays_the_documented_server(source, tmp_path, capsys):
    """Item 6: the snippet, as written, plays one step on the server, as started in the docs."""
    pytest.importorskip("openenv.core")
    pytest.importorskip("uvicorn")
    command, code = source()
    assert DOCUMENTED_URL in code
    namespace: dict = {}
    with _documented_server(command, tmp_path) as port:
        snippet = code.replace(DOCUMENTED_URL, f"http://127.0.0.1:{port}")  # the one edit
        exec(compile(snippet, command, "exec"), namespace)  # the docs' own code
    observation = namespace["result"].observation
    assert {"text", "success", "truncated", "info"} <= set(observation)
    assert observation["info"]["budget"] in (10, 20, 40)
    if source is _from_the_guide:  # it prints the first text and the T the server drew
        assert capsys.readouterr().out.split()[-1] in ("10", "20", "40")


# ------------------------------------------- 10: one oracle-turn range
def _readme_table() -> list[str]:
    """The README's environment table, header included, as lines."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Environments", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("|")]


def test_the_readme_table_is_what_its_script_prints(monkeypatch, capsys):
    """Item 10: the table is ``tools/env_table.py``'s output, over the ids the README names."""
    import importlib.util

    from agent_envs.registration import ORACLE_TURN_TASKS

    spec = importlib.util.spec_from_file_location("env_table", ROOT / "tools" / "env_table.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setattr(sys, "argv", ["env_table.py"])
    script.main()
    assert capsys.readouterr().out.splitlines() == _readme_table()
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"measured over task ids 0..{ORACLE_TURN_TASKS - 1}" in readme


def test_list_measures_the_range_of_the_readme_table(capsys):
    """Item 10: ``agent-envs list`` shows, by default, the README table's range for every id."""
    from agent_envs import cli

    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "(turns: the range of oracle_turns() at reset over tasks 0..199)"
    listed = {
        line.split()[0]: line.split()[1] for line in lines if line.startswith("  agent_envs/")
    }
    for row in _readme_table()[2:]:
        env_id = re.match(r"\| `([^`]+)` \|", row).group(1)
        turns = row.rsplit("|", 2)[1].strip()  # the last cell: "2..7" or "7"
        assert listed[env_id] == turns.replace("..", "-"), env_id
    with pytest.raises(SystemExit):
        cli.main(["list", "--help"])
    assert "(default 200: 0..199, the README table's ids)" in " ".join(
        capsys.readouterr().out.split()
    )
