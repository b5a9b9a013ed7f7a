"""Heatmaps of Pass@(K,T) surfaces and differences (needs the ``[plot]`` extra)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["plot_grid"]


def _matplotlib() -> Any:
    try:
        # The object-oriented API draws without pyplot, so the caller's
        # backend and global figure state stay untouched.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("Plotting needs matplotlib: pip install 'agent-envs[plot]'.") from None
    return Figure, FigureCanvasAgg


def plot_grid(
    path: str | os.PathLike[str],
    values: np.ndarray,
    ks: Sequence[int],
    budgets: Sequence[int],
    *,
    title: str,
    vmin: float,
    vmax: float,
    cmap: str,
    marks: np.ndarray | None = None,
) -> None:
    """Write a K x T heatmap of ``values`` with each cell's value printed on it.

    Args:
        path: the PNG to write.
        values: array of shape ``(len(ks), len(budgets))``.
        ks, budgets: row (K) and column (T) labels.
        title: the figure title.
        vmin, vmax: the colour scale's range.
        cmap: a matplotlib colormap name.
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
            label = f"{values[i, j]:.2f}"
            if marks is not None and marks[i, j]:
                label += f"\n{marks[i, j]}"
            red, green, blue, _ = image.cmap(image.norm(values[i, j]))
            # White text on dark cells, black on light ones (perceived luminance).
            colour = "white" if 0.299 * red + 0.587 * green + 0.114 * blue < 0.5 else "black"
            axes.text(j, i, label, ha="center", va="center", fontsize=8, color=colour)
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
    figure.savefig(os.fspath(path), dpi=120)
