"""An exact planner for Household: breadth-first search over the goal-relevant state.

The planner is privileged: it knows where every object is, so it never looks,
examines or opens a receptacle just to search it.  It searches an abstract
state that keeps only what can matter for the goal:

* the objects of the task's type (the *targets*), each with its place and
  whether it has the state the goal asks for (clean, hot or cold); targets
  are interchangeable, so they are kept as a sorted tuple;
* the receptacles that hold a target, the task's appliance (sink basin,
  microwave or fridge), the desklamp's receptacle, the agent's receptacle,
  and one representative of each class of interchangeable destinations:
  open ones (or ones that never close) and closed ones;
* which of those are open, the agent's place, what it carries (a target,
  nothing, or *junk*: any other object), and whether the lamp is on.

Nothing left out can shorten a plan: ``go to`` costs one turn whatever the
distance, receptacles have no capacity, closing never enables anything,
treatments never become impossible, two receptacles of one class behave the
same, and junk costs exactly one ``put`` wherever it goes (the receptacle of
the next ``take`` is open at that moment, so it can always go there).  The
search also never puts a target down outside a destination ("parking" it):
that is never shorter, since picking up a ready target where one parks costs
the same two turns as treating the held one.  Hence the shortest abstract
plan is a shortest real plan; ``tests/test_household.py`` checks this against
a brute-force search of the real game.

The search runs layer by layer and keeps, for every state, the set of first
moves that reach it in the fewest turns, so ``oracle_actions()`` returns
every optimal first command of the plans it considers (a command towards an
interchangeable receptacle is listed for each member of the class; parking
moves that tie are not listed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_envs.envs.household.world import Home

__all__ = ["plan"]

#: The memo holds one entry per queried state; a random agent can visit many,
#: so the memo is cleared once it reaches this size.
MEMO_LIMIT = 50_000

_GO, _OPEN, _TAKE, _PUT, _APPLY, _USE = range(6)


def plan(
    home: Home,
    at: int,
    held: int,
    obj_loc: list[int],
    flags: list[int],
    opened: list[bool],
    lamp_on: bool,
) -> tuple[int, tuple[str, ...]]:
    """Return ``(fewest turns to success, every optimal first command)`` from a state.

    Args:
        home: the task.
        at: the agent's receptacle, ``-1`` in the middle of the room.
        held: the held object, ``-1`` for none.
        obj_loc: each object's receptacle, ``-1`` while held.
        flags: each object's state bits.
        opened: for each receptacle, whether it is open now (``True`` for
            receptacles that never close).
        lamp_on: whether the desklamp is on.
    """
    need = home.need
    key = (
        at,
        held,
        tuple(obj_loc[g] for g in home.targets),
        tuple(flags[g] & need == need for g in home.targets),
        tuple(opened),
        lamp_on and home.treatment == "lamp",
    )
    hit = home.memo.get(key)
    if hit is None:
        hit = _search(home, at, held, obj_loc, flags, opened, lamp_on)
        if len(home.memo) >= MEMO_LIMIT:
            home.memo.clear()
        home.memo[key] = hit
    return hit


def _search(
    home: Home,
    at: int,
    held: int,
    obj_loc: list[int],
    flags: list[int],
    opened: list[bool],
    lamp_on: bool,
) -> tuple[int, tuple[str, ...]]:
    places, classes = _places(home, at, obj_loc, opened)
    is_goal, moves = _rules(home, places)
    spot = {rec: i for i, rec in enumerate(places)}
    need = home.need
    if held < 0:
        load = -1
    elif held in home.targets:
        load = int(flags[held] & need == need)
    else:
        load = -2
    placed = [g for g in home.targets if obj_loc[g] >= 0]
    root = (
        spot[at] if at >= 0 else -1,
        load,
        tuple(sorted(2 * spot[obj_loc[g]] + (flags[g] & need == need) for g in placed)),
        sum(1 << i for i, rec in enumerate(places) if opened[rec]),
        bool(lamp_on) and home.treatment == "lamp",
    )
    if is_goal(root):
        return 0, ()
    first = moves(root)
    depth, winners = _breadth_first(root, first, is_goal, moves)
    commands = [
        command
        for bit, (move, _child) in enumerate(first)
        if winners >> bit & 1
        for command in _commands(home, move, places, classes, at, held, obj_loc, flags)
    ]
    return depth, tuple(dict.fromkeys(commands))


def _places(
    home: Home, at: int, obj_loc: list[int], opened: list[bool]
) -> tuple[list[int], list[list[int]]]:
    """Return the places the search keeps, and the classes of interchangeable destinations.

    The places are the *core* (the agent's receptacle, those holding a target,
    the appliance and, for lamp tasks, the lamp's) and then one representative
    of each class.
    """
    lamp_goal = home.treatment == "lamp"
    core: list[int] = []
    for rec in (at, *(obj_loc[g] for g in home.targets), home.tool):
        if rec >= 0 and rec not in core:
            core.append(rec)
    if lamp_goal and home.lamp not in core:
        core.append(home.lamp)
    classes: list[list[int]] = []
    if not lamp_goal:
        for want_open in (True, False):
            members = [
                r
                for r, dest in enumerate(home.is_dest)
                if dest and opened[r] == want_open and r not in core
            ]
            if members:
                classes.append(members)
    return core + [members[0] for members in classes], classes


_State = tuple[Any, ...]


def _rules(
    home: Home, places: list[int]
) -> tuple[Callable[[_State], bool], Callable[[_State], list[tuple[tuple[int, int], _State]]]]:
    """Return ``is_goal(state)`` and ``moves(state)`` over the abstract states of ``places``.

    A state is (place, load, objects, open bits, lamp).  ``place`` is -1 in
    the middle of the room.  ``load`` is -1 (nothing), -2 (junk), or the held
    target's "done" bit (it has the state the goal asks for).  Targets are
    interchangeable, so ``objects`` is the sorted tuple of ``2 * place +
    done`` over the targets not held.
    """
    lamp_goal, count, size = home.treatment == "lamp", home.count, len(places)
    # Lamp tasks have no destination: a held target is never put down.
    is_dest = [home.is_dest[rec] and not lamp_goal for rec in places]
    spot = {rec: i for i, rec in enumerate(places)}
    tool = spot.get(home.tool, -1)
    lamp = spot[home.lamp] if lamp_goal else -1

    def is_goal(state: _State) -> bool:
        a, load, objects, _opens, light = state
        if lamp_goal:
            return load >= 0 and a == lamp and light
        tally: dict[int, int] = {}
        for code in objects:
            if code & 1 and is_dest[code >> 1]:
                tally[code] = tally.get(code, 0) + 1
                if tally[code] == count:
                    return True
        return False

    def moves(state: _State) -> list[tuple[tuple[int, int], _State]]:
        a, load, objects, opens, light = state
        out = [((_GO, i), (i, load, objects, opens, light)) for i in range(size) if i != a]
        if a < 0:
            return out
        if not opens >> a & 1:
            out.append(((_OPEN, 0), (a, load, objects, opens | 1 << a, light)))
        elif load == -1:
            last = -1
            for i, code in enumerate(objects):
                if code >> 1 == a and code != last:
                    last = code
                    rest = objects[:i] + objects[i + 1 :]
                    out.append(((_TAKE, code), (a, code & 1, rest, opens, light)))
        elif load == -2:
            out.append(((_PUT, 0), (a, -1, objects, opens, light)))
        elif is_dest[a]:
            put = tuple(sorted((*objects, 2 * a + load)))
            out.append(((_PUT, 0), (a, -1, put, opens, light)))
        if load == 0 and a == tool:
            out.append(((_APPLY, 0), (a, 1, objects, opens, light)))
        if a == lamp and not light:
            out.append(((_USE, 0), (a, load, objects, opens, True)))
        return out

    return is_goal, moves


def _breadth_first(
    root: _State,
    first: list[tuple[tuple[int, int], _State]],
    is_goal: Callable[[_State], bool],
    moves: Callable[[_State], list[tuple[tuple[int, int], _State]]],
) -> tuple[int, int]:
    """Return the fewest turns to a goal and the bit set of the first moves that take them.

    Each state of a layer carries the bits of the first moves that reach it in
    the fewest turns.  ``(-1, 0)`` if no goal is reachable (never, in practice:
    every goal stays reachable in this family).
    """
    depth_of: dict[_State, int] = {root: 0}
    layer: dict[_State, int] = {}
    for bit, (_move, child) in enumerate(first):
        depth_of[child] = 1
        layer[child] = layer.get(child, 0) | 1 << bit
    depth = 1
    while layer:
        winners = 0
        for state, label in layer.items():
            if is_goal(state):
                winners |= label
        if winners:
            return depth, winners
        depth += 1
        following: dict[_State, int] = {}
        for state, label in layer.items():
            for _move, child in moves(state):
                known = depth_of.get(child)
                if known is None:
                    depth_of[child] = depth
                    following[child] = label
                elif known == depth:
                    following[child] |= label
        layer = following
    return -1, 0


def _commands(
    home: Home,
    move: tuple[int, int],
    places: list[int],
    classes: list[list[int]],
    at: int,
    held: int,
    obj_loc: list[int],
    flags: list[int],
) -> list[str]:
    """Turn one abstract first move into the concrete commands it stands for."""
    verb, arg = move
    names = home.rec_names
    if verb == _GO:
        rec = places[arg]
        group = next((members for members in classes if members[0] == rec), [rec])
        return [f"go to {names[r]}" for r in group]
    if verb == _OPEN:
        return [f"open {names[at]}"]
    if verb == _TAKE:
        # Every target here in the same state is an equally good choice.
        done = arg & 1
        return [
            f"take {home.obj_names[g]} from {names[at]}"
            for g in home.targets
            if obj_loc[g] == at and (flags[g] & home.need == home.need) == done
        ]
    if verb == _PUT:
        return [f"put {home.obj_names[held]} {home.preps[at]} {names[at]}"]
    if verb == _APPLY:
        return [f"{home.treatment} {home.obj_names[held]} with {names[home.tool]}"]
    return ["use desklamp 1"]
