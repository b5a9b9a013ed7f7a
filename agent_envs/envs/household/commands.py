"""Household's command set: the fixed vocabulary of a home size and the lenient parser.

Every command the family can accept for a home size is listed once, in a
fixed order, whatever the task: that list is the env's ``action_vocabulary``.
The parser looks a normalised action up in a table built from the same list,
after folding the leniencies (``in``/``on``/``in/on``, ``the``, unnumbered
names of the one fridge, microwave, sink basin and desklamp, ``pick up``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent_envs.envs.household.world import RECEPTACLE_TYPES, HomeSize, names_of

__all__ = ["APPLIANCE_OF", "CommandSet", "Verb", "command_set", "parse"]

#: The appliance that each treatment needs (there is exactly one in every home).
APPLIANCE_OF = {"clean": "sinkbasin 1", "heat": "microwave 1", "cool": "fridge 1"}


class Verb:
    """Command codes shared by the parser table and the env."""

    GO, OPEN, CLOSE, TAKE, PUT, CLEAN, HEAT, COOL, USE = range(9)
    LOOK, INVENTORY, EXAMINE_RECEPTACLE, EXAMINE_OBJECT, EXAMINE_LAMP = range(9, 14)
    #: A treatment with the wrong appliance (``heat apple 1 with fridge 1``).
    WRONG_APPLIANCE = 14


@dataclass(frozen=True)
class CommandSet:
    """Every command a home size can produce, and the parser's lookup table.

    Attributes:
        receptacles: every receptacle name a home of this size can have.
        objects: every object name a home of this size can have.
        vocabulary: the canonical commands (fixed order, identical for every task).
        table: normalised command text -> ``(verb, a, b)`` with indices into
            ``receptacles``/``objects``.  ``put`` keys always use ``in``.
    """

    receptacles: tuple[str, ...]
    objects: tuple[str, ...]
    vocabulary: tuple[str, ...]
    table: dict[str, tuple[int, int, int]]


_COMMAND_SETS: dict[str, CommandSet] = {}


def command_set(size: HomeSize) -> CommandSet:
    """Return (and cache) the :class:`CommandSet` of ``size``."""
    cached = _COMMAND_SETS.get(size.name)
    if cached is not None:
        return cached
    receptacles, objects = names_of(size)
    rec_index = {name: index for index, name in enumerate(receptacles)}
    vocabulary: list[str] = ["look", "inventory"]
    table: dict[str, tuple[int, int, int]] = {
        "look": (Verb.LOOK, -1, -1),
        "inventory": (Verb.INVENTORY, -1, -1),
    }

    def add(text: str, move: tuple[int, int, int], key: str | None = None) -> None:
        vocabulary.append(text)
        table[key or text] = move

    for r, rname in enumerate(receptacles):
        add(f"go to {rname}", (Verb.GO, r, -1))
    for verb, word in ((Verb.OPEN, "open"), (Verb.CLOSE, "close")):
        for r, rname in enumerate(receptacles):
            if RECEPTACLE_TYPES[rname.split()[0]][0]:
                add(f"{word} {rname}", (verb, r, -1))
    for o, oname in enumerate(objects):
        for r, rname in enumerate(receptacles):
            add(f"take {oname} from {rname}", (Verb.TAKE, o, r))
    for o, oname in enumerate(objects):
        for r, rname in enumerate(receptacles):
            prep = RECEPTACLE_TYPES[rname.split()[0]][1]
            add(f"put {oname} {prep} {rname}", (Verb.PUT, o, r), f"put {oname} in {rname}")
    for verb, word in ((Verb.CLEAN, "clean"), (Verb.HEAT, "heat"), (Verb.COOL, "cool")):
        appliance = APPLIANCE_OF[word]
        for o, oname in enumerate(objects):
            add(f"{word} {oname} with {appliance}", (verb, o, rec_index[appliance]))
    add("use desklamp 1", (Verb.USE, -1, -1))
    for r, rname in enumerate(receptacles):
        add(f"examine {rname}", (Verb.EXAMINE_RECEPTACLE, r, -1))
    for o, oname in enumerate(objects):
        add(f"examine {oname}", (Verb.EXAMINE_OBJECT, o, -1))
    add("examine desklamp 1", (Verb.EXAMINE_LAMP, -1, -1))
    commands = CommandSet(receptacles, objects, tuple(vocabulary), table)
    _COMMAND_SETS[size.name] = commands
    return commands


_ARTICLES = frozenset(("the", "a", "an"))
_PREPOSITIONS = (" in/on ", " into ", " onto ", " on ")
#: Names that exist exactly once in every home, so their number may be left out.
_UNIQUE = {
    "fridge": "fridge 1",
    "microwave": "microwave 1",
    "sinkbasin": "sinkbasin 1",
    "sink": "sinkbasin 1",
    "desklamp": "desklamp 1",
    "lamp": "desklamp 1",
}
_TREATMENT = re.compile(r"^(clean|heat|cool) .+ with (.+)$")
_TREATMENTS = ("clean", "heat", "cool")


def _one_preposition(text: str) -> str:
    if text.startswith("put "):
        for prep in _PREPOSITIONS:
            if prep in text:
                return text.replace(prep, " in ", 1)
    return text


def parse(commands: CommandSet, action: str) -> tuple[int, int, int] | None:
    """Return ``(verb, a, b)`` for a normalised action, or ``None`` if it is no command.

    The exact canonical form is one dictionary lookup; the leniencies are
    tried only when that misses.  A treatment named with the wrong appliance
    parses to ``Verb.WRONG_APPLIANCE`` (with the treatment's index as ``a``)
    so that the env can say which appliance to use.
    """
    table = commands.table
    move = table.get(_one_preposition(action))
    if move is not None:
        return move
    words = [word for word in action.split(" ") if word not in _ARTICLES]
    if words[:2] == ["pick", "up"]:
        words[:2] = ["take"]
    named: list[str] = []
    for i, word in enumerate(words):
        unique = _UNIQUE.get(word)
        if unique is not None and not (i + 1 < len(words) and words[i + 1].isdigit()):
            named.append(unique)
        else:
            named.append("sinkbasin" if word == "sink" else word)
    text = _one_preposition(" ".join(named))
    move = table.get(text)
    if move is None:
        wrong = _TREATMENT.match(text)
        if wrong and wrong.group(2) != APPLIANCE_OF[wrong.group(1)]:
            return (Verb.WRONG_APPLIANCE, _TREATMENTS.index(wrong.group(1)), -1)
    return move
