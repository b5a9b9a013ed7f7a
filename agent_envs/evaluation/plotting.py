"""Heatmaps of Pass@(K,T) surfaces and differences (needs the ``[plot]`` extra)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.files import atomic_write
from wrappers.errors import InvalidValue
from wrappers.utils.validators import check_number

__all__ = ["PLOT_SUFFIXES", "build_figure", "plot_difference", "plot_grid", "plot_path"]

#: The formats a plot may be written in; a path without a suffix gets ``.png``.
PLOT_SUFFIXES = (".png", ".pdf", ".svg")


#: The ``Software`` text of every PNG plot this project writes (its mark of ownership).
PLOT_SOFTWARE = "agent-envs plot (Matplotlib)"


def plot_path(path: str | os.PathLike[str]) -> Path:
    """Return the file a plot of ``path`` is written to: ``.png`` added when it has no suffix.

    Matplotlib itself adds ``.png`` to a bare name; saying so here lets the
    caller print, and check before a run, the path that is really written.

    >>> str(plot_path("out/surface")), str(plot_path("out/surface.svg"))
    ('out/surface.png', 'out/surface.svg')
    """
    target = Path(path)
    if not target.suffix:
        return target.with_name(target.name + ".png")
    if target.suffix.lower() not in PLOT_SUFFIXES:
        raise InvalidValue(
            f"a plot is written as {', '.join(PLOT_SUFFIXES)}; {target} ends in "
            f"{target.suffix!r}: end it in .png."
        )
    return target


def _matplotlib() -> Any:
    try:
        # The object-oriented API draws without pyplot, so the caller's
        # backend and global figure state stay untouched.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        from agent_envs import install_hint

        raise ImportError(f"Plotting needs matplotlib: {install_hint('plot')}.") from None
    return Figure, FigureCanvasAgg


def build_figure(
    values: np.ndarray,
    ks: Sequence[int],
    budgets: Sequence[int],
    *,
    title: str,
    vmin: float,
    vmax: float,
    cmap: str,
    label: str,
    marks: np.ndarray | None = None,
) -> Any:
    """Return a K x T heatmap figure of ``values`` with each cell's value printed on it.

    Args:
        values: array of shape ``(len(ks), len(budgets))``.
        ks, budgets: row (K) and column (T) labels.
        title: the figure title.
        vmin, vmax: the colour scale's range (fixed, so that colours compare
            across plots).
        cmap: a matplotlib colormap name.
        label: what the colorbar measures.
        marks: optional strings shown under each value (e.g. ``"*"``).
    """
    figure_cls, canvas_cls = _matplotlib()
    figure = figure_cls(figsize=(1.1 * len(budgets) + 2.5, 0.8 * len(ks) + 1.8))
    canvas_cls(figure)
    axes = figure.add_subplot()
    image = axes.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", origin="lower")
    axes.set_xticks(range(len(budgets)), [str(t) for t in budgets])
    axes.set_yticks(range(len(ks)), [str(k) for k in ks])
    axes.set_xlabel("T (turn budget)")
    axes.set_ylabel("K (attempts)")
    axes.set_title(title, fontsize=9)
    for i in range(len(ks)):
        for j in range(len(budgets)):
            text = f"{values[i, j]:.2f}"
            if marks is not None and marks[i, j]:
                text += f"\n{marks[i, j]}"
            red, green, blue, _ = image.cmap(image.norm(values[i, j]))
            # White text on dark cells, black on light ones (perceived luminance).
            colour = "white" if 0.299 * red + 0.587 * green + 0.114 * blue < 0.5 else "black"
            axes.text(j, i, text, ha="center", va="center", fontsize=8, color=colour)
    figure.colorbar(image, ax=axes, label=label)
    figure.tight_layout()
    return figure


def plot_grid(path: str | os.PathLike[str], values: np.ndarray, *args: Any, **kwargs: Any) -> Path:
    """Write :func:`build_figure` to :func:`plot_path` of ``path``; return the path written."""
    target = plot_path(path)
    figure = build_figure(values, *args, **kwargs)
    # The PNG says who wrote it, so that a later --plot may replace it without --overwrite.
    metadata = {"Software": PLOT_SOFTWARE} if target.suffix.lower() == ".png" else None
    return atomic_write(
        target, lambda temporary: figure.savefig(temporary, dpi=120, metadata=metadata)
    )


def plot_difference(result: Any, path: str | os.PathLike[str], scale: float = 1.0) -> Path:
    """Write a comparison's difference as a diverging heatmap (needs ``[plot]``); return the path.

    Design decision: the colour scale is fixed and symmetric, ``-scale``
    to ``+scale`` (default -1..1, every possible difference), so that a
    difference of 0.10 looks small and equal colours mean equal
    differences in every plot.  Scaling to the largest cell instead made
    0.10 as saturated as 0.97.  Pass a smaller ``scale`` to zoom in.  ``result`` is a
    :class:`~agent_envs.evaluation.CompareResult` (its ``plot`` method calls this).
    """
    check_number(scale, "scale", 0.0, 1.0, open_low=True)
    marks = np.where(result.wins() != "", "*", "")
    return plot_grid(
        path,
        result.diff,
        result.ks,
        result.budgets,
        title=(
            f"Pass@(K,T) difference A - B on {result.env_id} (* = a significant cell)\n"
            f"A = {result.a}\nB = {result.b}"
        ),
        vmin=-scale,
        vmax=scale,
        cmap="RdBu",
        label="Pass@(K,T) of A minus B",
        marks=marks,
    )
