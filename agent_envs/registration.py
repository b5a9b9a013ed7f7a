"""Register every environment id under the ``agent_envs/`` namespace.

Ids are registered with ``max_episode_steps=None``: an env never truncates and
``gym.make`` adds no ``TimeLimit``, because the turn budget is the experimental
variable and belongs to ``wrappers.TurnBudget`` / ``wrappers.BudgetMix``.

Each family owns one block below; a variant is a separate id with kwargs, and a
change to dynamics or rewards bumps the version.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.metadata
import logging
from typing import Any

import gymnasium as gym

from wrappers.protocol import TASK_ID

__all__ = [
    "ENV_GROUP",
    "FAMILIES",
    "ORACLE_TURN_TASKS",
    "env_packages",
    "make_env",
    "oracle_turn_range",
    "register_all",
    "resolve_env_id",
]

logger = logging.getLogger(__name__)

#: The entry-point group of env packages: ``name = "package.module"``, a module
#: that registers its ids with gymnasium when imported.  ``agent-envs list``
#: and every command that takes an id see them once the package is installed.
ENV_GROUP = "agent_envs.envs"

#: id -> (entry point, kwargs, one-line description).  ``agent-envs list`` and
#: the README's environment table are generated from, and tested against, this.
FAMILIES: dict[str, dict[str, tuple[str, dict[str, Any], str]]] = {}


def _family(name: str, entries: dict[str, tuple[str, dict[str, Any], str]]) -> None:
    FAMILIES[name] = entries


# --- GuessNumber ---------------------------------------------------------------
_family(
    "GuessNumber",
    {
        "agent_envs/GuessNumber-v0": (
            "agent_envs.envs.guess_number:GuessNumberEnv",
            {"max_number": 100},
            "Find a secret in 1..100 from higher/lower feedback (bisection).",
        ),
        "agent_envs/GuessNumber-20-v0": (
            "agent_envs.envs.guess_number:GuessNumberEnv",
            {"max_number": 20},
            "Find a secret in 1..20 from higher/lower feedback (20 distinct tasks).",
        ),
        "agent_envs/GuessNumber-1000-v0": (
            "agent_envs.envs.guess_number:GuessNumberEnv",
            {"max_number": 1000},
            "Find a secret in 1..1000 from higher/lower feedback (bisection).",
        ),
        "agent_envs/GuessNumber-Range-v0": (
            "agent_envs.envs.guess_number:GuessNumberRangeEnv",
            {"max_low": 60, "min_width": 10, "max_width": 40},
            "Find a secret in a range stated per task (10-40 numbers within 1..99; "
            "46 500 distinct tasks): bisection transfers, a memorised prior does not.",
        ),
        "agent_envs/GuessNumber-Range-Terse-v0": (
            "agent_envs.envs.guess_number:GuessNumberRangeEnv",
            {"max_low": 60, "min_width": 10, "max_width": 40, "terse": True},
            "GuessNumber-Range in the fewest words ('Guess the integer.', 'Lower.', '16-25'): "
            "the same tasks at a third of the tokens, for small models on a CPU.",
        ),
        "agent_envs/GuessNumber-Wide-Terse-v0": (
            "agent_envs.envs.guess_number:GuessNumberRangeEnv",
            {"max_low": 1, "min_width": 64, "max_width": 99, "terse": True},
            "GuessNumber-Range-Terse over wide ranges (1-64 to 1-99; 2 934 distinct tasks): "
            "bisection needs about 7 guesses, a one-step walk several times that.",
        ),
    },
)

# --- Sokoban -------------------------------------------------------------------
_family(
    "Sokoban",
    {
        "agent_envs/Sokoban-v0": (
            "agent_envs.envs.sokoban:SokobanEnv",
            {"width": 6, "height": 6, "num_boxes": 1},
            "Push 1 box onto its target in a 6x6 room (walls included); irreversible pushes.",
        ),
        "agent_envs/Sokoban-8x8-v0": (
            "agent_envs.envs.sokoban:SokobanEnv",
            {"width": 8, "height": 8, "num_boxes": 2},
            "Push 2 boxes onto targets in an 8x8 room (walls included); irreversible pushes.",
        ),
    },
)

# --- FrozenLake ----------------------------------------------------------------
_family(
    "FrozenLake",
    {
        "agent_envs/FrozenLake-v0": (
            "agent_envs.envs.frozen_lake:FrozenLakeEnv",
            {"size": 4, "slippery": False},
            "Cross a 4x4 frozen lake to the goal around holes (deterministic moves).",
        ),
        "agent_envs/FrozenLake-8x8-v0": (
            "agent_envs.envs.frozen_lake:FrozenLakeEnv",
            {"size": 8, "slippery": False},
            "Cross an 8x8 frozen lake to the goal around holes (deterministic moves).",
        ),
        "agent_envs/FrozenLake-Slippery-v0": (
            "agent_envs.envs.frozen_lake:FrozenLakeEnv",
            {"size": 4, "slippery": True},
            "Cross a 4x4 slippery lake: moves slide sideways with probability 0.2.",
        ),
        "agent_envs/FrozenLake-8x8-Slippery-v0": (
            "agent_envs.envs.frozen_lake:FrozenLakeEnv",
            {"size": 8, "slippery": True},
            "Cross an 8x8 slippery lake: moves slide sideways with probability 0.2.",
        ),
    },
)

# --- Maze ----------------------------------------------------------------------
_family(
    "Maze",
    {
        "agent_envs/Maze-5x5-v0": (
            "agent_envs.envs.maze:MazeEnv",
            {"size": 5},
            "Find the exit of a 5x5-cell maze seeing only the walls around you (memory).",
        ),
        "agent_envs/Maze-7x7-v0": (
            "agent_envs.envs.maze:MazeEnv",
            {"size": 7},
            "Find the exit of a 7x7-cell maze seeing only the walls around you (memory).",
        ),
        "agent_envs/Maze-15x15-v0": (
            "agent_envs.envs.maze:MazeEnv",
            {"size": 15},
            "Find the exit of a 15x15-cell maze seeing only the walls around you (memory).",
        ),
    },
)

# --- Hanoi ---------------------------------------------------------------------
_family(
    "Hanoi",
    {
        "agent_envs/Hanoi-3-v0": (
            "agent_envs.envs.hanoi:HanoiEnv",
            {"n_disks": 3},
            "Tower of Hanoi, 3 disks: 7 moves from a full tower (long-horizon planning).",
        ),
        "agent_envs/Hanoi-4-v0": (
            "agent_envs.envs.hanoi:HanoiEnv",
            {"n_disks": 4},
            "Tower of Hanoi, 4 disks: 15 moves from a full tower (long-horizon planning).",
        ),
        "agent_envs/Hanoi-5-v0": (
            "agent_envs.envs.hanoi:HanoiEnv",
            {"n_disks": 5},
            "Tower of Hanoi, 5 disks: 31 moves from a full tower (long-horizon planning).",
        ),
        "agent_envs/Hanoi-3-RandomStart-v0": (
            "agent_envs.envs.hanoi:HanoiEnv",
            {"n_disks": 3, "random_start": True},
            "Tower of Hanoi, 3 disks from any of 26 random legal starts onto peg 3.",
        ),
        "agent_envs/Hanoi-4-RandomStart-v0": (
            "agent_envs.envs.hanoi:HanoiEnv",
            {"n_disks": 4, "random_start": True},
            "Tower of Hanoi, 4 disks from any of 80 random legal starts onto peg 3.",
        ),
        "agent_envs/Hanoi-5-RandomStart-v0": (
            "agent_envs.envs.hanoi:HanoiEnv",
            {"n_disks": 5, "random_start": True},
            "Tower of Hanoi, 5 disks from any of 242 random legal starts onto peg 3.",
        ),
    },
)

# --- Wordle --------------------------------------------------------------------
_family(
    "Wordle",
    {
        "agent_envs/Wordle-v0": (
            "agent_envs.envs.wordle:WordleEnv",
            {},
            "Find a hidden 5-letter word from green/yellow/grey letter feedback.",
        ),
    },
)

# --- Household -----------------------------------------------------------------
_family(
    "Household",
    {
        "agent_envs/Household-v0": (
            "agent_envs.envs.household:HouseholdEnv",
            {"size": "medium"},
            "ALFWorld-like chores (place, clean/heat/cool, lamp, two objects) in a medium home.",
        ),
        "agent_envs/Household-Small-v0": (
            "agent_envs.envs.household:HouseholdEnv",
            {"size": "small"},
            "ALFWorld-like chores in a small home without distractor objects.",
        ),
        "agent_envs/Household-Large-v0": (
            "agent_envs.envs.household:HouseholdEnv",
            {"size": "large"},
            "ALFWorld-like chores in a large home with many receptacles and distractors.",
        ),
    },
)

# --- WebShop -------------------------------------------------------------------
_family(
    "WebShop",
    {
        "agent_envs/WebShop-v0": (
            "agent_envs.envs.webshop:WebShopEnv",
            {},
            "Search a generated catalogue (BM25) and buy the product an instruction asks for.",
        ),
    },
)

# --- KnowledgeSearch -----------------------------------------------------------
_family(
    "KnowledgeSearch",
    {
        "agent_envs/KnowledgeSearch-v0": (
            "agent_envs.envs.knowledge_search:KnowledgeSearchEnv",
            {"min_hops": 2, "max_hops": 2},
            "Answer a 2-hop question by looking up pages of a fictional knowledge base.",
        ),
        "agent_envs/KnowledgeSearch-Deep-v0": (
            "agent_envs.envs.knowledge_search:KnowledgeSearchEnv",
            {"min_hops": 3, "max_hops": 4},
            "Answer a 3- to 4-hop question by looking up pages of a fictional knowledge base.",
        ),
    },
)


def register_all() -> None:
    """Register every id in :data:`FAMILIES` (idempotent)."""
    for entries in FAMILIES.values():
        for env_id, (entry_point, kwargs, _description) in entries.items():
            if env_id not in gym.registry:
                gym.register(
                    id=env_id,
                    entry_point=entry_point,
                    kwargs=kwargs,
                    max_episode_steps=None,
                    disable_env_checker=False,
                )


#: ``agent-envs list`` and the README's table (``tools/env_table.py``) both
#: measure the oracle-turn range over task ids ``0..ORACLE_TURN_TASKS-1``, so
#: they agree; 20 ids missed Wordle's 5-7 turn words (2-4 against 2..7).
ORACLE_TURN_TASKS = 200


def oracle_turn_range(env_id: str, tasks: int = ORACLE_TURN_TASKS) -> tuple[int, int] | None:
    """Return the (min, max) of ``oracle_turns()`` at reset over task ids ``0..tasks-1``.

    ``None`` when the env has no oracle or no task is solvable.  ``agent-envs
    list`` and ``tools/env_table.py`` (the README's table) show it per id,
    both over :data:`ORACLE_TURN_TASKS` ids by default.

    >>> oracle_turn_range("agent_envs/Hanoi-3-v0", 2)
    (7, 7)
    """
    env = gym.make(env_id).unwrapped
    turns = []
    try:
        for task_id in range(tasks):
            env.reset(seed=0, options={TASK_ID: task_id})
            value = env.oracle_turns()
            if value is not None:
                turns.append(value)
    except (AttributeError, NotImplementedError):
        return None
    return (min(turns), max(turns)) if turns else None


@functools.cache
def env_packages() -> dict[str, tuple[str, ...]]:
    """Import every installed env package of :data:`ENV_GROUP`; return the ids each registered.

    A package that fails to import is logged and skipped (its ids stay
    unknown), so one broken package cannot stop a command on another id.
    """
    found: dict[str, tuple[str, ...]] = {}
    for entry in importlib.metadata.entry_points(group=ENV_GROUP):
        before = set(gym.registry)
        try:
            importlib.import_module(entry.value.split(":")[0])
        except Exception as error:
            logger.warning("env package %s (%s) failed to import: %s", entry.name, entry.value,
                           error)  # fmt: skip
            continue
        new = tuple(env_id for env_id in gym.registry if env_id not in before)
        found[entry.name] = found.get(entry.name, ()) + new
    return found


def resolve_env_id(text: str) -> str:
    """Return the registered id ``text`` names, importing what registers it.

    ``text`` is a registered id; or gymnasium's ``"module:EnvId"`` (the module
    is imported, then ``EnvId`` is looked up); or an id that an installed env
    package (:data:`ENV_GROUP`) registers; or an ``agent_envs/`` id without
    its namespace.

    Raises:
        ValueError: one line, for an id nothing registers or a module that
            cannot be imported.

    >>> resolve_env_id("Sokoban-v0")
    'agent_envs/Sokoban-v0'
    >>> resolve_env_id("agent_envs.registration:agent_envs/Hanoi-3-v0")
    'agent_envs/Hanoi-3-v0'
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"An env id is a non-empty str, got {text!r}.")
    env_id = text
    if ":" in text:
        module, env_id = text.split(":", 1)
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ValueError(f"Env id {text!r}: cannot import {module!r} ({error}).") from None
    for known in (lambda: None, env_packages):
        known()
        if env_id in gym.registry:
            return env_id
        if f"agent_envs/{env_id}" in gym.registry:
            return f"agent_envs/{env_id}"
    close = difflib.get_close_matches(env_id, list(gym.registry), n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise ValueError(
        f"Unknown env id {text!r}.{hint} Run `agent-envs list` for the registered ids, or "
        "name the module that registers it: module:EnvId."
    )


def make_env(text: str, **kwargs: Any) -> gym.Env:
    """Return ``gym.make`` of the id ``text`` names (see :func:`resolve_env_id`).

    It resolves in the process that calls it, so a worker process (Ray, a
    subprocess vector env) imports the module or env package itself.
    """
    return gym.make(resolve_env_id(text), **kwargs)
