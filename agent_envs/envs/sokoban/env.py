"""Sokoban: push every box onto a target in a small procedurally generated room.

Room generation and the searches behind the oracle and ``dead_end`` live in
:mod:`agent_envs.envs.sokoban.rooms`; this module is the text interface.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agent_envs.core import TextEnv
from agent_envs.envs.common.grid import DOWN, LEFT, RIGHT, UP, direction_parser
from agent_envs.envs.common.image import IMAGE_METADATA, Tile, draw_cells, grid_shape
from agent_envs.envs.sokoban.rooms import (
    MAX_SIDE,
    MIN_SIDE,
    PLAYER_BITS,
    SokobanTask,
    distance_table,
    generate,
    is_solvable,
    neighbour_steps,
    render,
)
from wrappers.utils.validators import check_int

__all__ = ["DIRECTIONS", "SokobanEnv", "SokobanTask"]

#: Canonical actions, in the order of ``neighbour_steps``.
DIRECTIONS: tuple[str, ...] = ("up", "down", "left", "right")
# The grid families' lenient spellings (``u``, ``move up``, ``north``, ...), in
# this module's direction order, plus ``push``, which is natural here.
_FROM_GRID = {UP: 0, DOWN: 1, LEFT: 2, RIGHT: 3}
_ALIASES: dict[str, int] = {
    text: _FROM_GRID[direction] for text, direction in direction_parser("ldru").items()
}
_ALIASES.update(
    {"push " + word: index for index, name in enumerate(DIRECTIONS) for word in (name, name[0])}
)
_LEGEND = (
    "# wall, _ floor, O target, X box, V box on a target, P you (the player), S you on a target"
)
_MAX_BOXES = 4


#: How rgb_array draws each character of the view (legend ``#_OXVPS``).
TILES: dict[str, Tile] = {
    "#": ((70, 70, 78), None),
    "_": ((214, 196, 150), None),
    "O": ((214, 196, 150), (232, 96, 96)),
    "X": ((214, 196, 150), (150, 92, 36)),
    "V": ((214, 196, 150), (60, 170, 70)),
    "P": ((214, 196, 150), (40, 90, 220)),
    "S": ((232, 96, 96), (40, 90, 220)),
}


class SokobanEnv(TextEnv[SokobanTask]):
    """Push every box onto a target in a small room, one move per turn.

    ## Description
    A planning task with irreversible actions.  Boxes can be pushed but never
    pulled, so a careless push (into a corner, against a wall away from every
    target, or next to another box) can make the puzzle unsolvable.  The
    episode goes on after such a mistake; the agent has to see it coming.

    Rooms are ``width`` x ``height`` cells *including* the outer wall, so
    ``Sokoban-v0`` (6x6) has a 4x4 interior.  Up to a fifth of the interior
    may become inner walls; the floor stays connected.

    ## Action Space
    ``Text``: ``up``, ``down``, ``left`` or ``right``.  Parsing is lenient:
    ``u``/``d``/``l``/``r`` and ``north``/``south``/``west``/``east`` too,
    optionally after ``move``, ``go``, ``walk``, ``step`` or ``push``; case,
    surrounding spaces and a leading ``Action:`` are ignored.
    ``action_vocabulary`` is ``("up", "down", "left", "right")``.  Walking into
    a wall, or pushing a box into a wall or into another box, is illegal: the
    state is unchanged and the turn is used.  So is anything unparsable.

    ## Observation Space
    ``Text``.  The reset observation states the goal, the rules, the legend
    (``#`` wall, ``_`` floor, ``O`` target, ``X`` box, ``V`` box on a target,
    ``P`` player, ``S`` player on a target) and the action format, then the
    grid, one line per row from top to bottom.  A step observation is one line
    of feedback (what moved, or why the action was invalid), then the grid.
    The observation never says whether the puzzle has become unsolvable.

    ## Starting State
    Fixed by the task id, and built by reverse play: the boxes start on their
    targets and the player walks randomly, often pulling a box it walks away
    from, which is the exact reverse of a push.  Every task is therefore
    solvable.  The walk goes on until a lower bound on the moves to solve
    (box-to-target distances plus the walk to the first box) reaches 4, or a
    quarter of the interior cells in smaller rooms, so no task is solved at
    start or within a couple of moves.

    ## Task supply
    Finite, and small enough to matter in the 6x6 one-box rooms: task ids
    0..2999 give 2,352 distinct rooms, so evaluations of a few hundred tasks
    repeat a few (8x8 two-box rooms: 3,000 of 3,000).  The exact count is not
    known, so ``task_supply`` is ``None``.

    ## Rewards
    ``1.0`` on the step that puts the last box on a target, ``0.0`` otherwise.

    ## Episode End
    ### Termination
    Every box is on a target.  A dead end does not terminate the episode.
    ### Truncation
    Never by the env; use ``wrappers.TurnBudget``.

    ## Information
    ``task_id``, ``success``, ``valid_action``, ``dead_end``.  ``dead_end`` is
    exact: it is set as soon as a push leaves no way to solve the puzzle, and
    stays set (boxes cannot be pulled back).

    ## Oracle
    Exact breadth-first search over ``(player, boxes)`` states, backwards
    from the solved states, counting every move (walks and pushes) as a turn.
    It runs once per task, on the first oracle call, and is memoised on the
    task.  ``oracle_turns()`` is the fewest moves to success (``None`` in a
    dead end); ``oracle_actions()`` lists every move that starts an optimal
    solution (``[]`` in a dead end or after success).  ``dead_end`` uses a
    cheaper memoised push-level search, so ``step`` stays fast without the
    oracle.  Both grow combinatorially with room size and box count.

    ## Arguments
    * ``width``, ``height`` (int, default 6): room size including the outer
      wall, 5 to 16.
    * ``num_boxes`` (int, default 1): boxes (and targets), 1 to 4, and at most
      a quarter of the interior cells.
    * ``render_mode`` (``"ansi"``, ``"rgb_array"`` or ``None``): ``render()`` returns the
      grid as text, or as an image (``docs/rendering.md``).

    ## Version History
    * v0: initial version.
    """

    action_vocabulary = DIRECTIONS
    action_format = "Reply with one of: up, down, left, right."
    max_action_length = 64
    max_observation_length = 2048
    metadata = IMAGE_METADATA

    def __init__(
        self,
        width: int = 6,
        height: int = 6,
        num_boxes: int = 1,
        render_mode: str | None = None,
    ) -> None:
        check_int(width, "width (walls included)", MIN_SIDE, MAX_SIDE)
        check_int(height, "height (walls included)", MIN_SIDE, MAX_SIDE)
        limit = min(_MAX_BOXES, (width - 2) * (height - 2) // 4)
        check_int(num_boxes, f"num_boxes for a {width}x{height} room", 1, limit)
        self.width, self.height, self.num_boxes = width, height, num_boxes
        self._deltas = neighbour_steps(width)
        super().__init__(render_mode=render_mode)

    def _make_task(self, task_id: int, rng: np.random.Generator) -> SokobanTask:
        return generate(rng, self.width, self.height, self.num_boxes)

    def _start(self, task: SokobanTask) -> None:
        self._boxes, self._player = task.boxes, task.player
        # None: not known yet.  Only a push can change it, so it is computed
        # lazily and reset after each push.
        self._dead: bool | None = None

    def _intro(self) -> str:
        boxes = "1 box" if self.num_boxes == 1 else f"{self.num_boxes} boxes"
        return (
            f"Sokoban. Push every box onto a target in this {self.width}x{self.height} room "
            f"({boxes}). Each turn you move one cell. Walking into a box pushes it one cell, "
            "but only if the cell behind it is floor: you cannot push a box into a wall or "
            "into another box, and you cannot pull boxes, so a box pushed into a corner or "
            "along a wall may be stuck for good.\n"
            f"Legend: {_LEGEND}. Rows are shown top to bottom.\n{self.action_format}"
        )

    def _view(self) -> str:
        return render(self.task, self._boxes, self._player)

    def image_shape(self) -> tuple[int, int, int]:
        return grid_shape(self.height, self.width)

    def _rgb_array(self) -> np.ndarray:
        return draw_cells(self._view().splitlines(), TILES)

    def compact_view(self) -> dict[str, Any]:
        """Return the encoder settings of the room alone (``CompactView``)."""
        return {"view_only": True, "keep": "head", "charset": "#_OXVPS",
                "max_length": self.height * (self.width + 1) - 1}  # fmt: skip

    def _parse(self, action: str) -> int | None:
        return _ALIASES.get(action)

    def _apply(self, move: int) -> tuple[str, bool]:
        task, name = self.task, DIRECTIONS[move]
        step = self._deltas[move]
        ahead = self._player + step
        if not task.floor >> ahead & 1:
            return f"Illegal move {name}: a wall is in the way.", False
        if not self._boxes >> ahead & 1:
            self._player = ahead
            return f"You moved {name}.", True
        beyond = ahead + step
        if not task.floor >> beyond & 1:
            return f"Illegal move {name}: the box cannot be pushed into a wall.", False
        if self._boxes >> beyond & 1:
            return f"Illegal move {name}: the box cannot be pushed into another box.", False
        self._boxes ^= (1 << ahead) | (1 << beyond)
        self._player = ahead
        self._dead = None  # only a push can change whether the puzzle is solvable
        if self._boxes == task.targets:
            return f"You pushed a box {name}. Every box is on a target: solved!", True
        where = " onto a target" if task.targets >> beyond & 1 else ""
        return f"You pushed a box {name}{where}.", True

    def _is_success(self) -> bool:
        return self._boxes == self.task.targets

    def _is_dead_end(self) -> bool:
        if self._dead is None:
            self._dead = not is_solvable(self.task, self._boxes, self._player)
        return self._dead

    def _legal(self) -> list[int]:
        """Indices of the moves that are legal now."""
        floor, boxes, player = self.task.floor, self._boxes, self._player
        legal = []
        for move, step in enumerate(self._deltas):
            ahead = player + step
            if floor >> ahead & 1 and (
                not boxes >> ahead & 1 or (floor & ~boxes) >> ahead + step & 1
            ):
                legal.append(move)
        return legal

    def _state_key(self, move: int | None = None) -> int:
        """The distance-table key of the current state, or of the state after ``move``."""
        boxes, player = self._boxes, self._player
        if move is not None:
            step = self._deltas[move]
            player += step
            if boxes >> player & 1:
                boxes ^= (1 << player) | (1 << player + step)
        return boxes << PLAYER_BITS | player

    def admissible_actions(self) -> list[str]:
        """The moves that are legal now: not into a wall, no box pushed into a wall or box."""
        return [DIRECTIONS[move] for move in self._legal()]

    def oracle_actions(self) -> list[str]:
        """Every move that starts a shortest solution; ``[]`` in a dead end or after success."""
        if self._success:
            return []
        distances = distance_table(self.task)
        remaining = distances.get(self._state_key())
        if remaining is None:
            return []
        return [
            DIRECTIONS[move]
            for move in self._legal()
            if distances.get(self._state_key(move)) == remaining - 1
        ]

    def oracle_turns(self) -> int | None:
        """The fewest moves to success from now, or ``None`` in a dead end."""
        if self._success:
            return 0
        return distance_table(self.task).get(self._state_key())
