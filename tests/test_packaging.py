"""Packaging promises: light imports, type markers, no text evaluated, extras that cover."""

from __future__ import annotations

import ast
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest
from test_layering import HIGHER  # the layers above each package's own

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEAVY = (
    "torch", "transformers", "stable_baselines3", "sb3_contrib", "matplotlib", "ray", "torchrl",
    "openenv", "tqdm",
)  # fmt: skip
#: What the wheel installs; studies/, benchmarks/ and tools/ run from a checkout.
LIBRARY = ("agent_envs", "wrappers", "baselines")


@pytest.mark.parametrize(
    "module",
    [
        "agent_envs",
        "agent_envs.plugins",
        "agent_envs.cli",
        "agent_envs.evaluation",
        "agent_envs.integrations.rllib",
        "agent_envs.integrations.torchrl",
        "agent_envs.integrations.openenv",
        "agent_envs.integrations.trl",
        "wrappers",
        "baselines",
        "baselines.llm.prompting.prompt_encoder",
        "baselines.llm.agents.openai_agent",
        "studies.runner",
    ],
)
def test_an_import_loads_no_heavy_dependency_and_no_higher_layer(module):
    """The one check of light imports; test_layering checks the source, this what loads."""
    forbidden = HEAVY + HIGHER.get(module.split(".")[0], ())
    code = f"import sys, {module}; print(','.join(m for m in {forbidden!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("package", LIBRARY)
def test_packages_carry_py_typed(package):
    assert (ROOT / package / "py.typed").is_file()


def test_nothing_evaluates_text():
    for package in ("agent_envs", "wrappers", "baselines", "studies"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    assert node.func.id not in {"eval", "exec"}, f"{path}: {node.func.id}()"


def test_the_wheel_installs_the_library_only(tmp_path):
    """Built offline from a copy of the checkout, studies/ included (torch brings setuptools)."""
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for folder in (*LIBRARY, "studies"):
        shutil.copytree(ROOT / folder, source / folder, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    command = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps"]
    command += ["--no-build-isolation", "--quiet", "--wheel-dir", str(tmp_path / "dist")]
    subprocess.run(command, check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    top = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {name for name in top if not name.endswith(".dist-info")} == set(LIBRARY)


def _extra(name: str) -> set[str]:
    """The distribution names an extra of pyproject.toml requires (normalised, no versions)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower().replace("_", "-")
        for requirement in extras["optional-dependencies"][name]
    }


@pytest.mark.parametrize("extra", ["llm", "smollm2", "all"])
def test_the_extras_that_load_gguf_files_install_what_loading_imports(extra):
    """transformers 5 refused GGUF files without accelerate, which [llm] did not install."""
    from baselines.llm.models.resolve import GGUF_PACKAGES

    assert {"torch", "transformers", "gguf", "accelerate"} <= set(GGUF_PACKAGES)
    assert set(GGUF_PACKAGES) <= _extra(extra)
