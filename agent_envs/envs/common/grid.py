"""Grid helpers shared by the grid-navigation families (FrozenLake, Maze and Sokoban).

Cells are numbered row-major, ``cell = row * cols + col``, with row 0 at the
top (north).  Directions follow Gymnasium's FrozenLake order: ``0`` left
(west), ``1`` down (south), ``2`` right (east), ``3`` up (north).  A *step
table* lists, for each cell, the cell reached in each direction, or ``-1``
where that move is impossible (the edge of the grid, a wall, a hole).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from functools import lru_cache

__all__ = [
    "DELTAS",
    "DOWN",
    "LEFT",
    "OPPOSITE",
    "RIGHT",
    "UP",
    "bfs_distances",
    "descending_moves",
    "direction_parser",
    "grid_neighbours",
]

LEFT, DOWN, RIGHT, UP = 0, 1, 2, 3
#: (row change, column change) for each direction.
DELTAS: tuple[tuple[int, int], ...] = ((0, -1), (1, 0), (0, 1), (-1, 0))
OPPOSITE: tuple[int, ...] = (RIGHT, UP, LEFT, DOWN)

# Both the relative and the compass word are accepted for every direction, in
# every family: an agent that says "north" on a lake clearly means "up".
_WORDS = (("left", "west"), ("down", "south"), ("right", "east"), ("up", "north"))
_VERBS = ("", "move ", "go ", "walk ", "step ")


def direction_parser(letters: str) -> dict[str, int]:
    """Return a lookup from lenient move text (already normalised) to a direction.

    Every direction is accepted as its relative word (``left``), its compass
    word (``west``) and the family's one-letter abbreviation, each optionally
    preceded by ``move``, ``go``, ``walk`` or ``step``.  One-letter
    abbreviations are per family because they collide across conventions
    (``w`` is west on a compass but up on a WASD keyboard).

    Args:
        letters: four distinct letters, one per direction in index order,
            e.g. ``"ldru"``.

    Example:
        >>> direction_parser("ldru")["move up"]
        3
    """
    if len(letters) != 4 or len(set(letters)) != 4:
        raise ValueError(f"letters must be four distinct characters, got {letters!r}.")
    table: dict[str, int] = {}
    for direction, words in enumerate(_WORDS):
        for word in (*words, letters[direction]):
            for verb in _VERBS:
                table[verb + word] = direction
    return table


@lru_cache(maxsize=16)
def grid_neighbours(rows: int, cols: int) -> tuple[tuple[int, ...], ...]:
    """Return the step table of an open ``rows`` x ``cols`` grid (only the edges block)."""
    table = []
    for cell in range(rows * cols):
        row, col = divmod(cell, cols)
        steps = []
        for d_row, d_col in DELTAS:
            r, c = row + d_row, col + d_col
            steps.append(r * cols + c if 0 <= r < rows and 0 <= c < cols else -1)
        table.append(tuple(steps))
    return tuple(table)


def bfs_distances(
    steps: Sequence[Sequence[int]], source: int, blocked: Sequence[bool] | None = None
) -> list[int]:
    """Return the fewest moves between ``source`` and every cell; ``-1`` where unreachable.

    Moves must be symmetric (if ``a`` steps to ``b`` then ``b`` steps to
    ``a``), so this is also the distance *to* ``source``.

    Args:
        steps: the step table.
        source: the cell to measure from.
        blocked: per cell, whether it may not be entered (e.g. a hole).
    """
    distances = [-1] * len(steps)
    distances[source] = 0
    queue = deque((source,))
    while queue:
        cell = queue.popleft()
        next_distance = distances[cell] + 1
        for neighbour in steps[cell]:
            if neighbour >= 0 and distances[neighbour] < 0:
                if blocked is not None and blocked[neighbour]:
                    continue
                distances[neighbour] = next_distance
                queue.append(neighbour)
    return distances


def descending_moves(
    neighbours: Sequence[int], distance: int, distances: Sequence[int]
) -> list[int]:
    """Return the directions whose neighbour is one move closer to the target.

    Args:
        neighbours: the cell reached in each direction, or ``-1``.
        distance: the current cell's distance to the target (``>= 1``).
        distances: every cell's distance to the target (``-1``: unreachable).
    """
    return [
        direction
        for direction, neighbour in enumerate(neighbours)
        if neighbour >= 0 and distances[neighbour] == distance - 1
    ]
