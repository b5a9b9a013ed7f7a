"""Household's own rules: hidden objects, open/close, treatments, lamp, two objects, oracle."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from agent_envs.envs.household import HouseholdEnv
from agent_envs.envs.household.world import COLD, HOT

SIZE_NAMES = ("small", "medium", "large")
INFO_PREFIXES = ("look", "inventory", "examine")


def find_task(env: HouseholdEnv, predicate, limit: int = 500) -> int:
    """Reset ``env`` to the first task id whose home satisfies ``predicate``."""
    for task_id in range(limit):
        env.reset(seed=0, options={"task_id": task_id})
        if predicate(env.task):
            return task_id
    raise AssertionError("no task in range satisfies the predicate")


def valid(env: HouseholdEnv, action: str) -> bool:
    return env.step(action)[-1]["valid_action"]


def hidden_target(task) -> bool:
    """The first target starts inside a receptacle that opens."""
    return task.openable[task.obj_start[task.targets[0]]]


# ------------------------------------------------------------------ the world
def test_unknown_size_is_a_clear_error():
    with pytest.raises(ValueError, match="size"):
        HouseholdEnv(size="huge")


@pytest.mark.parametrize("size", SIZE_NAMES)
def test_goal_is_unmet_at_start_and_homes_are_well_formed(size):
    env = HouseholdEnv(size=size)
    for task_id in range(60):
        env.reset(seed=0, options={"task_id": task_id})
        task = env.task
        assert len(task.targets) >= task.count
        assert task.rec_types.count("fridge") == task.rec_types.count("microwave") == 1
        assert task.rec_types[task.lamp] in ("desk", "sidetable", "dresser")
        for obj in task.targets:
            assert not task.is_dest[task.obj_start[obj]]
        if size == "small":
            assert len(task.obj_names) == len(task.targets)
        assert env.oracle_turns() >= 1


@pytest.mark.parametrize("size", SIZE_NAMES)
def test_vocabulary_is_fixed_bounded_and_parses(size):
    env = HouseholdEnv(size=size)
    vocabulary = env.action_vocabulary
    assert len(vocabulary) == len(set(vocabulary)) < 5000
    assert HouseholdEnv(size=size).action_vocabulary == vocabulary
    assert all(env._parse(action) is not None for action in vocabulary)


# ------------------------------------------------------------- hidden objects
def test_objects_in_closed_receptacles_stay_hidden_until_opened():
    env = HouseholdEnv(size="medium")
    find_task(env, hidden_target)
    task = env.task
    obj = task.targets[0]
    rec = task.rec_names[task.obj_start[obj]]
    name = task.obj_names[obj]
    observation, *_ = env.step(f"go to {rec}")
    assert f"The {rec} is closed." in observation and name not in observation
    admissible = env.admissible_actions()
    assert f"take {name} from {rec}" not in admissible
    assert f"examine {name}" not in admissible
    assert not valid(env, f"take {name} from {rec}")
    assert not valid(env, f"examine {name}")
    observation, *_ = env.step(f"open {rec}")
    assert "In it, you see" in observation and name in observation
    assert f"take {name} from {rec}" in env.admissible_actions()
    env.step(f"close {rec}")
    assert name not in env.step("look")[0]
    assert not valid(env, f"take {name} from {rec}")


def test_a_closed_receptacle_does_not_leak_whether_an_object_is_inside():
    env = HouseholdEnv(size="medium")
    find_task(env, hidden_target)
    task = env.task
    obj = task.targets[0]
    rec = task.rec_names[task.obj_start[obj]]
    env.step(f"go to {rec}")
    here = env.step(f"take {task.obj_names[obj]} from {rec}")[0]
    absent = env.step(f"take {task.target_type} 3 from {rec}")[0]
    assert here.split("\n")[0] == absent.split("\n")[0] == f"The {rec} is closed."


def test_open_close_state_machine():
    env = HouseholdEnv(size="small")
    env.reset(seed=0, options={"task_id": 0})
    assert not valid(env, "open cabinet 1")  # not there yet
    assert valid(env, "go to cabinet 1")
    assert not valid(env, "go to cabinet 1")  # already there
    assert not valid(env, "close cabinet 1")  # closed already
    assert valid(env, "open cabinet 1")
    assert not valid(env, "open cabinet 1")  # open already
    assert valid(env, "close cabinet 1")
    assert not valid(env, "close cabinet 1")
    env.step("go to countertop 1")
    assert not valid(env, "open countertop 1")  # never closes
    assert "open countertop 1" not in env.action_vocabulary


def test_one_object_at_a_time_and_put_only_what_is_held():
    env = HouseholdEnv(size="large")
    find_task(env, lambda task: any(
        not task.openable[task.obj_start[a]]
        and task.obj_start.count(task.obj_start[a]) >= 2 for a in range(len(task.obj_names))
    ))  # fmt: skip
    task = env.task
    rec = next(
        r for r in range(len(task.rec_names))
        if not task.openable[r] and task.obj_start.count(r) >= 2
    )  # fmt: skip
    first, second = [o for o in range(len(task.obj_names)) if task.obj_start[o] == rec][:2]
    here, a, b = task.rec_names[rec], task.obj_names[first], task.obj_names[second]
    env.step(f"go to {here}")
    assert not valid(env, f"put {a} on {here}")
    assert valid(env, f"take {a} from {here}")
    assert not valid(env, f"take {b} from {here}")
    assert "You are carrying: " in env.step("inventory")[0]
    assert valid(env, f"put {a} in {here}")  # "in" and "on" are both accepted
    assert valid(env, f"take {b} from {here}")


# ------------------------------------------------------------------ treatments
def test_treatments_change_state_only_with_the_right_appliance():
    env = HouseholdEnv(size="small")
    find_task(env, lambda task: not hidden_target(task))
    task = env.task
    obj = task.targets[0]
    name, rec = task.obj_names[obj], task.rec_names[task.obj_start[obj]]
    env.step(f"go to {rec}")
    assert valid(env, f"take {name} from {rec}")
    assert "nothing special" in env.step(f"examine {name}")[0]
    assert not valid(env, f"heat {name} with microwave 1")  # not at the microwave
    env.step("go to fridge 1")
    assert not valid(env, f"heat {name} with fridge 1")
    assert not valid(env, f"clean {name} with fridge 1")
    assert env._flags[obj] == 0
    assert valid(env, f"cool {name} with fridge 1")  # the fridge may stay closed
    assert env._flags[obj] == COLD
    env.step("go to microwave 1")
    assert valid(env, f"heat {name} with microwave")  # unique appliances need no number
    assert env._flags[obj] == HOT  # heating clears cold
    env.step("go to sinkbasin 1")
    assert valid(env, f"clean {name} with sinkbasin 1")
    assert env.step(f"examine {name}")[0].startswith(f"The {name} is clean and hot.")


# ----------------------------------------------------------- lamp, two objects
def test_examine_under_the_lamp():
    env = HouseholdEnv(size="small")
    find_task(env, lambda task: task.treatment == "lamp" and task.count == 1)
    task = env.task
    obj = task.targets[0]
    name, rec = task.obj_names[obj], task.rec_names[task.obj_start[obj]]
    lamp = task.rec_names[task.lamp]
    env.step(f"go to {lamp}")
    assert valid(env, "use desklamp 1")
    assert valid(env, "use desklamp 1")  # switches it off again
    assert env.step("examine desklamp 1")[0].startswith("The desklamp 1 is off.")
    env.step(f"go to {rec}")
    if task.openable[task.obj_start[obj]]:
        env.step(f"open {rec}")
    if rec != lamp:
        assert not valid(env, "use desklamp 1")
    *_, terminated, _, info = env.step(f"take {name} from {rec}")
    assert not terminated
    if rec != lamp:
        env.step(f"go to {lamp}")
    *_, reward, terminated, _, info = env.step("use desklamp 1")
    assert (reward, terminated, info["success"]) == (1.0, True, True)


def test_two_objects_must_share_one_receptacle():
    env = HouseholdEnv(size="medium")
    find_task(
        env,
        lambda task: (
            task.kind == "two"
            and task.rec_types.count(task.dest_type) >= 2
            and not task.openable[task.is_dest.index(True)]
        ),
    )
    task = env.task
    dests = [r for r, dest in enumerate(task.is_dest) if dest]
    for obj, dest in zip(task.targets[:2], (dests[0], dests[1]), strict=True):
        _carry(env, obj, dest)
    assert not env._success
    *_, reward, terminated, _, info = _carry(env, task.targets[0], dests[1])
    assert (reward, terminated, info["success"]) == (1.0, True, True)


def _carry(env: HouseholdEnv, obj: int, dest: int):
    """Take ``obj`` from where it is and put it in ``dest`` (which never closes)."""
    task = env.task
    rec = env._obj_loc[obj]
    name = task.obj_names[obj]
    env.step(f"go to {task.rec_names[rec]}")
    if not env._open[rec]:
        env.step(f"open {task.rec_names[rec]}")
    assert valid(env, f"take {name} from {task.rec_names[rec]}")
    env.step(f"go to {task.rec_names[dest]}")
    return env.step(f"put {name} in {task.rec_names[dest]}")


# ------------------------------------------------------------- action parsing
def test_parsing_is_lenient():
    env = HouseholdEnv(size="small")
    env.reset(seed=0, options={"task_id": 0})
    assert valid(env, "  Action:  GO TO   the Fridge  ")
    assert valid(env, "open fridge.")
    assert not valid(env, "go to fridge 2")
    assert not valid(env, "fly to the moon")


# ------------------------------------------------- admissible == what step takes
@pytest.mark.parametrize("size", SIZE_NAMES)
def test_admissible_actions_are_exactly_the_valid_ones(size):
    env = HouseholdEnv(size=size)
    rng = np.random.default_rng(0)
    vocabulary = env.action_vocabulary
    for task_id in range(6):
        env.reset(seed=0, options={"task_id": task_id})
        for _ in range(25):
            snapshot = env._snapshot()
            admissible = env.admissible_actions()
            assert len(admissible) == len(set(admissible))
            assert set(admissible) <= set(vocabulary)
            for action in admissible:
                assert valid(env, action), action
                env._restore(snapshot)
            chosen = set(admissible)
            for index in rng.choice(len(vocabulary), size=150, replace=False):
                action = vocabulary[index]
                if action not in chosen:
                    assert not valid(env, action), action
                    assert env._snapshot() == snapshot
            # Invalid actions never change the state, so no restore is needed.
            if env.step(admissible[int(rng.integers(len(admissible)))])[2]:
                break


@pytest.mark.parametrize("size", SIZE_NAMES)
def test_observations_fit_the_space(size):
    env = HouseholdEnv(size=size)
    longest = 0
    for task_id in range(100):
        observation, _ = env.reset(seed=0, options={"task_id": task_id})
        longest = max(longest, len(observation))
        task = env.task
        crowded = max(range(len(task.rec_names)), key=task.obj_start.count)
        env.step(f"go to {task.rec_names[crowded]}")
        env.step(f"open {task.rec_names[crowded]}")
        longest = max(longest, len(env.step("look")[0]))
    assert longest < env.observation_space.max_length // 2


# ---------------------------------------------------------------------- oracle
def _brute_force_turns(env: HouseholdEnv, limit: int) -> int | None:
    """Fewest turns to success by breadth-first search over the real game."""
    start = env._snapshot()

    def key() -> tuple:
        state = env._snapshot()
        return state[:3] + state[4:7]

    seen = {key()}
    frontier = [start]
    for depth in range(1, limit + 1):
        following = []
        for state in frontier:
            env._restore(state)
            for action in env.admissible_actions():
                if action.startswith(INFO_PREFIXES):
                    continue
                env._restore(state)
                env.step(action)
                if env._goal:
                    env._restore(start)
                    return depth
                if key() not in seen:
                    seen.add(key())
                    following.append(env._snapshot())
        frontier = following
    env._restore(start)
    return None


def test_oracle_matches_brute_force_search():
    env = HouseholdEnv(size="small")
    rng = np.random.default_rng(3)
    checked = 0
    for task_id in range(40):
        env.reset(seed=0, options={"task_id": task_id})
        if env.oracle_turns() > 6:
            continue
        for _ in range(2):
            turns = env.oracle_turns()
            assert _brute_force_turns(env, turns) == turns, task_id
            checked += 1
            for _ in range(2):
                legal = env.admissible_actions()
                if env.step(legal[int(rng.integers(len(legal)))])[2]:
                    break
            if env._success:
                break
    assert checked >= 20


def test_every_listed_oracle_action_is_optimal():
    env = HouseholdEnv(size="medium")
    for task_id in range(30):
        env.reset(seed=0, options={"task_id": task_id})
        turns = env.oracle_turns()
        snapshot = env._snapshot()
        for action in env.oracle_actions():
            env._restore(snapshot)
            assert env.step(action)[-1]["valid_action"]
            assert env.oracle_turns() == turns - 1


@pytest.mark.parametrize("size", SIZE_NAMES)
def test_oracle_turns_are_in_the_documented_range(size):
    env = HouseholdEnv(size=size)
    turns = []
    for task_id in range(60):
        env.reset(seed=0, options={"task_id": task_id})
        turns.append(env.oracle_turns())
    assert min(turns) >= 3 and max(turns) <= 24


def test_memoised_oracle_survives_pickling():
    env = HouseholdEnv(size="large")
    env.reset(seed=0, options={"task_id": 8})
    expected = (env.oracle_turns(), env.oracle_actions())
    clone = pickle.loads(pickle.dumps(env))
    assert (clone.oracle_turns(), clone.oracle_actions()) == expected
