"""Every dotted name the docs give in backticks is one a reader can import.

A page that says "the list is `baselines.llm.models.GGUF_PACKAGES`" after
the module was renamed sends the reader to an ImportError.  This test reads
each `agent_envs...`, `baselines...`, `wrappers...` and `studies...` name
in backticks in README.md and docs/ and resolves it: the longest importable
module prefix, then attributes.  The one kind of dotted name that is not a
module, an entry-point group declared in pyproject.toml, is allowed by name.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
NAME = re.compile(r"`((?:agent_envs|baselines|wrappers|studies)(?:\.[A-Za-z_]\w*)+)")
#: ``[project.entry-points."group"]`` tables: their names are groups, not modules.
GROUP = re.compile(r'^\[project\.entry-points\."([^"]+)"\]', re.M)
ENTRY_POINT_GROUPS = set(GROUP.findall((ROOT / "pyproject.toml").read_text(encoding="utf-8")))


def resolves(name: str) -> bool:
    """Whether ``name`` is an importable module, or attributes of the longest one that is."""
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        try:
            for attribute in parts[split:]:
                found = getattr(found, attribute)
        except AttributeError:
            return False
        return True
    return False


def test_the_resolver_tells_a_renamed_name_from_a_real_one():
    assert resolves("baselines.llm.models.resolve.GGUF_PACKAGES")
    assert not resolves("baselines.llm.models.GGUF_PACKAGES")
    assert not resolves("agent_envs.no_such_module")
    assert "agent_envs.agents" in ENTRY_POINT_GROUPS


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_dotted_name_on_the_page_resolves(page):
    names = set(NAME.findall(page.read_text(encoding="utf-8"))) - ENTRY_POINT_GROUPS
    assert [name for name in sorted(names) if not resolves(name)] == []
