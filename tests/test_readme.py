"""The README tells the truth: its environment table and its commands."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import agent_envs

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _table_ids() -> list[str]:
    section = README.split("## Environments", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(agent_envs/[^`]+)` \|", section, re.M)


def test_environment_table_matches_the_registry_exactly():
    rows = _table_ids()
    assert len(rows) == len(set(rows)), "duplicate rows in the README's environment table"
    assert set(rows) == set(agent_envs.env_ids())


def _first_screen_commands() -> list[str]:
    first_screen = "\n".join(README.splitlines()[:40])
    return re.findall(r"^python3 -m venv .*$", first_screen, re.M)


def test_first_screen_gives_both_commands():
    commands = _first_screen_commands()
    assert len(commands) == 2
    main_job, tests = commands
    assert "pip install torch==2.13.0 &&" in main_job and "agent-envs eval" in main_job
    assert "pip install torch==2.13.0 &&" in tests and "pytest" in tests


def test_ci_runs_the_readme_test_command_and_nothing_else():
    ci = subprocess.run(
        [str(ROOT / ".ci" / "run"), "--print-command"], capture_output=True, text=True, check=True
    )
    assert ci.stdout == _first_screen_commands()[1] + "\n"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, re.S)


def test_readme_python_examples_run(tmp_path):
    blocks = _python_blocks()
    assert len(blocks) >= 3
    for index, block in enumerate(blocks):
        script = tmp_path / f"readme_{index}.py"
        script.write_text(block)
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 0, f"README block {index} failed:\n{block}\n{done.stderr}"
