"""Envs from another package: module:EnvId, the env-package entry point, and the public checks.

A small env package (``waterpkg``: the guide's DialLock family under
``waterpkg/DialLock-v0``) is built in a temporary folder outside
``agent_envs/``, with a ``dist-info`` that declares it in the
``agent_envs.envs`` entry-point group, exactly as ``pip install`` of a
package with that entry point would.  The CLI is run on it in a fresh
process, and ``agent_envs.conformance`` is run on it from the package's own
pytest file.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "adding_an_env.md").read_text()
FAMILY = next(b for b in re.findall(r"```python\n(.*?)```", GUIDE, re.S) if b.startswith("# file"))
PACKAGE_ID, MODULE_ID = "waterpkg/DialLock-v0", "waterpkg/DialLock-5-v0"

#: The guide's own example of an author's test file, pointed at this package.
AUTHOR_TESTS = (
    next(b for b in re.findall(r"```python\n(.*?)```", GUIDE, re.S) if b.startswith("# tests/"))
    .replace("mypkg.envs:mypkg/DialLock-v0", f"waterpkg.extra:{MODULE_ID}")
    .replace("mypkg/", "waterpkg/")
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
    """A folder on the path holding ``waterpkg`` and its installed-package metadata."""
    folder = tmp_path_factory.mktemp("site")
    package = folder / "waterpkg"
    package.mkdir()
    (package / "dial_lock.py").write_text(FAMILY)
    (package / "__init__.py").write_text(
        textwrap.dedent('''
        """An env package: importing it registers its ids."""
        import gymnasium as gym

        gym.register("waterpkg/DialLock-v0", entry_point="waterpkg.dial_lock:DialLockEnv",
                     max_episode_steps=None)
    ''')
    )
    # Registered only when this module is imported: the module:EnvId form's job.
    (package / "extra.py").write_text(
        textwrap.dedent("""
        import gymnasium as gym

        gym.register("waterpkg/DialLock-5-v0", entry_point="waterpkg.dial_lock:DialLockEnv",
                     kwargs={"dials": 5}, max_episode_steps=None)
    """)
    )
    info = folder / "waterpkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: waterpkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[agent_envs.envs]\nwaterpkg = waterpkg\n")
    (folder / "test_waterpkg.py").write_text(AUTHOR_TESTS)
    return folder


def run(site: pathlib.Path, *args: str, cwd: pathlib.Path | None = None):
    path = os.pathsep.join([str(ROOT), str(site)])
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=cwd or site,
        env={**os.environ, "PYTHONPATH": path},
        timeout=600,
    )


def test_the_guide_covers_what_an_env_author_declares():
    for item in (
        "task_supply",
        "stochastic",
        "uses_task_rng",
        "privileged_oracle",
        "compact_view()",
        "image_shape()",
        "_rgb_array()",
        "agent_envs.envs",
        "module:EnvId",
        "check_family",
        "conformance_parameters",
        "(required)",
    ):
        assert item in GUIDE, item


def test_list_shows_an_installed_env_package(site):
    done = run(site, "-m", "agent_envs.cli", "list")
    assert done.returncode == 0, done.stderr
    assert "waterpkg (env package)" in done.stdout
    # the range over task ids 0..199, as the README table's (3-12 over the old 0..19)
    assert re.search(r"waterpkg/DialLock-v0 +1-13 +Turn the dials", done.stdout), done.stdout


@pytest.mark.parametrize("env_id", [PACKAGE_ID, f"waterpkg.extra:{MODULE_ID}"])
def test_eval_plays_an_env_from_another_package(site, tmp_path, env_id):
    out = tmp_path / "result.json"
    flags = ["--k", "1", "--t", "30", "--tasks", "3", "--samples", "1", "--out", str(out)]
    done = run(site, "-m", "agent_envs.cli", "eval", env_id, "--agent", "oracle", *flags)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["surface"][0][0] == 1.0
    assert result["settings"]["env_name"] == env_id.split(":")[-1]


@pytest.mark.parametrize(
    ("env_id", "message"),
    [("no_such_module:waterpkg/X-v0", "cannot import 'no_such_module'"),
     ("waterpkg/Nope-v0", "Unknown env id")],
)  # fmt: skip
def test_a_bad_id_of_another_package_is_one_line(site, env_id, message):
    done = run(site, "-m", "agent_envs.cli", "eval", env_id)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


def test_the_public_checks_run_from_the_authors_own_tests(site):
    done = run(site, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_waterpkg.py")
    assert done.returncode == 0, done.stdout[-3000:]
    assert re.search(r"\b17 passed\b", done.stdout), done.stdout[-500:]


def test_check_family_reports_every_broken_rule(site):
    broken = site / "brokenpkg.py"
    broken.write_text(
        FAMILY
        + textwrap.dedent('''

        class Broken(DialLockEnv):
            """No docstring sections here."""

            def oracle_turns(self):
                return super().oracle_turns() + 1

        import gymnasium as gym
        gym.register("brokenpkg/Broken-v0", entry_point=Broken, max_episode_steps=None)
    ''')
    )
    script = (
        "from agent_envs.conformance import ConformanceError, check_family\n"
        "try:\n    check_family('brokenpkg:brokenpkg/Broken-v0')\n"
        "except ConformanceError as error:\n    print(error)\n"
    )
    done = run(site, "-c", script)
    assert done.returncode == 0, done.stderr
    assert "check_oracle: AssertionError" in done.stdout
    assert "check_docstring: AssertionError" in done.stdout
    assert "check_determinism" not in done.stdout
