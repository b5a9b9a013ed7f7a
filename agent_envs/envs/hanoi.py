"""Hanoi: stack every disk on the target peg, moving one top disk at a time."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from agent_envs.core import TextEnv
from agent_envs.envs.common.image import IMAGE_METADATA, Tile, draw_cells, grid_shape
from wrappers.utils import seeding
from wrappers.utils.validators import check_bool, check_int

__all__ = ["PEG_PAIRS", "HanoiEnv", "HanoiTask", "hanoi_plan", "random_start_positions"]

#: Every (start peg, target peg) pair, 0-based; ``task_id % 6`` picks one.
PEG_PAIRS: tuple[tuple[int, int], ...] = ((0, 2), (0, 1), (1, 0), (1, 2), (2, 0), (2, 1))

#: The goal peg (0-based) of every random-start task.
RANDOM_START_TARGET = 2

_PEG_NAMES = {"1": 0, "2": 1, "3": 2, "a": 0, "b": 1, "c": 2}
_TOKEN = re.compile(r"[a-z]+|\d+")
# Words an agent wraps around the two pegs ("move the top disk from peg A to peg C").
_FILLER = frozenset(
    {"move", "moves", "disk", "disc", "ring", "the", "top", "from", "to", "peg", "onto", "on"}
)
# After "a", these make it an article ("move a disk"), not peg A.
_NOUNS = frozenset({"disk", "disc", "ring", "top"})


@dataclass(frozen=True)
class HanoiTask:
    """One instance: each disk's start peg, and the peg every disk must end on (0-based).

    ``positions[d]`` is the start peg of disk ``d + 1`` (disk 1 is the smallest);
    a peg holds its disks in size order, so the positions are the whole state.
    """

    positions: tuple[int, ...]
    target: int

    @property
    def start(self) -> int | None:
        """The peg of the full starting tower, or ``None`` when the disks start scattered."""
        first = self.positions[0]
        return first if self.positions.count(first) == len(self.positions) else None


@cache
def _random_start_order(n_disks: int) -> np.ndarray:
    # A fixed shuffle of the unsolved states' indices, so that consecutive task
    # ids look random yet any 3**n - 1 of them cover every start exactly once.
    # The seed is arbitrary but part of the task definition: changing it
    # changes every random-start task.
    order = seeding.stream(seeding.HANOI_ORDER, n_disks).permutation(3**n_disks - 1)
    order.flags.writeable = False
    return order


def random_start_positions(n_disks: int, task_id: int) -> tuple[int, ...]:
    """Return the start positions of random-start task ``task_id``.

    The ``3 ** n - 1`` legal states that are not already solved (every disk on
    peg 3 is the one left out) are read as base-3 numbers, disk 1 the lowest
    digit, in a fixed shuffled order; ``task_id`` picks one modulo their count.

    >>> sorted({hanoi_plan(random_start_positions(3, i), 2)[0] for i in range(26)})
    [1, 2, 3, 4, 5, 6, 7]
    """
    index = int(_random_start_order(n_disks)[task_id % (3**n_disks - 1)])
    return tuple(index // 3**disk % 3 for disk in range(n_disks))


def hanoi_plan(positions: tuple[int, ...], target: int) -> tuple[int, tuple[int, int] | None]:
    """Return the fewest moves to stack every disk on ``target``, and the first such move.

    ``positions[d]`` is the peg (0..2) of disk ``d + 1`` (disk 1 is the smallest).
    The largest disk that is not where it must be has to move once, from its peg
    to its goal, and before that every smaller disk must gather on the third peg:
    that third peg becomes the goal of the smaller disks.  Each disk that is off
    its goal costs ``2 ** (d - 1)`` moves (Hinz, 1989), and the smallest such
    disk is free to make the next move.  Returns ``(0, None)`` when solved.

    >>> hanoi_plan((0, 0, 0), 2)
    (7, (0, 2))
    """
    turns, move, goal = 0, None, target
    for disk in range(len(positions), 0, -1):
        peg = positions[disk - 1]
        if peg != goal:
            turns += 1 << (disk - 1)
            move = (peg, goal)
            goal = 3 - peg - goal
    return turns, move


def _format_move(source: int, destination: int) -> str:
    return f"move {source + 1} {destination + 1}"


@cache
def _peg_line(peg: int, disks: tuple[int, ...]) -> str:
    # At most 3 * 2**n distinct lines: rendering each once keeps step cheap.
    return f"Peg {peg + 1}: {' '.join(map(str, disks)) if disks else '(empty)'}"


#: How rgb_array draws the towers: background, pole, base, the goal's base, disks a..l.
TILES: dict[str, Tile] = {
    ".": ((245, 245, 240), None),
    "|": ((120, 100, 80), None),
    "=": ((160, 160, 160), None),
    "G": ((40, 40, 40), None),
    # Disks 1..12, smallest first: distinct hues, so neighbours never look alike.
    **{
        code: (colour, None)
        for code, colour in zip(
            "abcdefghijkl",
            (
                (230, 90, 60),
                (240, 170, 50),
                (120, 180, 60),
                (60, 160, 200),
                (110, 90, 200),
                (200, 80, 160),
                (150, 100, 60),
                (60, 140, 120),
                (220, 130, 120),
                (90, 120, 170),
                (180, 170, 90),
                (140, 140, 140),
            ),
            strict=True,
        )
    },
}


class HanoiEnv(TextEnv[HanoiTask]):
    """Stack ``n`` disks on the target peg, from a full tower or a random legal start.

    ## Description
    The Tower of Hanoi, a planning task with a clean long-horizon dial: the
    shortest solution from a full tower takes ``2 ** n - 1`` moves (7, 15 and 31
    for 3, 4 and 5 disks), and one wrong move costs several to undo.  Disks are
    numbered ``1`` (smallest) to ``n`` (largest); pegs are ``1``, ``2``, ``3``.
    Only the top disk of a peg can move, and never onto a smaller disk.

    ## Action Space
    ``Text``: a source and a destination peg, canonically ``move 1 3`` (move the
    top disk of peg 1 onto peg 3).  Parsing is lenient: ``1 3``, ``1->3``,
    ``13``, ``move disk from 1 to 3``, ``move the top disk from peg A to peg C``
    all work; pegs may be written ``1``/``2``/``3`` or ``A``/``B``/``C``.  The
    two numbers are always pegs, never disks.  A move from an empty peg, onto a
    smaller disk, or from a peg to itself is illegal: it leaves the state
    unchanged and uses up the turn, like anything that cannot be parsed.

    ## Observation Space
    ``Text``: the reset observation states the rules, the goal and the action
    format.  Every observation then shows each peg's disks listed bottom to top
    (``Peg 1: 3 2 1``) and the goal line; a step observation starts with the
    feedback (the disk moved, or why the move was illegal).

    ## Starting State
    Full tower (the default): all ``n`` disks on the start peg.  ``task_id % 6``
    picks the (start, target) pair out of the six ordered pairs of distinct
    pegs, so any six consecutive task ids cover all six instances; the seed
    plays no part.  Every task keeps the headline horizon of ``2 ** n - 1``
    oracle turns.

    Random start (``random_start=True``): the disks start in one of the
    ``3 ** n - 1`` legal states that are not already solved, and the goal is
    peg 3.  ``task_id`` alone picks the state (see :func:`random_start_positions`):
    any ``3 ** n - 1`` consecutive task ids cover every start once.  Oracle
    turns range over ``1 .. 2 ** n - 1``; ``k`` turns away lie ``2 ** b``
    starts, ``b`` the number of one bits of ``k``, so most tasks are long.

    ## Task supply
    Finite, and ``task_supply`` says how large: 6 distinct tasks with a full
    tower, ``3 ** n - 1`` (26, 80, 242 for 3, 4, 5 disks) with a random
    start.  Task ids beyond the supply repeat instances, and the evaluator
    warns when asked for more tasks than that.

    ## Rewards
    ``1.0`` on the step that puts the last disk on the target peg, ``0.0`` otherwise.

    ## Episode End
    ### Termination
    All disks are on the target peg.
    ### Truncation
    Never by the env; use ``wrappers.TurnBudget``.

    ## Information
    ``task_id``, ``success``, ``valid_action``, ``dead_end``.  ``dead_end`` is
    always ``False``: every legal state can still be solved.

    ## Oracle
    ``oracle_turns()`` is exact from *any* legal state, not only the start: the
    largest disk off its goal must move once, after all smaller disks gather on
    the third peg, which makes them a smaller tower with that peg as goal; each
    disk off its goal adds ``2 ** (d - 1)`` moves.  ``oracle_actions()`` is the
    unique optimal next move.  ``admissible_actions()`` lists the legal moves in
    canonical form, in the order of ``action_vocabulary`` (the six
    ``move X Y`` pairs).

    ## Arguments
    ``n_disks`` (int, default 3): the number of disks, 1 to 12.
    ``random_start`` (bool, default False): start from a random legal state
    instead of a full tower.

    ## Version History
    * v0: initial version (full tower); random-start ids added as their own v0.
    """

    action_format = "Reply with a source and a destination peg, for example: move 1 3."
    max_action_length = 128
    action_vocabulary: tuple[str, ...] = tuple(
        _format_move(a, b) for a in range(3) for b in range(3) if a != b
    )
    # A task is arithmetic on task_id: no generator needs building per reset.
    uses_task_rng = False

    metadata = IMAGE_METADATA

    def __init__(
        self, n_disks: int = 3, random_start: bool = False, render_mode: str | None = None
    ) -> None:
        self.n_disks = check_int(n_disks, "n_disks", 1, 12)
        self.random_start = check_bool(random_start, "random_start")
        self.task_supply = 3**n_disks - 1 if random_start else len(PEG_PAIRS)
        super().__init__(render_mode=render_mode)

    def _make_task(self, task_id: int, rng: np.random.Generator | None) -> HanoiTask:
        if self.random_start:
            return HanoiTask(random_start_positions(self.n_disks, task_id), RANDOM_START_TARGET)
        # A fixed cycle rather than a draw: with six instances, drawing would leave
        # some pairs out of a small block of task ids.
        start, target = PEG_PAIRS[task_id % len(PEG_PAIRS)]
        return HanoiTask((start,) * self.n_disks, target)

    def _start(self, task: HanoiTask) -> None:
        self._pegs: list[list[int]] = [[], [], []]
        for disk in range(self.n_disks, 0, -1):
            self._pegs[task.positions[disk - 1]].append(disk)
        self._target = task.target
        # The view's lines; a move re-renders only the two pegs it touched.
        self._lines = [_peg_line(peg, tuple(stack)) for peg, stack in enumerate(self._pegs)]
        self._lines.append(f"Goal: all {self.n_disks} disks on peg {task.target + 1}.")

    def _intro(self) -> str:
        task = self.task
        if self.random_start:
            goal = (
                f"The disks start spread over the pegs as shown; stack all of them on "
                f"peg {task.target + 1}."
            )
        else:
            goal = f"Move the whole tower from peg {task.start + 1} to peg {task.target + 1}."
        return (
            f"Tower of Hanoi with {self.n_disks} disks, numbered 1 (smallest) to "
            f"{self.n_disks} (largest), on pegs 1, 2 and 3. {goal} Each turn, move the top "
            "disk of one peg onto another peg; never put a disk on a smaller one. Pegs list "
            f"their disks from bottom to top. {self.action_format}"
        )

    def _view(self) -> str:
        return "\n".join(self._lines)

    def image_shape(self) -> tuple[int, int, int]:
        return grid_shape(self.n_disks + 1, 3 * (2 * self.n_disks + 1) + 2)

    def _rgb_array(self) -> np.ndarray:
        """Draw the pegs left to right, disk ``k`` as a bar ``2k + 1`` cells wide."""
        n, width = self.n_disks, 2 * self.n_disks + 1
        rows = [["."] * (3 * width + 2) for _ in range(n)]
        base = ["."] * (3 * width + 2)
        for peg, stack in enumerate(self._pegs):
            centre = peg * (width + 1) + n
            for level in range(n):
                row = rows[n - 1 - level]
                if level < len(stack):
                    disk = stack[level]
                    row[centre - disk : centre + disk + 1] = [chr(ord("a") + disk - 1)] * (
                        2 * disk + 1
                    )
                else:
                    row[centre] = "|"
            base[centre - n : centre + n + 1] = ["G" if peg == self._target else "="] * width
        return draw_cells([*rows, base], TILES)

    def compact_view(self) -> dict[str, Any]:
        """Return the encoder settings of the pegs and the goal (``CompactView``)."""
        tower = len(_peg_line(0, tuple(range(self.n_disks, 0, -1))))
        line = max(tower, len(_peg_line(0, ())))
        goal = len(f"Goal: all {self.n_disks} disks on peg 3.")
        return {"view_only": True, "keep": "head", "charset": "0123456789\n",
                "max_length": 3 * (line + 1) + goal}  # fmt: skip

    def _parse(self, action: str) -> tuple[int, int] | None:
        tokens = _TOKEN.findall(action)
        # "a disk" is an article, not peg A.
        words = [
            token
            for index, token in enumerate(tokens)
            if token not in _FILLER
            and not (token == "a" and index + 1 < len(tokens) and tokens[index + 1] in _NOUNS)
        ]
        if len(words) == 1 and len(words[0]) == 2:  # "13"
            words = list(words[0])
        if len(words) != 2 or not all(word in _PEG_NAMES for word in words):
            return None
        return _PEG_NAMES[words[0]], _PEG_NAMES[words[1]]

    def _apply(self, move: tuple[int, int]) -> tuple[str, bool]:
        source, destination = move
        if source == destination:
            return f"Illegal move: source and destination are both peg {source + 1}.", False
        from_stack, to_stack = self._pegs[source], self._pegs[destination]
        if not from_stack:
            return f"Illegal move: peg {source + 1} is empty.", False
        disk = from_stack[-1]
        if to_stack and to_stack[-1] < disk:
            return (
                f"Illegal move: disk {disk} cannot go on top of the smaller disk "
                f"{to_stack[-1]} on peg {destination + 1}."
            ), False
        to_stack.append(from_stack.pop())
        self._lines[source] = _peg_line(source, tuple(from_stack))
        self._lines[destination] = _peg_line(destination, tuple(to_stack))
        feedback = f"Moved disk {disk} from peg {source + 1} to peg {destination + 1}."
        if self._is_success():
            feedback += f" Solved: all {self.n_disks} disks are on peg {destination + 1}."
        return feedback, True

    def _is_success(self) -> bool:
        return len(self._pegs[self._target]) == self.n_disks

    def _positions(self) -> tuple[int, ...]:
        positions = [0] * self.n_disks
        for peg, stack in enumerate(self._pegs):
            for disk in stack:
                positions[disk - 1] = peg
        return tuple(positions)

    def admissible_actions(self) -> list[str]:
        """Every legal move now, as ``move X Y``."""
        pegs = self._pegs
        return [
            _format_move(source, destination)
            for source in range(3)
            for destination in range(3)
            if source != destination
            and pegs[source]
            and (not pegs[destination] or pegs[destination][-1] > pegs[source][-1])
        ]

    def oracle_actions(self) -> list[str]:
        """The optimal next move (it is unique), or ``[]`` once solved."""
        _, move = hanoi_plan(self._positions(), self.task.target)
        return [] if move is None else [_format_move(*move)]

    def oracle_turns(self) -> int:
        """The fewest moves from the current state to success."""
        return hanoi_plan(self._positions(), self.task.target)[0]
