"""The README tells the truth: its environment table and its commands."""

from __future__ import annotations

import pathlib
import re
import subprocess

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
    # The main job (oracle and random agents, plots) needs the core and [plot] only.
    assert 'pip install -e ".[plot]" &&' in main_job and "agent-envs eval" in main_job
    assert "torch" not in main_job and "[all" not in main_job
    # The tests install torch 2.13.0 first, every extra, then build the docs strictly.
    assert tests.index("pip install torch==2.13.0 &&") < tests.index('pip install -e ".[all,')
    assert "docs]" in tests and "mkdocs build --strict" in tests and "pytest" in tests


def test_readme_is_short_and_cites_the_paper():
    assert len(README.splitlines()) <= 250
    assert "arXiv:2611.06483" in README and "docs/results.md" in README


def test_ci_runs_the_readme_test_command_and_nothing_else():
    ci = subprocess.run(
        [str(ROOT / ".ci" / "run"), "--print-command"], capture_output=True, text=True, check=True
    )
    assert ci.stdout == _first_screen_commands()[1] + "\n"


def test_the_docs_name_no_issue_numbers_and_no_deprecations():
    pages = [p for p in (ROOT / "docs").rglob("*.md") if "real_model_study" not in p.parts]
    for page in [ROOT / "README.md", *pages]:
        text = page.read_text()
        assert not re.search(r"\bissues? \d", text, re.I), page
        assert "Deprecation note" not in text and "still works and warns" not in text, page
