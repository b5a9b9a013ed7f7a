"""Sokoban rooms: generation by reverse play, and exact searches over them.

A room is a set of bitmasks over the cells ``row * width + col``; its outer
ring is wall, which keeps every neighbour index inside the grid and lets a
flood fill shift whole rows without wrapping.  Everything here is a pure
function of the room, memoised on the :class:`SokobanTask` where it pays.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from wrappers.errors import InvalidValue

__all__ = [
    "MAX_SIDE",
    "MIN_SIDE",
    "PLAYER_BITS",
    "SokobanTask",
    "cells",
    "distance_table",
    "generate",
    "is_solvable",
    "neighbour_steps",
    "render",
]

#: A distance-table key is ``boxes << PLAYER_BITS | player``; rooms are at most
#: 16x16, so a cell index fits in 8 bits.
PLAYER_BITS = 8
_PLAYER_MASK = (1 << PLAYER_BITS) - 1
_LEGEND_CHARS = frozenset("#_OXVPS")
#: Room sides allowed, outer wall included.
MIN_SIDE, MAX_SIDE = 5, 16
# Reverse play stops once a lower bound on the moves to solve the room reaches
# this (or a quarter of the interior, in tiny rooms): no task is solved at start
# or within a couple of moves.
_MIN_MOVES = 4
_MAX_ATTEMPTS = 200


@dataclass(eq=False)
class SokobanTask:
    """One room and its starting position, as bitmasks over ``row * width + col``."""

    width: int
    height: int
    floor: int
    targets: int
    boxes: int
    player: int
    #: Static rendering: one character per cell plus a newline per row.
    base_view: tuple[str, ...] = field(repr=False)
    # Memos filled on demand (plain containers, so tasks pickle).
    #: (boxes, player-reachable region) -> whether the targets can still be reached.
    solvable: dict[tuple[int, int], bool] = field(default_factory=dict, repr=False)
    #: ``boxes << PLAYER_BITS | player`` -> fewest moves to success, for every solvable state.
    distances: dict[int, int] | None = field(default=None, repr=False)
    #: Per cell: fewest pushes for a lone box to reach a target, -1 if it never can.
    box_distances: tuple[int, ...] | None = field(default=None, repr=False)

    @classmethod
    def from_text(cls, layout: str) -> SokobanTask:
        """Build a task from a grid drawn in the observation legend (``#_OXVPS``).

        The outer ring must be wall, there must be one player and as many boxes
        as targets.  Nothing checks that the room is solvable.

        >>> task = SokobanTask.from_text("#####\\n#PXO#\\n#___#\\n#___#\\n#####")
        >>> render(task, task.boxes, task.player).splitlines()[1]
        '#PXO#'
        """
        rows = [line.strip() for line in layout.strip().splitlines()]
        height, width = len(rows), len(rows[0]) if rows else 0
        if not (MIN_SIDE <= width <= MAX_SIDE and MIN_SIDE <= height <= MAX_SIDE):
            raise InvalidValue(
                f"A room must be {MIN_SIDE} to {MAX_SIDE} cells wide and high, "
                f"got {width}x{height}."
            )
        floor = targets = boxes = 0
        players = []
        for row, line in enumerate(rows):
            if len(line) != width:
                raise InvalidValue(f"Row {row} has {len(line)} cells; every row needs {width}.")
            for col, char in enumerate(line):
                if char not in _LEGEND_CHARS:
                    raise InvalidValue(
                        f"Unknown cell {char!r} at row {row}, column {col}; use one of #_OXVPS."
                    )
                if char == "#":
                    continue
                if row in (0, height - 1) or col in (0, width - 1):
                    raise InvalidValue(
                        f"The outer ring must be wall '#' (row {row}, column {col})."
                    )
                cell = row * width + col
                floor |= 1 << cell
                targets |= (char in "OVS") << cell
                boxes |= (char in "XV") << cell
                if char in "PS":
                    players.append(cell)
        if len(players) != 1:
            raise InvalidValue(f"A room needs exactly one player (P or S), got {len(players)}.")
        if not boxes or boxes.bit_count() != targets.bit_count():
            raise InvalidValue(
                f"A room needs at least one box and as many boxes as targets, got "
                f"{boxes.bit_count()} boxes and {targets.bit_count()} targets."
            )
        return cls(
            width, height, floor, targets, boxes, players[0],
            base_view=_base_view(width, height, floor, targets),
        )  # fmt: skip


def cells(mask: int) -> Iterator[int]:
    """Yield the indices of the set bits of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def flood(start: int, free: int, width: int) -> int:
    """Return the region of ``free`` cells connected to ``start`` (a bitmask)."""
    # The outer ring is never free, so shifting by one column cannot wrap rows.
    region = 1 << start
    while True:
        grown = (region | region << 1 | region >> 1 | region << width | region >> width) & free
        if grown == region:
            return region
        region = grown


def neighbour_steps(width: int) -> tuple[int, int, int, int]:
    """Return the cell-index steps for up, down, left and right."""
    return (-width, width, -1, 1)


def generate(rng: np.random.Generator, width: int, height: int, num_boxes: int) -> SokobanTask:
    """Build a solvable room by reverse play from a solved state."""
    interior = [row * width + col for row in range(1, height - 1) for col in range(1, width - 1)]
    deltas = neighbour_steps(width)
    required = min(_MIN_MOVES, len(interior) // 4)
    for attempt in range(_MAX_ATTEMPTS):
        # Late attempts use an open room, where reverse play always gets going.
        max_walls = len(interior) // 5 if attempt < _MAX_ATTEMPTS // 2 else 0
        floor = _carve(rng, interior, width, int(rng.integers(0, max_walls + 1)))
        free = [cell for cell in interior if floor >> cell & 1]
        order = rng.permutation(len(free)).tolist()
        target_cells = [free[i] for i in order[:num_boxes]]
        targets = sum(1 << cell for cell in target_cells)
        boxes, player = targets, free[order[num_boxes]]
        walk = int(rng.integers(len(interior), 4 * len(interior) + 1))
        # Extend the walk a few times before giving up on this room.
        for _ in range(4):
            rolls = rng.random(2 * walk)
            moves = (rolls[:walk] * 4).astype(np.int64).tolist()
            pulls = (rolls[walk:] < 0.75).tolist()
            for move, pull in zip(moves, pulls, strict=True):
                step = deltas[move]
                ahead, behind = player + step, player - step
                if not floor >> ahead & 1 or boxes >> ahead & 1:
                    continue
                if pull and boxes >> behind & 1:
                    boxes ^= (1 << behind) | (1 << player)
                player = ahead
            if _moves_lower_bound(boxes, player, target_cells, width) >= required:
                task = SokobanTask(
                    width, height, floor, targets, boxes, player,
                    base_view=_base_view(width, height, floor, targets),
                )  # fmt: skip
                # Solvable by construction, which spares the first dead-end check a search.
                task.solvable[boxes, flood(player, floor & ~boxes, width)] = True
                return task
    raise RuntimeError(  # pragma: no cover - open rooms of the allowed sizes always succeed
        f"Could not generate a {width}x{height} Sokoban room with {num_boxes} boxes."
    )


def _carve(rng: np.random.Generator, interior: list[int], width: int, walls: int) -> int:
    """Return the interior floor mask with up to ``walls`` inner walls that keep it connected."""
    floor = sum(1 << cell for cell in interior)
    placed = 0
    for index in rng.permutation(len(interior)).tolist():
        if placed == walls:
            break
        candidate = floor & ~(1 << interior[index])
        lowest = (candidate & -candidate).bit_length() - 1
        if flood(lowest, candidate, width) == candidate:
            floor, placed = candidate, placed + 1
    return floor


def _moves_lower_bound(boxes: int, player: int, target_cells: list[int], width: int) -> int:
    """Return a lower bound on the moves to solve: pushes, plus the walk to the first box.

    Each box needs at least its Manhattan distance to the nearest target in
    pushes, and the player must first walk next to a box that is off target.
    """
    pushes, walk = 0, width * width
    for cell in cells(boxes):
        distance = min(_manhattan(cell, target, width) for target in target_cells)
        if distance:
            pushes += distance
            walk = min(walk, _manhattan(cell, player, width) - 1)
    return pushes + walk if pushes else 0


def _manhattan(a: int, b: int, width: int) -> int:
    return abs(a // width - b // width) + abs(a % width - b % width)


def render(task: SokobanTask, boxes: int, player: int) -> str:
    """Draw the room with ``boxes`` and ``player``, one line per row, top to bottom."""
    chars = list(task.base_view)
    width, targets = task.width, task.targets
    # Each row adds one newline, hence the `cell // width` offset.
    for cell in cells(boxes):
        chars[cell + cell // width] = "V" if targets >> cell & 1 else "X"
    chars[player + player // width] = "S" if targets >> player & 1 else "P"
    return "".join(chars)


def _base_view(width: int, height: int, floor: int, targets: int) -> tuple[str, ...]:
    chars: list[str] = []
    for row in range(height):
        for col in range(width):
            cell = row * width + col
            chars.append("O" if targets >> cell & 1 else "_" if floor >> cell & 1 else "#")
        chars.append("\n")
    chars.pop()
    return tuple(chars)


def _box_distances(task: SokobanTask) -> tuple[int, ...]:
    """Per cell, the fewest pushes for a lone box to reach a target (-1: never)."""
    if task.box_distances is None:
        floor, deltas = task.floor, neighbour_steps(task.width)
        distance = [-1] * (task.width * task.height)
        frontier = list(cells(task.targets))
        for cell in frontier:
            distance[cell] = 0
        pushes = 0
        while frontier:
            pushes += 1
            following = []
            for cell in frontier:
                for step in deltas:
                    # The box came from `origin`, pushed by a player standing behind it.
                    origin = cell - step
                    if distance[origin] < 0 and floor >> origin & 1 and floor >> origin - step & 1:
                        distance[origin] = pushes
                        following.append(origin)
            frontier = following
        task.box_distances = tuple(distance)
    return task.box_distances


def is_solvable(task: SokobanTask, boxes: int, player: int) -> bool:
    """Return whether all boxes can still reach the targets (exact, memoised on the task)."""
    if task.distances is not None:
        return (boxes << PLAYER_BITS | player) in task.distances
    box_distance = _box_distances(task)
    if any(box_distance[cell] < 0 for cell in cells(boxes)):
        return False
    floor, width, deltas, memo = task.floor, task.width, neighbour_steps(task.width), task.solvable
    root = (boxes, flood(player, floor & ~boxes, width))
    known = memo.get(root)
    if known is not None:
        return known
    # Greedy best-first over push states: one state per (boxes, player region),
    # which is all that matters for solvability.
    parents: dict[tuple[int, int], tuple[int, int] | None] = {root: None}
    heap = [(0, 0, root)]
    pushed = 0
    while heap:
        state = heapq.heappop(heap)[2]
        verdict = memo.get(state)
        if verdict is False:
            continue
        if verdict or state[0] == task.targets:
            # Every state on the path to a solution is solvable.
            node: tuple[int, int] | None = state
            while node is not None:
                memo[node] = True
                node = parents[node]
            return True
        current, reach = state
        free = floor & ~current
        for cell in cells(current):
            for step in deltas:
                dest = cell + step
                if reach >> cell - step & 1 and free >> dest & 1 and box_distance[dest] >= 0:
                    moved = current ^ (1 << cell) ^ (1 << dest)
                    child = (moved, flood(cell, floor & ~moved, width))
                    if child not in parents:
                        parents[child] = state
                        pushed += 1
                        cost = sum(box_distance[c] for c in cells(moved))
                        heapq.heappush(heap, (cost, pushed, child))
    # Nothing reachable from a dead state can be solvable either.
    for state in parents:
        memo[state] = False
    return False


def distance_table(task: SokobanTask) -> dict[int, int]:
    """Return fewest moves to success for every solvable state (BFS back from the goal)."""
    if task.distances is None:
        floor, targets, deltas = task.floor, task.targets, neighbour_steps(task.width)
        frontier = [targets << PLAYER_BITS | cell for cell in cells(floor & ~targets)]
        distances = dict.fromkeys(frontier, 0)
        moves = 0
        while frontier:
            moves += 1
            following = []
            for state in frontier:
                player, boxes = state & _PLAYER_MASK, state >> PLAYER_BITS
                for step in deltas:
                    # Undo a move of `step` that ended at `player` ...
                    origin = player - step
                    if not floor >> origin & 1 or boxes >> origin & 1:
                        continue
                    ahead = player + step
                    before = [boxes << PLAYER_BITS | origin]  # a plain walk
                    if boxes >> ahead & 1:  # or a push of the box now ahead
                        before.append(
                            (boxes ^ (1 << ahead) ^ (1 << player)) << PLAYER_BITS | origin
                        )
                    for key in before:
                        if key not in distances:
                            distances[key] = moves
                            following.append(key)
            frontier = following
        task.distances = distances
    return task.distances
