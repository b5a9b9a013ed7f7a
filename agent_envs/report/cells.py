"""The small pieces every table of a report is made of: escaped text, numbers and colours.

Everything that reaches the page from a file (an agent's name, an env id, an
error an agent raised) goes through :func:`text` or :func:`attrs`, which
escape it with :func:`html.escape` and show each bidirectional control
character as its code point (:func:`plain`), so that no name can reverse the
text around it; a name inside a sentence is isolated too (:func:`name`).
Numbers are formatted here, never pasted.
"""

from __future__ import annotations

import itertools
import math
from html import escape
from typing import Any

__all__ = [
    "DIVERGING",
    "SEQUENTIAL",
    "attrs",
    "cell_style",
    "name",
    "number",
    "plain",
    "raw_number",
    "text",
]

#: Colour stops (position, RGB): viridis for a surface in [0, 1] ...
SEQUENTIAL = (
    (0.0, (68, 1, 84)),
    (0.25, (59, 82, 139)),
    (0.5, (33, 145, 140)),
    (0.75, (94, 201, 98)),
    (1.0, (253, 231, 37)),
)
#: ... and red-white-blue for a difference in [-1, 1] (mapped to [0, 1]), as ``compare --plot``.
DIVERGING = (
    (0.0, (178, 24, 43)),
    (0.25, (239, 138, 98)),
    (0.5, (247, 247, 247)),
    (0.75, (103, 169, 207)),
    (1.0, (33, 102, 172)),
)


#: The characters that change the direction of the text after them (embeddings,
#: overrides, isolates and marks): each is shown as its code point instead.
_BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_SHOWN = {ord(char): f"<U+{ord(char):04X}>" for char in _BIDI_CONTROLS}


def plain(value: Any) -> str:
    """Return ``str(value)`` with every bidirectional control shown as ``<U+XXXX>``.

    A U+202E (right-to-left override) in an agent's name reversed the rest
    of its caption; shown as its code point it changes nothing around it.

    >>> plain("agent\u202eevil")
    'agent<U+202E>evil'
    """
    return str(value).translate(_SHOWN)


def text(value: Any) -> str:
    """Return ``value`` as HTML text: escaped, so that ``<script>`` shows as written.

    >>> text("<img src=x onerror=alert(1)>")
    '&lt;img src=x onerror=alert(1)&gt;'
    """
    return escape(plain(value), quote=True)


def name(value: Any) -> str:
    """Return ``value`` as :func:`text` isolated in ``<bdi>``: a right-to-left name (Arabic,
    Hebrew) keeps its own direction without reordering the sentence around it.

    >>> name("a<b")
    '<bdi>a&lt;b</bdi>'
    """
    return f"<bdi>{text(value)}</bdi>"


def attrs(**values: Any) -> str:
    """Return ``name="value"`` attributes (``data_k`` becomes ``data-k``), every value escaped.

    >>> attrs(data_agent='a"b', data_k=1)
    ' data-agent="a&quot;b" data-k="1"'
    """
    return "".join(f' {name.replace("_", "-")}="{text(value)}"' for name, value in values.items())


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def number(value: Any, signed: bool = False, digits: int = 3) -> str:
    """Return ``value`` with ``digits`` decimals (a sign when ``signed``), or ``n/a``.

    >>> number(0.25), number(-0.1, signed=True), number(None)
    ('0.250', '-0.100', 'n/a')
    """
    if not _finite(value):
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def raw_number(value: Any) -> str:
    """Return ``value`` exactly (``repr`` of the float) for a ``data-`` attribute, or ``""``."""
    return repr(float(value)) if _finite(value) else ""


def cell_style(value: Any, stops: tuple = SEQUENTIAL) -> str:
    """Return the inline style of a cell of ``value`` in [0, 1]: its colour, and legible ink."""
    if not _finite(value):
        return "background:#eee;color:#000"
    value = min(1.0, max(0.0, float(value)))
    for (low, start), (high, end) in itertools.pairwise(stops):
        if value <= high:
            share = (value - low) / (high - low)
            rgb = [round(a + (b - a) * share) for a, b in zip(start, end, strict=True)]
            break
    luminance = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
    ink = "#000" if luminance > 140 else "#fff"
    return f"background:rgb({rgb[0]},{rgb[1]},{rgb[2]});color:{ink}"
