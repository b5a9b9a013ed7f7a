"""Household: ALFWorld-like chores in a generated home, played with text commands."""

from __future__ import annotations

from typing import Any

import numpy as np

from agent_envs.core import TextEnv
from agent_envs.envs.household.commands import APPLIANCE_OF, Verb, command_set, parse
from agent_envs.envs.household.oracle import plan
from agent_envs.envs.household.world import CLEAN, COLD, HOT, SIZES, Home, generate_home, listing
from wrappers.errors import InvalidValue

__all__ = ["HouseholdEnv"]

_FORMAT = (
    "Commands: go to X, open X, close X, take O from R, put O in/on R, clean O with R, "
    "heat O with R, cool O with R, use X, look, inventory, examine X. "
    "Use the numbered names, for example: go to cabinet 1."
)


class HouseholdEnv(TextEnv[Home]):
    """Do a household chore in a generated home, with ALFWorld's text commands.

    ## Description
    A home of numbered receptacles (cabinets, drawers, countertops, a fridge, a
    microwave, a sink basin, shelves, tables, a bed, ...) holds numbered
    objects (fruit, mugs, cutlery, books, keys, ...).  Cabinets, drawers, the
    fridge, the microwave and safes open and close; they start closed, and
    what is inside a closed receptacle stays hidden until it is opened.  A
    ``desklamp 1`` stands on a desk, side table or dresser.  Every id mixes
    ALFWorld's six task kinds, drawn uniformly:

    * pick and place: ``put an apple on countertop.``
    * clean then place (``clean O with sinkbasin 1``): ``put a clean mug in cabinet.``
    * heat then place (``heat O with microwave 1``): ``put a hot potato on diningtable.``
    * cool then place (``cool O with fridge 1``): ``put a cool tomato in microwave.``
    * examine under the lamp: ``look at a book under the desklamp.``
    * two objects: ``put two knives in drawer.``

    Household-v0 adds a seventh kind, two treated objects (``put two hot mugs
    on countertop.``); Household-Large-v0 adds that and two more, three
    objects with and without a treatment (``put three cool apples on
    diningtable.``).  Kinds are drawn uniformly from the id's list.  Goals
    name types, not numbers: any object of the type, in any receptacle of the
    type, will do; the objects of a multi-object task must share one
    receptacle.  The agent carries at most one object.  It tests exploration
    (opening receptacles to find things), remembering where things are, and
    keeping a multi-step plan on track.

    ## Action Space
    ``Text``.  ``go to R``, ``open R``, ``close R``, ``take O from R``,
    ``put O in R`` / ``put O on R`` (either preposition, or ``in/on``),
    ``clean O with sinkbasin 1``, ``heat O with microwave 1``,
    ``cool O with fridge 1``, ``use desklamp 1``, ``look``, ``inventory``,
    ``examine X``.  Case, extra spaces, ``the`` and a leading ``Action:`` are
    ignored; the single fridge, microwave, sink basin and desklamp may be named
    without their number.  The rules (an action that breaks one is invalid and
    still uses the turn):

    * ``go to R``: any receptacle but the current one.
    * ``open R`` / ``close R``: only at R, only if R opens, only if closed / open.
    * ``take O from R``: at R, R open (or never closed), O in R, hands empty.
    * ``put O in/on R``: holding O, at R, R open (or never closed).
    * ``clean``/``heat``/``cool``: holding O, at the sink basin / microwave /
      fridge; the appliance need not be open (as in ALFWorld).  Heating clears
      cold, cooling clears hot; clean stays.  Any object may be treated.
    * ``use desklamp 1``: at the lamp's receptacle; switches it on or off.
    * ``look``, ``inventory`` are always valid; ``examine X`` is valid for the
      current receptacle, anything visible in it (the lamp included) and the
      held object.  Info actions change nothing and use a turn.

    ``admissible_actions()`` lists exactly the valid commands.
    ``action_vocabulary`` holds every canonical command over every name a home
    of this id can have (identical for every task; ``admissible_actions()`` is
    a subset): Household-Small-v0 has 994 commands, Household-v0 3,192,
    Household-Large-v0 4,180.

    ## Observation Space
    ``Text``.  The reset observation is ALFWorld's: the room's receptacles,
    ``Your task is to: ...`` and the command format, then the view.  A step
    observation is the feedback (``You arrive at the cabinet 2. The cabinet 2
    is closed.``, ``You open the cabinet 2. The cabinet 2 is open. In it, you
    see a mug 1.``) and the view: where the agent is, what it carries, the task.
    ``examine`` of an object tells whether it is clean, hot or cold.

    ## Starting State
    The task id fixes the home, the objects' places and the goal.  The agent
    stands in the middle of the room holding nothing; every receptacle that
    opens is closed, the lamp is off, no object is clean, hot or cold, and no
    object of the goal's type starts in a receptacle of the goal's type.

    ## Task supply
    Finite, and small enough to matter in the small home: task ids 0..2999
    give 2,530 distinct tasks there (medium and large homes: 3,000 of 3,000).
    The exact count is not known, so ``task_supply`` is ``None``.

    ## Rewards
    ``1.0`` on the step that reaches the goal, ``0.0`` otherwise.

    ## Episode End
    ### Termination
    The goal holds: enough objects of the asked type, with the asked state,
    in/on one receptacle of the asked type; or, for the lamp, the agent holds
    an object of the asked type at the lamp's receptacle while the lamp is on.
    There is no failure: nothing is irreversible (objects can always be taken
    again, treatments redone, receptacles reopened).
    ### Truncation
    Never by the env; use ``wrappers.TurnBudget``.

    ## Information
    ``task_id``, ``success``, ``valid_action``, ``dead_end``.  ``dead_end`` is
    always ``False``.

    ## Oracle
    A privileged planner that knows where every object is (see
    ``agent_envs.envs.household.oracle``): a breadth-first search over the
    goal-relevant state (target objects, the receptacles holding them, the
    appliance, the lamp, the agent's place and load, open flags), which is
    exact because nothing it leaves out can shorten a plan.
    ``oracle_turns()`` is the fewest turns to success; ``oracle_actions()``
    lists the optimal next commands (all of them, except ties that set a
    target down outside a destination).  It never looks, examines or opens to
    search.  Answers are memoised per state on the task.

    ## Arguments
    ``size`` (``"small"``, ``"medium"`` or ``"large"``, default ``"medium"``):
    small homes have 6-8 receptacles and no distractor objects; medium 8-18
    receptacles and 4-8 distractors; large 16-30 receptacles and 10-18
    distractors.  Homes hold 1-3 objects of the goal's type.

    ## Version History
    * v0: initial version.
    """

    action_format = _FORMAT
    privileged_oracle = True
    max_observation_length = 4096
    max_action_length = 256

    def __init__(self, size: str = "medium", render_mode: str | None = None) -> None:
        if not isinstance(size, str) or size not in SIZES:
            raise InvalidValue(f"size must be one of {sorted(SIZES)}, got {size!r}.")
        self.size = size
        self._commands = command_set(SIZES[size])
        self.action_vocabulary = self._commands.vocabulary
        super().__init__(render_mode=render_mode)

    def __getstate__(self) -> dict[str, Any]:
        # The command table is shared and rebuilt from the size: pickles stay small.
        state = self.__dict__.copy()
        del state["_commands"], state["action_vocabulary"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._commands = command_set(SIZES[self.size])
        self.action_vocabulary = self._commands.vocabulary

    # ------------------------------------------------------------------ hooks
    def _make_task(self, task_id: int, rng: np.random.Generator) -> Home:
        return generate_home(SIZES[self.size], rng)

    def _start(self, task: Home) -> None:
        self._at = -1
        self._held = -1
        self._obj_loc = list(task.obj_start)
        self._contents: list[list[int]] = [[] for _ in task.rec_names]
        for obj, rec in enumerate(task.obj_start):
            self._contents[rec].append(obj)
        # Receptacles that never close count as open: "open" means "reachable inside".
        self._open = [not openable for openable in task.openable]
        self._flags = [0] * len(task.obj_names)
        self._lamp_on = False
        self._goal = False

    def _intro(self) -> str:
        task = self.task
        return (
            f"You are in the middle of a room. {task.room}\n\n"
            f"Your task is to: {task.goal}\n\n{_FORMAT}"
        )

    def _view(self) -> str:
        task = self.task
        where = (
            "You are in the middle of the room."
            if self._at < 0
            else f"You are at the {task.rec_names[self._at]}."
        )
        load = (
            "You are carrying nothing."
            if self._held < 0
            else f"You are carrying the {task.obj_names[self._held]}."
        )
        return f"{where} {load}\nYour task is to: {task.goal}"

    def _parse(self, action: str) -> tuple[int, int, int] | None:
        return parse(self._commands, action)

    def _apply(self, move: tuple[int, int, int]) -> tuple[str, bool]:
        verb, a, b = move
        task = self.task
        if verb == Verb.LOOK:
            return self._look(), True
        if verb == Verb.INVENTORY:
            if self._held < 0:
                return "You are not carrying anything.", True
            return f"You are carrying: {task.obj_phrases[self._held]}.", True
        if verb == Verb.WRONG_APPLIANCE:
            word = ("clean", "heat", "cool")[a]
            return f"You can only {word} things with the {APPLIANCE_OF[word]}.", False
        if verb == Verb.USE:
            if self._at != task.lamp:
                return "You don't see the desklamp 1 here.", False
            self._lamp_on = not self._lamp_on
            self._check_lamp()
            return f"You turn {'on' if self._lamp_on else 'off'} the desklamp 1.", True
        if verb == Verb.EXAMINE_LAMP:
            if self._at != task.lamp:
                return "You don't see the desklamp 1 here.", False
            return f"The desklamp 1 is {'on' if self._lamp_on else 'off'}.", True
        if verb in (Verb.TAKE, Verb.PUT, Verb.CLEAN, Verb.HEAT, Verb.COOL, Verb.EXAMINE_OBJECT):
            return self._handle(verb, task.obj_local.get(a, -1), a, b)
        rec = task.rec_local.get(a)
        name = self._commands.receptacles[a]
        if rec is None:
            return f"There is no {name} in this room.", False
        if verb == Verb.GO:
            if rec == self._at:
                return f"You are already at the {name}.", False
            self._at = rec
            self._check_lamp()
            return f"You arrive at the {name}. {self._describe(rec)}", True
        if rec != self._at:
            return f"You are not at the {name}.", False
        if verb == Verb.EXAMINE_RECEPTACLE:
            return self._describe(rec), True
        if not task.openable[rec]:
            return f"The {name} cannot be opened or closed.", False
        if verb == Verb.OPEN:
            if self._open[rec]:
                return f"The {name} is already open.", False
            self._open[rec] = True
            return f"You open the {name}. {self._describe(rec)}", True
        if not self._open[rec]:
            return f"The {name} is already closed.", False
        self._open[rec] = False
        return f"You close the {name}.", True

    def _handle(self, verb: int, obj: int, a: int, b: int) -> tuple[str, bool]:
        """Apply an action on an object (``obj`` is -1 when this home has no such object)."""
        task = self.task
        oname = self._commands.objects[a]
        if verb == Verb.EXAMINE_OBJECT:
            here = self._at >= 0 and self._open[self._at] and obj >= 0
            if obj < 0 or not (obj == self._held or (here and self._obj_loc[obj] == self._at)):
                return f"You don't see the {oname} here.", False
            states = [word for bit, word in ((CLEAN, "clean"), (HOT, "hot"), (COLD, "cold"))
                      if self._flags[obj] & bit]  # fmt: skip
            if not states:
                return f"There's nothing special about the {oname}.", True
            return f"The {oname} is {' and '.join(states)}.", True
        if verb != Verb.TAKE and (obj < 0 or obj != self._held):
            return f"You are not carrying the {oname}.", False
        rec = task.rec_local.get(b)
        rname = self._commands.receptacles[b]
        if rec is None:
            return f"There is no {rname} in this room.", False
        if rec != self._at:
            return f"You are not at the {rname}.", False
        if verb in (Verb.CLEAN, Verb.HEAT, Verb.COOL):
            flags = self._flags[obj]
            if verb == Verb.CLEAN:
                self._flags[obj] = flags | CLEAN
                return f"You clean the {oname} using the {rname}.", True
            if verb == Verb.HEAT:
                self._flags[obj] = (flags | HOT) & ~COLD
                return f"You heat the {oname} using the {rname}.", True
            self._flags[obj] = (flags | COLD) & ~HOT
            return f"You cool the {oname} using the {rname}.", True
        if not self._open[rec]:
            return f"The {rname} is closed.", False
        if verb == Verb.PUT:
            self._held = -1
            self._obj_loc[obj] = rec
            self._contents[rec].append(obj)
            self._check_place(obj, rec)
            return f"You put the {oname} {task.preps[rec]} the {rname}.", True
        if obj < 0 or self._obj_loc[obj] != rec:
            return f"You don't see the {oname} {task.preps[rec]} the {rname}.", False
        if self._held >= 0:
            return f"You are already carrying the {task.obj_names[self._held]}.", False
        self._held = obj
        self._obj_loc[obj] = -1
        self._contents[rec].remove(obj)
        self._check_lamp()
        return f"You pick up the {oname} from the {rname}.", True

    def _check_place(self, obj: int, rec: int) -> None:
        task = self.task
        if not task.is_dest[rec] or obj not in task.targets:
            return
        need, flags = task.need, self._flags
        ready = sum(
            1
            for other in self._contents[rec]
            if other in task.targets and flags[other] & need == need
        )
        # The goal flag is sticky, like the base class's success flag.
        if ready >= task.count:
            self._goal = True

    def _check_lamp(self) -> None:
        task = self.task
        lit = self._lamp_on and self._at == task.lamp
        if lit and task.treatment == "lamp" and self._held in task.targets:
            self._goal = True

    def _describe(self, rec: int) -> str:
        """What the agent sees at ``rec``: closed, or its contents (the lamp first)."""
        task = self.task
        name = task.rec_names[rec]
        things = [task.obj_phrases[obj] for obj in self._contents[rec]]
        if rec == task.lamp:
            things.insert(0, "a desklamp 1")
        if task.openable[rec]:
            if not self._open[rec]:
                return f"The {name} is closed."
            return f"The {name} is open. In it, you see {listing(things)}."
        return f"{task.preps[rec].capitalize()} the {name}, you see {listing(things)}."

    def _look(self) -> str:
        task = self.task
        if self._at < 0:
            return f"You are in the middle of a room. {task.room}"
        return (
            f"You are facing the {task.rec_names[self._at]}. {self._describe(self._at)} {task.room}"
        )

    def _is_success(self) -> bool:
        return self._goal

    def _snapshot(self) -> tuple[Any, ...]:
        """Return the whole mutable episode state (tests use it to branch an episode)."""
        return (
            self._at,
            self._held,
            tuple(self._obj_loc),
            tuple(tuple(objs) for objs in self._contents),
            tuple(self._open),
            tuple(self._flags),
            self._lamp_on,
            self._goal,
            self._success,
        )

    def _restore(self, snapshot: tuple[Any, ...]) -> None:
        """Return to a state taken by :meth:`_snapshot`."""
        at, held, obj_loc, contents, opened, flags, lamp_on, goal, success = snapshot
        self._at, self._held, self._lamp_on, self._goal, self._success = (
            at, held, lamp_on, goal, success
        )  # fmt: skip
        self._obj_loc = list(obj_loc)
        self._contents = [list(objs) for objs in contents]
        self._open = list(opened)
        self._flags = list(flags)

    # ----------------------------------------------------------- oracle API
    def admissible_actions(self) -> list[str]:
        """Return exactly the commands that are valid now, in a fixed order."""
        task = self.task
        names, at, held = task.rec_names, self._at, self._held
        actions = ["look", "inventory"]
        actions.extend(f"go to {name}" for r, name in enumerate(names) if r != at)
        if at >= 0:
            here = names[at]
            if task.openable[at]:
                actions.append(f"{'close' if self._open[at] else 'open'} {here}")
            if self._open[at]:
                if held < 0:
                    actions.extend(
                        f"take {task.obj_names[obj]} from {here}" for obj in self._contents[at]
                    )
                else:
                    actions.append(f"put {task.obj_names[held]} {task.preps[at]} {here}")
            if held >= 0 and task.treats[at]:
                actions.append(f"{task.treats[at]} {task.obj_names[held]} with {here}")
            if at == task.lamp:
                actions.append("use desklamp 1")
            actions.append(f"examine {here}")
            if at == task.lamp:
                actions.append("examine desklamp 1")
            if self._open[at]:
                actions.extend(f"examine {task.obj_names[obj]}" for obj in self._contents[at])
        if held >= 0:
            actions.append(f"examine {task.obj_names[held]}")
        return actions

    def oracle_actions(self) -> list[str]:
        if self._success:
            return []
        return list(self._plan()[1])

    def oracle_turns(self) -> int | None:
        if self._success:
            return 0
        turns = self._plan()[0]
        return turns if turns >= 0 else None

    def _plan(self) -> tuple[int, tuple[str, ...]]:
        return plan(
            self.task,
            self._at,
            self._held,
            self._obj_loc,
            self._flags,
            self._open,
            self._lamp_on,
        )
