"""The layering, enforced: ``studies -> baselines -> agent_envs -> wrappers``, and no import cycle.

A lower layer never names a higher one: not in an import (in code or in a
docstring example), and not in a string that names a module
(``"baselines.sb3.train"``, ``"baselines.simple_agents:RandomAgent"``), which
is how ``importlib`` or an entry point would reach up.  Prose may name a layer
(this module does), and env ids such as ``"agent_envs/Sokoban-v0"`` are
Gymnasium registry names, not modules.  Higher layers are found only through
the entry points of :mod:`agent_envs.plugins`.

Inside ``baselines.llm`` the role folders are floors the same way:
``training -> agents -> models -> prompting``.
"""

from __future__ import annotations

import ast
import doctest
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: Each layer and the packages above it, which it must never name.  ``studies``
#: (the research studies) is the top: it may import every package, none imports it.
HIGHER = {
    "wrappers": ("agent_envs", "baselines", "studies"),
    "agent_envs": ("baselines", "studies"),
    "baselines": ("studies",),
}
PACKAGES = ("wrappers", "agent_envs", "baselines", "studies")


def _sources(package: str) -> list[pathlib.Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _imported(tree: ast.AST) -> list[str]:
    """Return every module an import statement in ``tree`` names (absolute imports)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


def _doctest_imports(tree: ast.AST) -> list[str]:
    """Return the modules imported by the examples in every docstring of ``tree``."""
    parser = doctest.DocTestParser()
    names = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=True)
            for example in parser.get_examples(docstring or ""):
                try:
                    names += _imported(ast.parse(example.source))
                except SyntaxError:
                    continue
    return names


def _violations(package: str) -> list[str]:
    higher = HIGHER[package]
    # A module (a.b, a:b) or a file path (a/b/, a/b.py); an env id (agent_envs/Maze-v0) is not.
    module_path = re.compile(
        rf"\b({'|'.join(higher)})(\.[A-Za-z_]|:[A-Za-z_]|/[a-z_0-9]+(/|\.py\b))"
    )
    found = []
    for path in _sources(package):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        where = path.relative_to(ROOT).as_posix()
        for name in _imported(tree) + _doctest_imports(tree):
            if name.split(".")[0] in higher:
                found.append(f"{where}: imports {name}")
        for number, line in enumerate(text.splitlines(), start=1):
            match = module_path.search(line)
            if match:
                found.append(f"{where}:{number}: names {match.group(0)}... ({line.strip()[:60]})")
    return found


@pytest.mark.parametrize("package", sorted(HIGHER))
def test_a_lower_layer_never_names_a_higher_one(package):
    assert _violations(package) == []


def test_the_check_catches_an_import_an_import_string_a_path_and_a_doctest(tmp_path, monkeypatch):
    fake = tmp_path / "wrappers"
    fake.mkdir()
    (fake / "bad.py").write_text(
        '"""Doc.\n\n>>> import agent_envs\n"""\n'
        "import importlib\n"
        "from baselines import simple_agents\n"
        'TARGET = "baselines.sb3.train:main"\n'
        'HINT = "see baselines/sb3/env.py"\n'
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = " | ".join(_violations("wrappers"))
    assert "imports baselines" in found and "imports agent_envs" in found
    assert "names baselines.s" in found and "names baselines/s" in found


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Map every module of the three packages to the modules it imports.

    Every import counts, wherever it stands: at the top, inside a function
    (deferred) or under ``if TYPE_CHECKING``.  A deferred import that closes a
    circle is still a circle: the two modules cannot be understood, tested or
    moved apart.
    """
    modules = {_module_name(path): path for package in PACKAGES for path in _sources(package)}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                # "from package import submodule" names the submodule when it is one.
                candidates = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for imported in candidates:
                while imported and imported not in modules:
                    imported = imported.rpartition(".")[0]
                if imported and imported != name:
                    targets.add(imported)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    """Return one ``a -> b -> a`` line per back edge of a depth-first search of ``graph``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*trail[trail.index(target) :], target]))
            elif target not in state:
                visit(target, [*trail, target])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_there_is_no_import_cycle():
    assert _cycles(_import_graph()) == []


@pytest.mark.parametrize(
    "closing",
    [
        "def later():\n    from wrappers import first\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import wrappers.first\n",
        "import wrappers.first\n",
    ],
    ids=["deferred", "type-checking", "top-level"],
)
def test_the_cycle_check_catches_deferred_and_type_checking_imports(tmp_path, monkeypatch, closing):
    fake = tmp_path / "wrappers"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "first.py").write_text("from wrappers.second import helper\n")
    (fake / "second.py").write_text(closing + "def helper():\n    return 1\n")
    (fake / "third.py").write_text("from wrappers import first, second\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert _cycles(_import_graph()) == ["wrappers.first -> wrappers.second -> wrappers.first"]


#: The roles of ``baselines.llm``, one folder each, top floor first: a role
#: imports its own folder and the roles after it, never one before it.
LLM_ROLES = ("training", "agents", "models", "prompting")
#: The most modules (``__init__.py`` included) one role's folder holds.
MOST_MODULES = 10


def _llm_role(module: str) -> str | None:
    """Return the role folder of a ``baselines.llm`` module (``None``: not in one)."""
    parts = module.split(".")
    if parts[:2] == ["baselines", "llm"] and len(parts) > 2 and parts[2] in LLM_ROLES:
        return parts[2]
    return None


def _role_violations() -> list[str]:
    """Return one line per import from a role of ``baselines.llm`` up to a higher one."""
    found = []
    for module, targets in sorted(_import_graph().items()):
        role = _llm_role(module)
        if role is None:
            continue
        below = LLM_ROLES[LLM_ROLES.index(role) :]
        found += [
            f"{module} ({role}) imports {target}"
            for target in sorted(targets)
            if _llm_role(target) not in (None, *below)
        ]
    return found


def test_the_llm_roles_import_only_downward():
    assert _role_violations() == []


def test_every_llm_module_stands_in_a_small_role_folder():
    llm = ROOT / "baselines" / "llm"
    loose = sorted(path.name for path in llm.glob("*.py") if path.name != "__init__.py")
    assert loose == []
    assert sorted(path.name for path in llm.iterdir() if path.is_dir() and path.name[0] != "_") == (
        sorted(LLM_ROLES)
    )
    for role in LLM_ROLES:
        modules = list((llm / role).glob("*.py"))
        assert (llm / role / "__init__.py") in modules and len(modules) <= MOST_MODULES, role


def test_the_role_check_catches_an_upward_import(tmp_path, monkeypatch):
    llm = tmp_path / "baselines" / "llm"
    for role in LLM_ROLES:
        (llm / role).mkdir(parents=True)
        (llm / role / "__init__.py").write_text("")
    deferred = "def later():\n    from baselines.llm import training\n"
    (llm / "agents" / "policy.py").write_text(deferred)
    (llm / "training" / "rollout.py").write_text("from baselines.llm.agents.policy import later\n")
    (llm / "prompting" / "replies.py").write_text("import baselines.llm.models\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert _role_violations() == [
        "baselines.llm.agents.policy (agents) imports baselines.llm.training",
        "baselines.llm.prompting.replies (prompting) imports baselines.llm.models",
    ]
