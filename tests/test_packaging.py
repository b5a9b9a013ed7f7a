"""Layering and packaging promises: light imports, one-way dependencies, markers."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEAVY = (
    "torch", "transformers", "stable_baselines3", "sb3_contrib", "matplotlib", "ray", "torchrl",
    "openenv",
)  # fmt: skip


@pytest.mark.parametrize(
    "package",
    [
        "agent_envs",
        "agent_envs.evaluation",
        "agent_envs.integrations.rllib",
        "agent_envs.integrations.torchrl",
        "agent_envs.integrations.openenv",
        "agent_envs.integrations.trl",
        "wrappers",
        "baselines",
        "studies.runner",
    ],
)
def test_import_pulls_in_no_heavy_dependency(package):
    code = f"import sys, {package}; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _imported_top_levels(package: str) -> set[str]:
    names: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def test_layering_points_one_way():
    # baselines -> agent_envs -> wrappers -> gymnasium, never back.
    assert not _imported_top_levels("wrappers") & {"agent_envs", "baselines"}
    assert not _imported_top_levels("agent_envs") & {"baselines", "studies"}
    assert "studies" not in _imported_top_levels("baselines")


@pytest.mark.parametrize("package", ["agent_envs", "wrappers", "baselines", "studies"])
def test_packages_carry_py_typed(package):
    assert (ROOT / package / "py.typed").is_file()


def test_nothing_evaluates_text():
    for package in ("agent_envs", "wrappers", "baselines", "studies"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    assert node.func.id not in {"eval", "exec"}, f"{path}: {node.func.id}()"
