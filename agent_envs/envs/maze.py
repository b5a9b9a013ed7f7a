"""Maze: find the exit of a maze seen only from the inside."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from agent_envs.core import TextEnv
from agent_envs.envs.common.grid import (
    DOWN,
    LEFT,
    OPPOSITE,
    RIGHT,
    UP,
    bfs_distances,
    descending_moves,
    direction_parser,
    grid_neighbours,
)
from agent_envs.envs.common.image import IMAGE_METADATA, Tile, draw_cells, grid_shape
from wrappers.utils.validators import check_int

__all__ = ["MazeEnv", "MazeTask", "draw_maze", "generate_maze"]

#: Canonical action per grid direction (index: LEFT, DOWN, RIGHT, UP).
_NAMES = ("west", "south", "east", "north")
#: The vocabulary order; admissible and oracle actions are listed in it.
_ORDER = (UP, DOWN, RIGHT, LEFT)
_PARSE = direction_parser("wsen")


def _open_text(mask: int) -> str:
    opened = [_NAMES[d] for d in _ORDER if mask >> d & 1]
    walled = [_NAMES[d] for d in _ORDER if not mask >> d & 1]
    return f"Open: {', '.join(opened) or 'none'}. Walls: {', '.join(walled) or 'none'}."


# The local view depends only on which of the four sides are open: 16 cases.
_OPEN_TEXT = tuple(_open_text(mask) for mask in range(16))


@dataclass(frozen=True)
class MazeTask:
    """One maze: open sides per cell, a start, an exit and every cell's distance to it.

    Attributes:
        size: the maze is ``size`` x ``size`` cells.
        open_sides: per cell, a bit mask of the directions without a wall
            (bit ``d`` for direction ``d`` of :mod:`agent_envs.envs.common.grid`).
        start: the agent's first cell.
        exit: the cell to reach.
        distances: per cell, the fewest moves to the exit.
    """

    size: int
    open_sides: tuple[int, ...]
    start: int
    exit: int
    distances: tuple[int, ...]

    def steps(self, cell: int) -> tuple[int, ...]:
        """Return the cell reached in each direction from ``cell``, or ``-1`` at a wall."""
        mask = self.open_sides[cell]
        around = grid_neighbours(self.size, self.size)[cell]
        return tuple(around[d] if mask >> d & 1 else -1 for d in range(4))


def min_exit_distance(size: int) -> int:
    """Return the fewest moves from start to exit that a generated maze allows."""
    return 2 * size


def generate_maze(size: int, rng: np.random.Generator) -> MazeTask:
    """Carve a perfect maze by randomised depth-first search and place start and exit.

    The start is a uniform cell; the exit is a uniform cell among those at
    least :func:`min_exit_distance` moves away (the farthest cells if none is).
    """
    cells = size * size
    around = grid_neighbours(size, size)
    # One uniform draw per carved passage, drawn up front: per-call Generator
    # overhead would dominate the carving.
    draws = rng.random(cells + 2).tolist()
    masks = [0] * cells
    steps = [[-1, -1, -1, -1] for _ in range(cells)]
    visited = [False] * cells
    origin = int(draws[-1] * cells)
    visited[origin] = True
    stack = [origin]
    carved = 0
    while stack:
        cell = stack[-1]
        options = [d for d, nb in enumerate(around[cell]) if nb >= 0 and not visited[nb]]
        if not options:
            stack.pop()
            continue
        direction = options[int(draws[carved] * len(options))]
        carved += 1
        neighbour = around[cell][direction]
        masks[cell] |= 1 << direction
        masks[neighbour] |= 1 << OPPOSITE[direction]
        steps[cell][direction] = neighbour
        steps[neighbour][OPPOSITE[direction]] = cell
        visited[neighbour] = True
        stack.append(neighbour)
    start = int(draws[-2] * cells)
    from_start = bfs_distances(steps, start)
    wanted = min(min_exit_distance(size), max(from_start))
    candidates = [cell for cell, distance in enumerate(from_start) if distance >= wanted]
    exit_cell = candidates[int(rng.integers(len(candidates)))]
    return MazeTask(
        size=size,
        open_sides=tuple(masks),
        start=start,
        exit=exit_cell,
        distances=tuple(bfs_distances(steps, exit_cell)),
    )


def draw_maze(task: MazeTask, position: int | None = None) -> str:
    """Return the whole maze as ASCII art (``#`` wall, ``S`` start, ``E`` exit, ``@`` agent).

    This is the privileged, fully observed map: for humans and docs, never
    shown to the agent.
    """
    size = task.size
    art = [["#"] * (2 * size + 1) for _ in range(2 * size + 1)]
    for cell, mask in enumerate(task.open_sides):
        row, col = divmod(cell, size)
        y, x = 2 * row + 1, 2 * col + 1
        art[y][x] = " "
        for direction, (d_y, d_x) in (
            (LEFT, (0, -1)),
            (DOWN, (1, 0)),
            (RIGHT, (0, 1)),
            (UP, (-1, 0)),
        ):
            if mask >> direction & 1:
                art[y + d_y][x + d_x] = " "
    for cell, mark in ((task.start, "S"), (task.exit, "E"), (position, "@")):
        if cell is not None:
            row, col = divmod(cell, size)
            art[2 * row + 1][2 * col + 1] = mark
    return "\n".join("".join(line) for line in art)


#: How rgb_array draws the agent's own view: walls, open sides, the agent, the exit.
TILES: dict[str, Tile] = {
    "#": ((70, 70, 78), None),
    "_": ((214, 196, 150), None),
    "A": ((214, 196, 150), (40, 90, 220)),
    "E": ((96, 200, 110), (40, 90, 220)),
}


class MazeEnv(TextEnv[MazeTask]):
    """Find the exit of a maze from the inside, seeing only the walls around you.

    ## Description
    A partially observable navigation task that needs memory over a long
    horizon.  Each task is a *perfect* maze (exactly one path between any two
    cells) of ``size`` x ``size`` cells, carved by a randomised depth-first
    search (the recursive backtracker), which gives long winding corridors and
    many dead ends.  The agent never sees the map: each turn it is told its
    coordinates and which of its four sides are open.  The exit's coordinates
    are stated once, in the reset observation, so an agent must remember them,
    and remember where it has been, to explore efficiently.

    ## Action Space
    ``Text``: one of ``north``, ``south``, ``east``, ``west`` (the
    ``action_vocabulary``, in that order).  Parsing is lenient: case,
    whitespace, a leading ``Action:``, a verb (``move``/``go``/``walk``/
    ``step``), the letters ``n``/``s``/``e``/``w`` and the words
    ``up``/``down``/``right``/``left`` are accepted.  Walking into a wall is
    invalid: the agent stays where it is and the turn is used up.
    ``admissible_actions()`` lists the open directions.

    ## Observation Space
    ``Text``.  The reset observation states the maze size, the coordinate
    convention (rows ``0..size-1`` from north to south, columns from west to
    east), the exit's coordinates and the action format, followed by the
    view.  The view is one line that depends only on the agent's cell and its
    four sides: ``You are at row 3, column 4. Open: north, east. Walls: south,
    west.``  A step observation is the feedback for the step and the view.

    ## Starting State
    The start is a uniform cell of the maze.  The exit is a uniform cell among
    those at least ``2 * size`` moves from the start (the farthest cells, in
    mazes too small for that).  Both are fixed by the task id.

    ## Rewards
    ``1.0`` on the step that reaches the exit, ``0.0`` otherwise.

    ## Episode End
    ### Termination
    The agent reaches the exit.
    ### Truncation
    Never by the env; use ``wrappers.TurnBudget``.

    ## Information
    ``task_id``, ``success``, ``valid_action``, ``dead_end``.  ``dead_end`` is
    always ``False``: the exit stays reachable from every cell.

    ## Oracle
    The oracle is privileged: it reads the true map, which the agent never
    sees.  ``oracle_turns()`` is the length of the shortest path from the
    agent's cell to the exit (unique, as the maze is perfect) and
    ``oracle_actions()`` is the direction of its first move.  An agent that
    has to explore cannot match it; the gap between an agent's turns and the
    oracle's measures the cost of partial observability.
    :func:`draw_maze` renders the full map for humans.

    ## Arguments
    ``size`` (int, default 7): the maze has ``size`` x ``size`` cells
    (``2 <= size <= 40``).

    ## Version History
    * v0: initial version.
    """

    action_vocabulary = tuple(_NAMES[d] for d in _ORDER)
    action_format = "Reply with one of: north, south, east, west."
    privileged_oracle = True
    max_action_length = 64

    metadata = IMAGE_METADATA

    def __init__(self, size: int = 7, render_mode: str | None = None) -> None:
        self.size = check_int(size, "size", 2, 40)
        # (-1, +size, +1, -size): the cell-index change of each direction.
        self._offsets = (-1, size, 1, -size)
        super().__init__(render_mode=render_mode)

    def _make_task(self, task_id: int, rng: np.random.Generator) -> MazeTask:
        return generate_maze(self.size, rng)

    def _start(self, task: MazeTask) -> None:
        self._position = task.start

    def _intro(self) -> str:
        last = self.size - 1
        row, col = divmod(self.task.exit, self.size)
        return (
            f"You are inside a {self.size}x{self.size} maze of cells and cannot see its map. "
            "Each turn you learn your position and which of the four directions around you "
            f"are open or blocked by a wall. Rows are numbered 0 to {last} from north to "
            f"south and columns 0 to {last} from west to east. Find the exit at row {row}, "
            f"column {col}. Walking into a wall wastes the turn. {self.action_format}"
        )

    def _view(self) -> str:
        row, col = divmod(self._position, self.size)
        return (
            f"You are at row {row}, column {col}. "
            f"{_OPEN_TEXT[self.task.open_sides[self._position]]}"
        )

    def image_shape(self) -> tuple[int, int, int]:
        return grid_shape(3, 3)

    def _rgb_array(self) -> np.ndarray:
        """Draw the agent's own view, never the map: its cell and which sides are open."""
        sides = self.task.open_sides[self._position]
        left, down, right, up = ("_" if sides >> move & 1 else "#" for move in range(4))
        centre = "E" if self._position == self.task.exit else "A"
        return draw_cells(["#" + up + "#", left + centre + right, "#" + down + "#"], TILES)

    def compact_view(self) -> dict[str, Any]:
        """Return the encoder settings of the walls and the heading (``CompactView``).

        The view left-aligned after the feedback's first 16 characters (``You
        moved north.``: the heading); letters only, so the coordinates read as
        "unknown" and a policy cannot hang on one map's layout.  A memoryless
        policy then sees its heading beside the walls around it, which is all a
        wall follower needs.
        """
        longest = max(len(text) for text in _OPEN_TEXT)
        position = len(f"You are at row {self.size - 1}, column {self.size - 1}. ")
        return {"view_only": True, "keep": "head", "max_length": position + longest,
                "charset": "abcdefghijklmnopqrstuvwxyz", "feedback_length": 16}  # fmt: skip

    def _parse(self, action: str) -> int | None:
        return _PARSE.get(action)

    def _apply(self, move: int) -> tuple[str, bool]:
        task = self.task
        if self._position == task.exit:
            return "The episode has ended: you already found the exit.", False
        if not task.open_sides[self._position] >> move & 1:
            return f"There is a wall to the {_NAMES[move]}: you stay where you are.", False
        self._position += self._offsets[move]
        if self._position == task.exit:
            return f"You moved {_NAMES[move]} and found the exit!", True
        return f"You moved {_NAMES[move]}.", True

    def _is_success(self) -> bool:
        return self._position == self.task.exit

    def admissible_actions(self) -> list[str]:
        """Return the open directions, in vocabulary order; none once the exit is reached."""
        if self._position == self.task.exit:
            return []
        mask = self.task.open_sides[self._position]
        return [_NAMES[d] for d in _ORDER if mask >> d & 1]

    def oracle_actions(self) -> list[str]:
        """Return the first move of the shortest path to the exit (privileged: reads the map)."""
        task = self.task
        distance = task.distances[self._position]
        if distance == 0:
            return []
        moves = descending_moves(task.steps(self._position), distance, task.distances)
        return [_NAMES[d] for d in _ORDER if d in moves]

    def oracle_turns(self) -> int | None:
        """Return the length of the shortest path from the agent's cell to the exit."""
        return self.task.distances[self._position]
