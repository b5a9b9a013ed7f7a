"""The Household world: what a home can hold, and how one is generated.

A home is a list of numbered receptacles (``cabinet 2``, ``fridge 1``) and a
list of numbered objects (``apple 1``) that start inside them, plus one
``desklamp 1`` standing on a desk, side table or dresser.  :func:`generate_home`
builds one home and its goal from a task generator; :func:`names_of` lists
every name a home of a size can have, from which ``commands`` builds
the fixed command vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ALFWORLD_TASKS",
    "CLEAN",
    "COLD",
    "HOT",
    "RECEPTACLE_TYPES",
    "SIZES",
    "Home",
    "HomeSize",
    "generate_home",
    "listing",
    "names_of",
]

#: Object state bits.  Heating clears ``COLD`` and cooling clears ``HOT``.
CLEAN, HOT, COLD = 1, 2, 4

#: ALFWorld's six task kinds as ``(objects, treatment)``: pick and place,
#: clean/heat/cool then place, examine under the desklamp, two objects to one
#: receptacle.  Larger homes add multi-object tasks with a treatment
#: (``"any"`` draws clean, heat or cool) and three-object tasks.
ALFWORLD_TASKS = ((1, ""), (1, "clean"), (1, "heat"), (1, "cool"), (1, "lamp"), (2, ""))

#: Receptacle type -> (opens and closes, preposition), in listing order.
RECEPTACLE_TYPES: dict[str, tuple[bool, str]] = {
    "cabinet": (True, "in"),
    "drawer": (True, "in"),
    "countertop": (False, "on"),
    "shelf": (False, "on"),
    "fridge": (True, "in"),
    "microwave": (True, "in"),
    "sinkbasin": (False, "in"),
    "stoveburner": (False, "on"),
    "coffeemachine": (False, "on"),
    "diningtable": (False, "on"),
    "garbagecan": (False, "in"),
    "desk": (False, "on"),
    "sidetable": (False, "on"),
    "dresser": (False, "on"),
    "bed": (False, "on"),
    "armchair": (False, "on"),
    "safe": (True, "in"),
}
LAMP_HOLDERS = ("desk", "sidetable", "dresser")
#: The appliance each treatment needs; every home has exactly one of each.
APPLIANCE = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}
_TREATED_WITH = {appliance: word for word, appliance in APPLIANCE.items()}
_STATE_BIT = {"clean": CLEAN, "heat": HOT, "cool": COLD}
_GOAL_ADJECTIVE = {"clean": "clean", "heat": "hot", "cool": "cool"}

_FOOD = ("countertop", "fridge", "diningtable", "microwave", "garbagecan", "sinkbasin")
_CUTLERY = ("countertop", "drawer", "diningtable", "sinkbasin")
#: Object type -> (plural, receptacle types it plausibly starts in).
OBJECT_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "apple": ("apples", _FOOD),
    "potato": ("potatoes", _FOOD),
    "tomato": ("tomatoes", _FOOD),
    "egg": ("eggs", _FOOD),
    "bread": ("breads", ("countertop", "fridge", "diningtable", "cabinet", "microwave")),
    "lettuce": ("lettuces", ("countertop", "fridge", "diningtable", "sinkbasin")),
    "mug": ("mugs", ("countertop", "cabinet", "coffeemachine", "sinkbasin", "shelf", "desk")),
    "cup": ("cups", ("countertop", "cabinet", "microwave", "fridge", "sinkbasin", "shelf")),
    "plate": ("plates", ("countertop", "cabinet", "fridge", "diningtable", "sinkbasin")),
    "bowl": ("bowls", ("countertop", "cabinet", "fridge", "diningtable", "shelf")),
    "pan": ("pans", ("countertop", "stoveburner", "cabinet", "diningtable")),
    "knife": ("knives", _CUTLERY),
    "fork": ("forks", _CUTLERY),
    "spoon": ("spoons", _CUTLERY),
    "book": ("books", ("desk", "sidetable", "dresser", "shelf", "bed", "drawer", "armchair")),
    "keychain": ("keychains", ("dresser", "sidetable", "drawer", "safe", "shelf", "desk")),
    "cellphone": ("cellphones", ("desk", "bed", "sidetable", "dresser", "drawer", "armchair")),
    "pen": ("pens", ("desk", "drawer", "sidetable", "shelf", "dresser")),
    "creditcard": ("creditcards", ("desk", "drawer", "dresser", "safe", "armchair", "sidetable")),
    "alarmclock": ("alarmclocks", ("desk", "sidetable", "dresser", "shelf")),
}
_ALL_TYPES = tuple(OBJECT_TYPES)
#: Which object types each treatment can be asked about.
TARGETS: dict[str, tuple[str, ...]] = {
    "": _ALL_TYPES,
    "clean": _ALL_TYPES[:14],
    "heat": ("apple", "potato", "tomato", "egg", "bread", "mug", "cup", "plate"),
    "cool": _ALL_TYPES[:11],
    "lamp": ("book", "keychain", "cellphone", "pen", "creditcard", "alarmclock", "mug", "bowl"),
}
_EXTRAS = (
    "stoveburner", "coffeemachine", "diningtable", "garbagecan", "desk",
    "sidetable", "dresser", "bed", "armchair", "safe",
)  # fmt: skip
_APPLIANCES = (("fridge", 1, 1), ("microwave", 1, 1), ("sinkbasin", 1, 1))


@dataclass(frozen=True)
class HomeSize:
    """How big a home is: receptacle counts, extra furniture, distractors, targets.

    Attributes:
        name: the size's name (``small``, ``medium``, ``large``).
        core: ``(type, min, max)`` counts of the receptacles every home has.
        extras: optional furniture types, each present at most once.
        extra_count: ``(min, max)`` number of extras drawn.
        distractors: ``(min, max)`` objects unrelated to the task (at most two per type).
        single_targets: ``(min, max)`` objects of the task's type, one-object tasks.
        pair_targets: ``(min, max)`` objects of the task's type, two-object tasks
            (three-object tasks have exactly three).
        tasks: the ``(objects, treatment)`` menu tasks are drawn from uniformly.
    """

    name: str
    core: tuple[tuple[str, int, int], ...]
    extras: tuple[str, ...]
    extra_count: tuple[int, int]
    distractors: tuple[int, int]
    single_targets: tuple[int, int]
    pair_targets: tuple[int, int]
    tasks: tuple[tuple[int, str], ...]

    def max_count(self, rtype: str) -> int:
        """Return the most receptacles of ``rtype`` a home of this size can have."""
        for name, _low, high in self.core:
            if name == rtype:
                return high
        return 1 if rtype in self.extras or rtype in LAMP_HOLDERS else 0

    @property
    def max_instances(self) -> int:
        """The most objects of one type a home of this size can hold."""
        most = max(count for count, _treatment in self.tasks)
        return max(
            self.single_targets[1], self.pair_targets[1], most, 2 if self.distractors[1] else 0
        )


SIZES: dict[str, HomeSize] = {
    "small": HomeSize(
        "small", (("cabinet", 1, 2), ("drawer", 0, 1), ("countertop", 1, 1), *_APPLIANCES),
        (), (0, 0), (0, 0), (1, 2), (2, 2), ALFWORLD_TASKS,
    ),
    "medium": HomeSize(
        "medium",
        (("cabinet", 2, 4), ("drawer", 1, 3), ("countertop", 1, 2), ("shelf", 0, 2), *_APPLIANCES),
        _EXTRAS, (1, 3), (4, 8), (1, 2), (2, 3), (*ALFWORLD_TASKS, (2, "any")),
    ),
    "large": HomeSize(
        "large",
        (("cabinet", 4, 8), ("drawer", 2, 5), ("countertop", 2, 3), ("shelf", 1, 3), *_APPLIANCES),
        _EXTRAS, (4, 7), (10, 18), (1, 3), (2, 3),
        (*ALFWORLD_TASKS, (2, "any"), (3, ""), (3, "any")),
    ),
}  # fmt: skip


def _article(name: str) -> str:
    return "an" if name[0] in "aeiou" else "a"


def listing(items: list[str]) -> str:
    """ALFWorld's way of listing things: ``a, b, and c``; ``nothing`` when empty."""
    if not items:
        return "nothing"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + ", and " + items[-1]


_NAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def names_of(size: HomeSize) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return every receptacle name and every object name a home of ``size`` can have."""
    cached = _NAMES.get(size.name)
    if cached is None:
        receptacles = tuple(
            f"{rtype} {number}"
            for rtype in RECEPTACLE_TYPES
            for number in range(1, size.max_count(rtype) + 1)
        )
        objects = tuple(
            f"{otype} {number}"
            for otype in OBJECT_TYPES
            for number in range(1, size.max_instances + 1)
        )
        cached = _NAMES[size.name] = (receptacles, objects)
    return cached


@dataclass(frozen=True)
class Home:
    """One task: the home's layout, where things start, and the goal.

    Receptacle and object indices are local to the home.  The goal is
    ``count`` objects of ``target_type`` (the ``targets``) with the state bits
    ``need`` in one receptacle of ``dest_type``, or, when ``treatment`` is
    ``"lamp"``, a target held at the lamp's receptacle ``lamp`` while the lamp
    is on.  ``kind`` labels the task (``pick``, ``clean``, ``two-hot``, ...).
    ``memo`` caches the planner's answers per state (plain tuples, so the home
    stays picklable).
    """

    kind: str
    count: int
    treatment: str
    target_type: str
    dest_type: str | None
    goal: str
    rec_names: tuple[str, ...]
    rec_types: tuple[str, ...]
    openable: tuple[bool, ...]
    preps: tuple[str, ...]
    obj_names: tuple[str, ...]
    obj_start: tuple[int, ...]
    targets: tuple[int, ...]
    is_dest: tuple[bool, ...]
    tool: int
    lamp: int
    need: int
    treats: tuple[str, ...]
    rec_local: dict[int, int]
    obj_local: dict[int, int]
    room: str
    obj_phrases: tuple[str, ...]
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)


class _Dice:
    """Uniform draws from one batched ``Generator.random`` call (many scalar calls are slow)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._buffer: list[float] = []
        self._next = 0

    def below(self, n: int) -> int:
        if self._next == len(self._buffer):
            self._buffer = self._rng.random(128).tolist()
            self._next = 0
        value = self._buffer[self._next]
        self._next += 1
        return min(int(value * n), n - 1)

    def between(self, low: int, high: int) -> int:
        return low + self.below(high - low + 1)

    def pick(self, items: tuple[str, ...] | list[str] | list[int]) -> Any:
        return items[self.below(len(items))]

    def shuffled(self, items: tuple[str, ...]) -> list[str]:
        out = list(items)
        for i in range(len(out) - 1, 0, -1):
            j = self.below(i + 1)
            out[i], out[j] = out[j], out[i]
        return out


_NUMBER_WORDS = {2: "two", 3: "three"}


def _goal_text(count: int, treatment: str, target: str, dest: str | None) -> str:
    if treatment == "lamp":
        return f"look at {_article(target)} {target} under the desklamp."
    prep = RECEPTACLE_TYPES[dest][1] if dest else "in"
    adjective = _GOAL_ADJECTIVE.get(treatment, "")
    if count > 1:
        words = f"{adjective} {OBJECT_TYPES[target][0]}" if adjective else OBJECT_TYPES[target][0]
        return f"put {_NUMBER_WORDS[count]} {words} {prep} {dest}."
    words = f"{adjective} {target}" if adjective else target
    return f"put {_article(words)} {words} {prep} {dest}."


def _label(count: int, treatment: str) -> str:
    if count == 1:
        return treatment or "pick"
    return _NUMBER_WORDS[count] + (f"-{treatment}" if treatment else "")


def generate_home(size: HomeSize, rng: np.random.Generator) -> Home:
    """Build one home and task from ``rng`` (deterministic in the generator's state)."""
    dice = _Dice(rng)
    rec_types, lamp_type = _furnish(size, dice)
    rec_names = tuple(
        f"{rtype} {number}"
        for rtype in RECEPTACLE_TYPES
        for number in range(1, rec_types.count(rtype) + 1)
    )
    by_type: dict[str, list[int]] = {}
    for index, rtype in enumerate(rec_types):
        by_type.setdefault(rtype, []).append(index)
    count, treatment, target, dest, sources = _choose_task(size, dice, by_type)
    placed = _place_objects(size, dice, by_type, count, target, sources)
    numbers: dict[str, int] = {}
    obj_names: list[str] = []
    for otype, _rec in placed:
        numbers[otype] = numbers.get(otype, 0) + 1
        obj_names.append(f"{otype} {numbers[otype]}")
    all_receptacles, all_objects = names_of(size)
    rec_global = {name: index for index, name in enumerate(all_receptacles)}
    obj_global = {name: index for index, name in enumerate(all_objects)}
    phrases = tuple(f"{_article(name)} {name}" for name in rec_names)
    return Home(
        kind=_label(count, treatment),
        count=count,
        treatment=treatment,
        target_type=target,
        dest_type=dest,
        goal=_goal_text(count, treatment, target, dest),
        rec_names=rec_names,
        rec_types=tuple(rec_types),
        openable=tuple(RECEPTACLE_TYPES[rtype][0] for rtype in rec_types),
        preps=tuple(RECEPTACLE_TYPES[rtype][1] for rtype in rec_types),
        obj_names=tuple(obj_names),
        obj_start=tuple(rec for _otype, rec in placed),
        targets=tuple(i for i, (otype, _rec) in enumerate(placed) if otype == target),
        is_dest=tuple(rtype == dest for rtype in rec_types),
        tool=by_type[APPLIANCE[treatment]][0] if treatment in APPLIANCE else -1,
        lamp=by_type[lamp_type][0],
        need=_STATE_BIT.get(treatment, 0),
        treats=tuple(_TREATED_WITH.get(rtype, "") for rtype in rec_types),
        rec_local={rec_global[name]: i for i, name in enumerate(rec_names)},
        obj_local={obj_global[name]: i for i, name in enumerate(obj_names)},
        room=f"Looking quickly around you, you see {listing(list(phrases))}.",
        obj_phrases=tuple(f"{_article(name)} {name}" for name in obj_names),
    )


def _furnish(size: HomeSize, dice: _Dice) -> tuple[list[str], str]:
    """Draw the receptacles (their types, grouped in catalogue order) and the lamp's holder type."""
    counts = {rtype: dice.between(low, high) for rtype, low, high in size.core}
    for rtype in dice.shuffled(size.extras)[: dice.between(*size.extra_count)]:
        counts[rtype] = 1
    holders = [rtype for rtype in LAMP_HOLDERS if counts.get(rtype)]
    if not holders:
        holders = [dice.pick(LAMP_HOLDERS)]
        counts[holders[0]] = 1
    lamp_type = dice.pick(holders)
    return [rtype for rtype in RECEPTACLE_TYPES for _ in range(counts.get(rtype, 0))], lamp_type


def _choose_task(
    size: HomeSize, dice: _Dice, by_type: dict[str, list[int]]
) -> tuple[int, str, str, str | None, list[str]]:
    """Draw the task: count, treatment, target type, destination type, and where targets start."""
    count, treatment = dice.pick(size.tasks)
    if treatment == "any":
        treatment = dice.pick(("clean", "heat", "cool"))
    target = dice.pick(TARGETS[treatment])
    places = [rtype for rtype in OBJECT_TYPES[target][1] if rtype in by_type] or ["countertop"]
    if treatment == "lamp":
        return count, treatment, target, None, places
    banned = ("garbagecan", APPLIANCE[treatment]) if treatment in APPLIANCE else ()
    dest = dice.pick([p for p in places if p not in banned] or ["countertop"])
    # No object of the target type starts in the destination: the goal starts unmet.
    sources = [p for p in places if p != dest] or [
        p for p in ("countertop", "cabinet") if p != dest
    ]
    return count, treatment, target, dest, sources


def _place_objects(
    size: HomeSize,
    dice: _Dice,
    by_type: dict[str, list[int]],
    count: int,
    target: str,
    sources: list[str],
) -> list[tuple[str, int]]:
    """Draw the targets and distractors and their receptacles, in catalogue order of type."""
    low, high = {1: size.single_targets, 2: size.pair_targets}.get(count, (count, count))
    placed: list[tuple[str, int]] = [
        (target, dice.pick(by_type[dice.pick(sources)])) for _ in range(dice.between(low, high))
    ]
    others = [otype for otype in OBJECT_TYPES if otype != target]
    used: dict[str, int] = {}
    for _ in range(dice.between(*size.distractors)):
        otype = dice.pick(others)
        used[otype] = used.get(otype, 0) + 1
        if used[otype] == 2:  # at most two of a distractor type
            others.remove(otype)
        spots = [rtype for rtype in OBJECT_TYPES[otype][1] if rtype in by_type] or ["countertop"]
        placed.append((otype, dice.pick(by_type[dice.pick(spots)])))
    # Objects are numbered per type in catalogue order.
    order = {otype: index for index, otype in enumerate(OBJECT_TYPES)}
    placed.sort(key=lambda item: order[item[0]])
    return placed
