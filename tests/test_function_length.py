"""No function in the four packages is longer than 60 lines.

A function that does not fit a screen does more than one thing; split it into
named helpers.  The length counts every line from ``def`` to the last line of
the body, docstring, comments and blank lines included (``end_lineno - lineno
+ 1``; decorators are not counted), for functions and methods alike, nested
ones too.
"""

from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("agent_envs", "wrappers", "baselines", "studies")
MAX_LINES = 60


def _long_functions() -> dict[str, int]:
    """Return ``{"path::name": lines}`` for every function over :data:`MAX_LINES`."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_LINES:
                        found[f"{path.relative_to(ROOT).as_posix()}::{node.name}"] = lines
    return found


def test_no_function_is_over_60_lines():
    assert _long_functions() == {}, "split these into named helpers"


def test_the_check_counts_every_line_of_functions_and_methods(tmp_path, monkeypatch):
    package = tmp_path / "wrappers"
    package.mkdir()
    statements = [f"x{i} = {i}" for i in range(59)]
    function = "".join(f"    {line}\n" for line in statements)
    method = "".join(f"        {line}\n" for line in statements)
    (package / "sizes.py").write_text(
        f'def too_long():\n    """Doc."""\n{function}'  # 61 lines
        f"class Holder:\n    def also_too_long(self):\n{method}        return 1\n"  # 61
        f"def at_the_limit():\n{function}"  # 60 lines
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert _long_functions() == {
        "wrappers/sizes.py::too_long": 61,
        "wrappers/sizes.py::also_too_long": 61,
    }
