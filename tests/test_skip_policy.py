"""A skip not declared in the root conftest's ALLOWED_SKIPS fails the run."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def root_conftest():
    """The repository's root conftest, loaded apart (pytest keeps no module named for it)."""
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_suite(tmp_path: Path, tests: dict[str, str], **env: str) -> subprocess.CompletedProcess:
    """Run pytest, under the repository's root conftest, on ``tests`` (file name -> source).

    A passing test always runs beside them: a run that collects nothing fails anyway.
    """
    (tmp_path / "tests").mkdir(parents=True)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    for name, source in {"test_fine.py": "def test_fine():\n    pass\n", **tests}.items():
        (tmp_path / "tests" / name).write_text(source)
    environment = {k: v for k, v in os.environ.items() if k != "AGENT_ENVS_ALLOW_SKIPS"}
    environment |= {"PYTHONPATH": str(ROOT), **env}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
    return subprocess.run(
        command, cwd=tmp_path, env=environment, capture_output=True, text=True, check=False
    )


ALLOWED = {
    "test_llamacpp_agent.py": (
        "import pytest\n\n\ndef test_it():\n    pytest.skip('llama-cpp-python is not installed')\n"
    )
}
UNDECLARED = {"test_other.py": "import pytest\n\npytest.importorskip('no_such_extra')\n"}


def test_an_undeclared_skip_fails_the_run_and_is_listed_with_its_reason(tmp_path):
    result = run_suite(tmp_path, {**ALLOWED, **UNDECLARED})
    assert result.returncode == 1, result.stdout
    assert "1 allowed skips: 1 x 'llama-cpp-python is not installed'" in result.stdout
    assert "1 undeclared skips, which fail the run" in result.stdout
    assert "tests/test_other.py: could not import 'no_such_extra'" in result.stdout


def test_declared_skips_alone_pass_and_the_opt_out_only_lists_the_others(tmp_path):
    assert run_suite(tmp_path / "a", ALLOWED).returncode == 0
    opted_out = run_suite(tmp_path / "b", UNDECLARED, AGENT_ENVS_ALLOW_SKIPS="1")
    assert opted_out.returncode == 0
    assert "allowed by AGENT_ENVS_ALLOW_SKIPS=1" in opted_out.stdout


@pytest.mark.parametrize("allowed", root_conftest().ALLOWED_SKIPS, ids=lambda a: a.path)
def test_every_allowed_skip_names_a_test_file_that_gives_its_message_and_a_reason(allowed):
    assert allowed.message in (ROOT / allowed.path).read_text()
    assert allowed.why.strip()
