"""Numpy-only drawing for ``render_mode="rgb_array"``: small, deterministic RGB images.

An image is drawn on a grid of square cells of :data:`CELL` pixels.  Each
cell gets a background colour and, optionally, a centred marker (a smaller
square) of another colour: walls, floor, targets, boxes, holes, the agent.
No font and no library beyond numpy, so images are identical on every
machine and a frame costs a few array writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["CELL", "IMAGE_METADATA", "Tile", "draw_cells", "grid_shape"]

#: The ``metadata`` of a family that draws ``rgb_array`` frames as well as ``ansi`` text.
IMAGE_METADATA = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
#: Side of one cell, in pixels.
CELL = 16
#: (background, marker or None): the look of one cell.
Tile = tuple[tuple[int, int, int], "tuple[int, int, int] | None"]


def grid_shape(rows: int, cols: int) -> tuple[int, int, int]:
    """Return the ``(H, W, 3)`` shape of an image of ``rows`` x ``cols`` cells.

    >>> grid_shape(2, 3)
    (32, 48, 3)
    """
    return rows * CELL, cols * CELL, 3


def draw_cells(cells: Sequence[Sequence[str]], tiles: Mapping[str, Tile]) -> np.ndarray:
    """Return the ``uint8`` image of a grid of cell codes, each drawn as ``tiles[code]``.

    All rows have the same number of cells.

    >>> image = draw_cells(["ab"], {"a": ((0, 0, 0), None), "b": ((9, 9, 9), (1, 2, 3))})
    >>> image.shape, image[0, 0].tolist(), image[8, 24].tolist(), image[0, 16].tolist()
    ((16, 32, 3), [0, 0, 0], [1, 2, 3], [9, 9, 9])
    """
    codes, background, marker, marked = _palette(tiles)
    index = np.array([[codes[code] for code in row] for row in cells], dtype=np.intp)
    rows, cols = index.shape
    # Each cell's colour spread over its CELL x CELL block: one broadcast, one copy.
    blocks = np.broadcast_to(background[index][:, None, :, None], (rows, CELL, cols, CELL, 3))
    image = blocks.reshape(rows * CELL, cols * CELL, 3).copy()
    inset = slice(CELL // 4, CELL - CELL // 4)
    for row, col in np.argwhere(marked[index]):  # few cells carry a marker
        block = image[row * CELL : (row + 1) * CELL, col * CELL : (col + 1) * CELL]
        block[inset, inset] = marker[index[row, col]]
    return image


_Palette = tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray]
_PALETTES: dict[int, _Palette] = {}


def _palette(tiles: Mapping[str, Tile]) -> _Palette:
    """Return (code -> row, background colours, marker colours, has-marker) for ``tiles``.

    Built once per tiles mapping (the families' are module constants).
    """
    cached = _PALETTES.get(id(tiles))
    if cached is None or cached[0].keys() != tiles.keys():
        codes = {code: row for row, code in enumerate(tiles)}
        background = np.array([tile[0] for tile in tiles.values()], dtype=np.uint8)
        marker = np.array([tile[1] or tile[0] for tile in tiles.values()], dtype=np.uint8)
        marked = np.array([tile[1] is not None for tile in tiles.values()])
        cached = _PALETTES[id(tiles)] = (codes, background, marker, marked)
    return cached
