"""A griffe extension for the API reference: doctest lines become code blocks.

The docstrings here are plain text with ``>>>`` examples (run as doctests by
pytest).  Read as Markdown, a ``>>>`` line is a nested quote and ``x[1]`` a
link; this extension fences each run of doctest lines (the prompt lines and
the output under them) as a ``pycon`` block before mkdocstrings renders it.
Used by ``mkdocs.yml``; nothing else imports it.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """Return ``text`` with every run of doctest lines fenced as a ``pycon`` block.

    >>> print(fence_doctests("Intro.\\n\\n>>> 1 + 1\\n2\\n\\nAfter."))
    Intro.
    <BLANKLINE>
    ```pycon
    >>> 1 + 1
    2
    ```
    <BLANKLINE>
    After.
    """
    out: list[str] = []
    inside = False
    indent = ""
    for line in text.splitlines():
        stripped = line.lstrip()
        if not inside and stripped.startswith(">>>"):
            inside, indent = True, line[: len(line) - len(stripped)]
            out.append(f"{indent}```pycon")
        elif inside and not stripped:
            out.append(f"{indent}```")
            inside = False
        out.append(line)
    if inside:
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFence(griffe.Extension):
    """Fence the doctests of every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
