"""Each real-model study's verdict word for a claim is the same on every page.

A reader meets a claim's word in four places: the README's claims table,
``docs/results.md``, the study's own page and, once it has one, the study's
``results.json``.  An earlier record said "supports", "passes" and "not
supported" of one claim on three pages; these tests read every page's word
and fail when two differ.  v4 gives no word until its ``results.json``
exists: until then every page says "running".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
V3 = ROOT / "docs" / "real_model_study"
V4 = V3 / "v4"
CLAIMS = (1, 2, 3)
#: The words a page may give, longest first so that "not supported" is never read as "supported".
WORDS = ("not supported", "not measured", "contradicted", "supported", "running")


def _word(cell: str) -> str:
    """The verdict word a table cell starts with (bold or not)."""
    text = cell.strip().lstrip("*").strip()
    for word in WORDS:
        if text.startswith(word):
            return word
    raise AssertionError(f"no verdict word at the start of {cell!r}")


def _rows(path: Path, first_cell: str) -> list[list[str]]:
    """The cells of each table row in ``path`` whose first cell starts with ``first_cell``."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0].startswith(first_cell):
            rows.append(cells)
    return rows


def readme_words(version: int) -> dict[int, str]:
    """Claim -> word in the README's claims table (column 1 is v3, column 2 is v4)."""
    words = {}
    for claim in CLAIMS:
        (row,) = _rows(ROOT / "README.md", f"{claim}: ")
        words[claim] = _word(row[version - 2])
    return words


def results_page_words(version: int) -> dict[int, str]:
    """Claim -> word in ``docs/results.md``'s row for the study version."""
    (row,) = _rows(ROOT / "docs" / "results.md", f"real-model study v{version} ")
    return {claim: _word(row[1 + claim]) for claim in CLAIMS}


def v3_page_words() -> dict[int, str]:
    """Claim -> word in the last column of the v3 page's table of what the data show."""
    return {claim: _word(_rows(V3 / "README.md", f"{claim}: ")[0][-1]) for claim in CLAIMS}


def v4_record_words() -> dict[int, str] | None:
    """Claim -> the word ``results.json`` gives its primary test; ``None`` before the results."""
    path = V4 / "results.json"
    if not path.exists():
        return None
    primary = json.loads(path.read_text(encoding="utf-8"))["primary"]
    words = {}
    for name, cell in primary.items():
        match = re.match(r"claim (\d):", name)
        if match:
            words[int(match.group(1))] = cell["verdict"]
    return words


def test_the_word_reader_tells_not_supported_from_supported():
    assert _word("**not supported**: explained") == "not supported"
    assert _word("supported, a tiny effect") == "supported"
    with pytest.raises(AssertionError, match="no verdict word"):
        _word("passes")


def test_v3_gives_one_word_per_claim_on_every_page():
    pages = {
        "README.md": readme_words(3),
        "docs/results.md": results_page_words(3),
        "docs/real_model_study/README.md": v3_page_words(),
    }
    for claim in CLAIMS:
        words = {page: found[claim] for page, found in pages.items()}
        assert len(set(words.values())) == 1, f"claim {claim}: {words}"


def test_v4_gives_its_record_word_or_running_on_every_page():
    record = v4_record_words()
    pages = {"README.md": readme_words(4), "docs/results.md": results_page_words(4)}
    for claim in CLAIMS:
        expected = "running" if record is None else record[claim]
        words = {page: found[claim] for page, found in pages.items()}
        assert set(words.values()) == {expected}, f"claim {claim}: {words}, expected {expected}"
    status = (V4 / "README.md").read_text(encoding="utf-8")
    assert ("**Status: running.**" in status) == (record is None)
