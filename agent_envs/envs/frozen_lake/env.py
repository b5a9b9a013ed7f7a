"""FrozenLake: cross a frozen lake to the goal without falling into a hole."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agent_envs.core import TextEnv
from agent_envs.envs.common.grid import (
    bfs_distances,
    descending_moves,
    direction_parser,
    grid_neighbours,
)
from agent_envs.envs.common.image import IMAGE_METADATA, Tile, draw_cells, grid_shape
from agent_envs.envs.frozen_lake.slippery import (
    BudgetedLake,
    solve_budgeted_lake,
    solve_slippery_lake,
)
from wrappers.errors import InvalidValue
from wrappers.utils.validators import check_bool, check_int

__all__ = [
    "DEADLINE_DISCOUNT",
    "HOLE_PROBABILITY",
    "INTENDED_PROBABILITY",
    "FrozenLakeEnv",
    "LakeTask",
    "budgeted_oracle",
    "generate_lake",
    "solve_slippery",
]

#: Chance that a generated tile is a hole (Gymnasium's ``generate_random_map`` uses 0.2 too).
HOLE_PROBABILITY = 0.2
#: On slippery ice, the chance that a move goes the intended way; each perpendicular
#: direction gets half of the rest.
INTENDED_PROBABILITY = 0.8
#: The slippery oracle maximises the chance of success before a random deadline
#: ``T`` with ``P(T >= t) = DEADLINE_DISCOUNT ** t`` (a mean of 49 turns).
DEADLINE_DISCOUNT = 0.98

_NAMES = ("left", "down", "right", "up")
_PARSE = direction_parser("ldru")


@dataclass(frozen=True)
class LakeTask:
    """One lake: its tiles, start and goal, and every tile's distance to the goal.

    Attributes:
        size: the lake is ``size`` x ``size`` tiles.
        tiles: row-major tile letters: ``S`` start, ``F`` frozen, ``H`` hole, ``G`` goal.
        start: the agent's first tile.
        goal: the tile to reach.
        distances: per tile, the fewest moves to the goal over non-hole
            tiles, ignoring slips (``-1`` for holes and cut-off tiles).
        memo: the slippery oracles, computed on demand: keyed by
            ``(intended probability, deadline discount)`` without a budget and
            by ``("finite horizon", intended probability)`` with one.
    """

    size: int
    tiles: str
    start: int
    goal: int
    distances: tuple[int, ...]
    memo: dict[tuple[Any, ...], Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_rows(cls, rows: Sequence[str]) -> LakeTask:
        """Build a task from a square map such as ``("SFF", "FHF", "FFG")``.

        Raises:
            InvalidValue: the map is not square, has letters other than
                ``SFHG``, lacks exactly one ``S`` and one ``G``, or ``G`` is
                unreachable from ``S``.
        """
        size = len(rows)
        tiles = "".join(rows)
        if size < 2 or any(len(row) != size for row in rows) or set(tiles) - set("SFHG"):
            raise InvalidValue(f"rows must be a square map of S, F, H, G letters, got {rows!r}.")
        if tiles.count("S") != 1 or tiles.count("G") != 1:
            raise InvalidValue("rows must contain exactly one S and one G.")
        start, goal = tiles.index("S"), tiles.index("G")
        distances = _distances_to(size, tiles, goal)
        if distances[start] < 0:
            raise InvalidValue(f"G is unreachable from S in {rows!r}.")
        return cls(size=size, tiles=tiles, start=start, goal=goal, distances=tuple(distances))

    def rows(self) -> list[str]:
        """Return the map as one string of tile letters per row."""
        return [self.tiles[r * self.size : (r + 1) * self.size] for r in range(self.size)]


def _distances_to(size: int, tiles: str, goal: int) -> list[int]:
    return bfs_distances(grid_neighbours(size, size), goal, [tile == "H" for tile in tiles])


def min_start_distance(size: int) -> int:
    """Return the fewest moves from start to goal that a generated lake allows."""
    return 3 * size // 2


def generate_lake(size: int, rng: np.random.Generator) -> LakeTask:
    """Draw a lake with a path from start to goal of at least :func:`min_start_distance` moves.

    Each tile is a hole with probability :data:`HOLE_PROBABILITY`; the goal is
    a uniform non-hole tile and the start a uniform tile among those at least
    ``min_start_distance(size)`` moves away over non-hole tiles.  Maps
    without such a start are redrawn.
    """
    cells = size * size
    around = grid_neighbours(size, size)
    shortest = min_start_distance(size)
    while True:
        holes = (rng.random(cells) < HOLE_PROBABILITY).tolist()
        frozen = [cell for cell in range(cells) if not holes[cell]]
        if len(frozen) < 2:
            continue
        goal = frozen[int(rng.integers(len(frozen)))]
        distances = bfs_distances(around, goal, holes)
        starts = [cell for cell in frozen if distances[cell] >= shortest]
        if starts:
            break
    letters = ["H" if hole else "F" for hole in holes]
    start = starts[int(rng.integers(len(starts)))]
    letters[start], letters[goal] = "S", "G"
    return LakeTask(
        size=size, tiles="".join(letters), start=start, goal=goal, distances=tuple(distances)
    )


def solve_slippery(
    task: LakeTask,
    intended: float = INTENDED_PROBABILITY,
    discount: float = DEADLINE_DISCOUNT,
) -> tuple[tuple[float, ...], tuple[tuple[int, ...], ...]]:
    """Return the slippery oracle of ``task``, memoised on it.

    See :func:`agent_envs.envs.frozen_lake.slippery.solve_slippery_lake` for the
    criterion (success before a random deadline) and the returned
    ``(probabilities, moves)`` per tile.
    """
    key = (intended, discount)
    if key not in task.memo:
        task.memo[key] = solve_slippery_lake(task.distances, intended, discount)
    return task.memo[key]


def budgeted_oracle(task: LakeTask, intended: float = INTENDED_PROBABILITY) -> BudgetedLake:
    """Return the budget-aware slippery oracle of ``task``, memoised on it.

    See :class:`agent_envs.envs.frozen_lake.slippery.BudgetedLake`: dynamic programming
    over (tile, turns left) for the highest probability of reaching the goal
    within the turns left.
    """
    key = ("finite horizon", intended)
    if key not in task.memo:
        task.memo[key] = solve_budgeted_lake(task.distances, intended)
    return task.memo[key]


#: How rgb_array draws each tile of the lake (legend ``@SFHG``).
TILES: dict[str, Tile] = {
    "F": ((206, 232, 250), None),
    "S": ((170, 206, 236), None),
    "H": ((24, 44, 96), None),
    "G": ((246, 206, 62), None),
    "@": ((206, 232, 250), (220, 50, 50)),
}


class FrozenLakeEnv(TextEnv[LakeTask]):
    """Cross a frozen lake from the start to the goal without falling into a hole.

    ## Description
    A text version of Gymnasium's FrozenLake with a new lake per task.  The
    agent sees the whole map and must plan a route around the holes.  On the
    slippery variants a move can slide sideways, so the best route keeps
    away from holes even when that costs turns: a test of planning under
    uncertainty and of recovering after a slip.

    ## Action Space
    ``Text``: one of ``left``, ``down``, ``right``, ``up`` (the
    ``action_vocabulary``, in that order).  Parsing is lenient: case,
    whitespace, a leading ``Action:``, a verb (``move``/``go``/``walk``/
    ``step``), the letters ``l``/``d``/``r``/``u`` and the compass words
    ``west``/``south``/``east``/``north`` are accepted.  A move that would
    leave the lake is invalid: the agent stays where it is and the turn is
    used up.  ``admissible_actions()`` lists the moves that stay on the lake
    (moving into a hole is legal, and fatal).

    ## Observation Space
    ``Text``.  The reset observation states the goal, the legend, the
    coordinate convention and (on slippery ice) the slip rule, then the view.
    The view is the map, one row per line with tiles separated by spaces
    (``S`` start, ``F`` frozen, ``H`` hole, ``G`` goal, ``@`` the agent),
    and the agent's row and column.  A step observation is the feedback
    (including whether the agent slipped) and the view.

    ## Starting State
    Each tile is a hole with probability 0.2.  The goal is a uniform non-hole
    tile; the start is a uniform tile at least ``3 * size // 2`` moves from
    the goal over non-hole tiles (6 on 4x4, 12 on 8x8; maps without one are
    redrawn), so every task is solvable and none is trivial.  The task id
    fixes the map; slippery and solid ice of one size share their tasks.

    ## Task supply
    Finite, and small enough to matter on 4x4 lakes: task ids 0..2999 give
    2,251 distinct maps, so evaluations of a few hundred tasks repeat a few
    (8x8: 3,000 of 3,000).  The exact count is not known, so
    ``task_supply`` is ``None``.

    ## Rewards
    ``1.0`` on the step that reaches the goal, ``0.0`` otherwise.

    ## Episode End
    ### Termination
    The agent reaches the goal (success) or falls into a hole (failure:
    ``dead_end`` is ``True``).
    ### Truncation
    Never by the env; use ``wrappers.TurnBudget``.

    ## Information
    ``task_id``, ``success``, ``valid_action``, ``dead_end``.  ``dead_end`` is
    ``True`` exactly when the agent is in a hole.

    ## Oracle
    Deterministic ice: ``oracle_turns()`` is the length of the shortest path
    to the goal over non-hole tiles (breadth-first search) and
    ``oracle_actions()`` lists every move that starts such a path.

    Slippery ice (``slippery=True``): a move goes the intended way with
    probability 0.8 and slides to each perpendicular side with probability
    0.1 (a slide off the lake leaves the agent in place); the slide is drawn
    from the episode's ``np_random``.  0.8 rather than Gymnasium's 1/3 keeps
    tasks solvable within budgets of a few times the shortest path and the
    best policy readable (head for the goal, give holes a wide berth).  On
    these 8x8 lakes the best policy succeeds within 5x the shortest path in
    about 60% of runs at 0.8, against under 10% at 1/3.

    ``oracle_actions()`` lists every move (ties within 1e-9) that maximises
    the probability of reaching the goal before a random deadline ``T`` with
    ``P(T >= t) = 0.98 ** t`` (mean 49 turns), that is ``E[0.98 ** turns]``
    with a failed run counting 0; see :func:`solve_slippery`.  The deadline
    matters: the probability of *ever* succeeding is maximised by hiding in
    hole-free pockets for hundreds of turns until a lucky slide leads out,
    and that policy succeeds within 3x the shortest path in 32% of runs on
    8x8 lakes, against 60% for this oracle.  ``success_probability()`` is
    the probability that always playing ``oracle_actions()[0]`` from here
    eventually reaches the goal.

    **With a turn budget** (slippery ice): a ``TurnBudget`` or ``BudgetMix``
    around the env tells it the turns left (:meth:`set_turns_left`).  Then
    ``oracle_actions()`` lists every move that maximises the probability of
    reaching the goal *within the turns left*, and ``success_probability()``
    is that probability, both by dynamic programming over (tile, turns left)
    (:func:`budgeted_oracle`).  With few turns left the best move can be a
    short route past holes, with many a long safe one.  If no move can reach
    the goal in time, ``oracle_actions()`` falls back to the moves above.
    Without a budget (the env alone) it behaves as described above.

    ``oracle_turns()`` is the length of the shortest path ignoring slides:
    the fewest turns in which success is possible at all, so no policy can
    succeed in fewer.  It is *not* the number of turns the oracle needs: its
    route can be longer, and slides cost turns (over 200 8x8 tasks it
    succeeds in 64% of runs, in 18 turns on average against a shortest path
    of 12.5).  Along a slide-free run it can stay level, which is why the
    exact-oracle test skips stochastic envs.

    In both: ``oracle_turns()`` is ``0`` at the goal and ``None`` in a hole;
    ``oracle_actions()`` is empty in both.

    ## Arguments
    ``size`` (int, default 4): the lake is ``size`` x ``size`` tiles
    (``2 <= size <= 32``).  ``slippery`` (bool, default False): slippery ice.

    ## Version History
    * v0: initial version.
    """

    action_vocabulary = _NAMES
    action_format = "Reply with one of: left, down, right, up."
    max_action_length = 64

    metadata = IMAGE_METADATA

    def __init__(
        self, size: int = 4, slippery: bool = False, render_mode: str | None = None
    ) -> None:
        self.size = check_int(size, "size", 2, 32)
        self.slippery = check_bool(slippery, "slippery")
        self.stochastic = slippery
        super().__init__(render_mode=render_mode)

    def _make_task(self, task_id: int, rng: np.random.Generator) -> LakeTask:
        return generate_lake(self.size, rng)

    def _start(self, task: LakeTask) -> None:
        self._position = task.start
        self._turns_left: int | None = None
        self._rows = [" ".join(row) for row in task.rows()]

    def _intro(self) -> str:
        task = self.task
        last = task.size - 1
        goal_row, goal_col = divmod(task.goal, task.size)
        slip = (
            " The ice is slippery: a move goes the way you chose with probability "
            f"{INTENDED_PROBABILITY:g} and slides 90 degrees to either side with probability "
            f"{(1 - INTENDED_PROBABILITY) / 2:g} each; sliding off the lake leaves you where "
            "you were."
            if self.slippery
            else ""
        )
        return (
            f"You are on a frozen lake of {task.size}x{task.size} tiles. Walk to the goal G at "
            f"row {goal_row}, column {goal_col} without falling into a hole H. Legend: @ you, "
            f"S start, F frozen ice, H hole, G goal. Rows are numbered 0 to {last} from top to "
            f"bottom and columns 0 to {last} from left to right.{slip} A move off the lake is "
            f"invalid and wastes the turn. {self.action_format}"
        )

    def _view(self) -> str:
        row, col = divmod(self._position, self.task.size)
        rows = self._rows.copy()
        line = rows[row]
        rows[row] = f"{line[: 2 * col]}@{line[2 * col + 1 :]}"
        rows.append(f"You are at row {row}, column {col}.")
        return "\n".join(rows)

    def image_shape(self) -> tuple[int, int, int]:
        return grid_shape(self.size, self.size)

    def _rgb_array(self) -> np.ndarray:
        rows = self._view().splitlines()[: self.size]
        return draw_cells([row.split(" ") for row in rows], TILES)

    def compact_view(self) -> dict[str, Any]:
        """Return the encoder settings of the map alone (``CompactView``).

        The ``size`` rows of tiles and the ``@`` carry the whole state; the
        position sentence, the feedback and the intro are dropped.
        """
        return {"view_only": True, "keep": "head", "charset": "FHSG@",
                "max_length": 2 * self.size * self.size - 1}  # fmt: skip

    def _parse(self, action: str) -> int | None:
        return _PARSE.get(action)

    def _apply(self, move: int) -> tuple[str, bool]:
        task = self.task
        if self._position == task.goal or task.tiles[self._position] == "H":
            return "The episode has ended: reset to play again.", False
        around = grid_neighbours(task.size, task.size)[self._position]
        if around[move] < 0:
            return f"Invalid move {_NAMES[move]}: it would leave the lake.", False
        went, feedback = move, f"You moved {_NAMES[move]}"
        if self.slippery:
            draw = self.np_random.random()
            if draw >= INTENDED_PROBABILITY:
                went = (move + (1 if draw >= (1 + INTENDED_PROBABILITY) / 2 else 3)) % 4
                feedback = f"You tried to move {_NAMES[move]} but slid {_NAMES[went]}"
                if around[went] < 0:
                    return f"{feedback} against the edge and stayed where you were.", True
        self._position = around[went]
        tile = task.tiles[self._position]
        if tile == "H":
            return f"{feedback} and fell into a hole. Game over.", True
        if tile == "G":
            return f"{feedback} and reached the goal!", True
        return f"{feedback}.", True

    def _is_success(self) -> bool:
        return self._position == self.task.goal

    def _is_failure(self) -> bool:
        return self.task.tiles[self._position] == "H"

    def admissible_actions(self) -> list[str]:
        """Return the moves that stay on the lake; none once the episode has ended."""
        task = self.task
        if self._position == task.goal or task.tiles[self._position] == "H":
            return []
        around = grid_neighbours(task.size, task.size)[self._position]
        return [_NAMES[d] for d in range(4) if around[d] >= 0]

    def set_turns_left(self, turns_left: int | None) -> None:
        """Plan the oracle for ``turns_left`` more turns (``None``: no budget).

        Budget wrappers call this after every reset and step, so that on
        slippery ice the oracle maximises success within the budget.  A reset
        forgets it.
        """
        self._turns_left = turns_left

    def oracle_actions(self) -> list[str]:
        """Return the shortest-path moves, or on slippery ice the success-maximising moves."""
        task = self.task
        distance = task.distances[self._position]
        if distance <= 0:
            return []
        moves: Sequence[int] = ()
        if self.slippery and self._turns_left is not None:
            moves = budgeted_oracle(task).best_moves(self._position, self._turns_left)
        if not self.slippery:
            around = grid_neighbours(task.size, task.size)[self._position]
            moves = descending_moves(around, distance, task.distances)
        elif not moves:
            # Untimed, or no move reaches the goal in time: the deadline oracle.
            moves = solve_slippery(task)[1][self._position]
        return [_NAMES[d] for d in moves]

    def oracle_turns(self) -> int | None:
        """Return the shortest-path length to the goal ignoring slides; ``None`` in a hole."""
        distance = self.task.distances[self._position]
        return None if distance < 0 else distance

    def success_probability(self) -> float:
        """Return the oracle's probability of reaching the goal from here.

        With a budget (see :meth:`set_turns_left`): the highest probability
        of reaching it within the turns left, on solid ice 1.0 or 0.0.
        Without: the probability that the untimed oracle ever reaches it (1.0
        on solid ice).
        """
        task = self.task
        if task.tiles[self._position] == "H":
            return 0.0
        if self._turns_left is not None:
            if not self.slippery:
                return float(task.distances[self._position] <= self._turns_left)
            return float(budgeted_oracle(task).table(self._turns_left)[0][self._position])
        if not self.slippery:
            return 1.0
        return solve_slippery(task)[0][self._position]
