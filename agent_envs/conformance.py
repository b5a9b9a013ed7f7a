"""The env contract as checks an env author runs on their own ids, from their own tests.

Each ``check_*`` function takes a registered id (of any package: register it
with gymnasium first, or pass ``"module:Id"``) and raises ``AssertionError``
with the reason when the env breaks the contract; it returns ``None``
otherwise.  The project's own conformance tests are these functions,
parametrised over every ``agent_envs/`` id.

* :func:`check_family` runs them all and reports every failure at once;
* :func:`conformance_parameters` parametrises a pytest test over ids and checks:

.. code-block:: python

    # tests/test_my_envs.py, in your package
    from agent_envs.conformance import conformance_parameters

    @conformance_parameters(["mypkg/WaterJugs-v0"])
    def test_contract(env_id, check):
        check(env_id)

The checks expect an env built on :class:`agent_envs.core.TextEnv` (some read
its hooks, such as ``_view``, to see that an invalid action changed nothing).

>>> import agent_envs
>>> check_oracle("agent_envs/GuessNumber-v0")
>>> [check.__name__ for check in CHECKS][:3]
['check_checker', 'check_spaces', 'check_render']
"""

from __future__ import annotations

import pickle
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from agent_envs.core import TextEnv
from agent_envs.env_stack import BudgetRegime, make_stack
from agent_envs.registration import resolve_env_id
from wrappers import TurnBudget
from wrappers.protocol import BUDGET, DEAD_END, SUCCESS, TASK_ID, TURNS_LEFT, VALID_ACTION

__all__ = [
    "CHECKS",
    "JUNK_ACTIONS",
    "ConformanceError",
    "action_stream",
    "check_any_string",
    "check_bad_task_ids",
    "check_budgets",
    "check_checker",
    "check_determinism",
    "check_docstring",
    "check_family",
    "check_invalid_action",
    "check_non_str_action",
    "check_oracle",
    "check_parse_memo",
    "check_pickling",
    "check_render",
    "check_reward",
    "check_spaces",
    "check_task_ids",
    "check_task_supply",
    "conformance_parameters",
    "make_unwrapped",
]

STEP_KEYS = {TASK_ID, SUCCESS, VALID_ACTION, DEAD_END}
RESET_KEYS = {TASK_ID, SUCCESS}
#: Texts no env should take as a move; every env must still accept them.
JUNK_ACTIONS = (
    "", "   ", "Action:", "hello world", "UP UP UP", "take everything", "search[]", "click[",
    "\x00\x01\x7f", "ünïcødé ✓", "9" * 40, "-5",
)  # fmt: skip
_DOC_SECTIONS = (
    "## Description", "## Action Space", "## Observation Space", "## Starting State",
    "## Rewards", "## Episode End", "## Information", "## Arguments", "## Version History",
)  # fmt: skip


class ConformanceError(AssertionError):
    """Raised by :func:`check_family`: every failed check, one line each."""


def make_unwrapped(env_id: str) -> TextEnv:
    """Build the bare env behind an id (no checker or order wrappers)."""
    return gym.make(resolve_env_id(env_id)).unwrapped


def action_stream(
    env: Any, rng: np.random.Generator, length: int, junk_every: int = 4
) -> Iterator[str]:
    """Yield actions for ``env``: mostly admissible ones, with junk mixed in."""
    for index in range(length):
        if index % junk_every == junk_every - 1:
            yield JUNK_ACTIONS[int(rng.integers(len(JUNK_ACTIONS)))]
        else:
            legal = env.admissible_actions()
            yield legal[int(rng.integers(len(legal)))] if legal else "look"


def _rollout(env: Any, seed: int, task_id: int, actions: list[str]) -> list[tuple]:
    """Reset then play ``actions`` (resetting to the next task on termination)."""
    records = [env.reset(seed=seed, options={TASK_ID: task_id})]
    for action in actions:
        result = env.step(action)
        records.append(result)
        if result[2] or result[3]:
            task_id += 1
            records.append(env.reset(seed=seed, options={TASK_ID: task_id}))
    return records


def check_checker(env_id: str) -> None:
    """Gymnasium's ``check_env`` passes with warnings treated as errors, on a ``TextEnv``."""
    from gymnasium.utils.env_checker import check_env

    env = make_unwrapped(env_id)
    assert isinstance(env, TextEnv), f"{env_id}: {type(env).__name__} is not a TextEnv"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env)


def check_spaces(env_id: str) -> None:
    """Both spaces are ``gymnasium.spaces.Text`` with ``min_length=0``."""
    env = make_unwrapped(env_id)
    for space in (env.observation_space, env.action_space):
        assert isinstance(space, gym.spaces.Text), f"{env_id}: {space} is not a Text space"
        assert space.min_length == 0, f"{env_id}: {space} has min_length {space.min_length}"


def check_render(env_id: str) -> None:
    """``render_mode="ansi"`` renders the current state as text in the observation space."""
    env = gym.make(resolve_env_id(env_id), render_mode="ansi")
    env.reset(seed=0, options={TASK_ID: 1})
    frame = env.render()
    assert isinstance(frame, str) and frame, f"{env_id}: ansi render gave {frame!r:.60}"
    assert env.unwrapped.observation_space.contains(frame), f"{env_id}: frame outside the space"


def check_determinism(env_id: str) -> None:
    """The same (seed, task_id, actions) give the same results, byte for byte, with the keys."""
    actions: list[str] = []
    probe = make_unwrapped(env_id)
    probe.reset(seed=3, options={TASK_ID: 11})
    for action in action_stream(probe, np.random.default_rng(0), 120):
        actions.append(action)
        *_, terminated, truncated, _ = probe.step(action)
        if terminated or truncated:
            probe.reset(seed=3, options={TASK_ID: 12})
    first, second = make_unwrapped(env_id), make_unwrapped(env_id)
    a = _rollout(first, 3, 11, actions)
    assert a == _rollout(second, 3, 11, actions), f"{env_id}: two replays differ"
    for record in a:
        observation, info = record[0], record[-1]
        assert first.observation_space.contains(observation), repr(observation[-200:])
        keys = STEP_KEYS if len(record) == 5 else RESET_KEYS
        assert set(info) >= keys, f"{env_id}: info lacks {sorted(keys - set(info))}"


def check_pickling(env_id: str) -> None:
    """A pickled env mid-episode continues exactly as the original."""
    env = make_unwrapped(env_id)
    env.reset(seed=5, options={TASK_ID: 4})
    for action in action_stream(env, np.random.default_rng(1), 7, junk_every=3):
        if env.step(action)[2]:
            env.reset(seed=5, options={TASK_ID: 5})
    clone = pickle.loads(pickle.dumps(env))
    for action in action_stream(env, np.random.default_rng(2), 30, junk_every=3):
        a, b = env.step(action), clone.step(action)
        assert a == b, f"{env_id}: the pickled copy differs after {action!r}"
        if a[2]:
            again = env.reset(seed=6, options={TASK_ID: 9})
            assert again == clone.reset(seed=6, options={TASK_ID: 9}), env_id


def check_any_string(env_id: str, texts: Sequence[str] = ()) -> None:
    """Any string is an action: no exception, no truncation, over-long text is invalid."""
    env = make_unwrapped(env_id)
    env.reset(seed=0, options={TASK_ID: 2})
    longest = "up" * (env.action_space.max_length // 2 + 1)
    for text in (*JUNK_ACTIONS, "\x1b[31m\r", "Action: ✓ 日本語 🚀", longest, *texts):
        observation, reward, _, truncated, info = env.step(text)
        assert env.observation_space.contains(observation), f"{env_id}: {text!r:.40}"
        assert truncated is False and reward in (0.0, 1.0), f"{env_id}: {text!r:.40}"
        assert info[VALID_ACTION] in (True, False), f"{env_id}: {text!r:.40}"
        if len(text) > env.action_space.max_length:
            assert info[VALID_ACTION] is False, f"{env_id}: over-long text was valid"


def check_non_str_action(env_id: str) -> None:
    """A non-``str`` action raises ``TypeError`` naming ``str``: a programming error."""
    env = make_unwrapped(env_id)
    env.reset(seed=0, options={TASK_ID: 0})
    for bad in (3, None, b"up", ["up"], 1.5):
        try:
            env.step(bad)
        except TypeError as error:
            assert "str" in str(error), f"{env_id}: the TypeError does not say str: {error}"
        else:
            raise AssertionError(f"{env_id}: step({bad!r}) raised no TypeError")


def check_invalid_action(env_id: str) -> None:
    """An invalid action leaves the state as it was, with reward 0 and no termination."""
    env = make_unwrapped(env_id)
    env.reset(seed=0, options={TASK_ID: 6})
    before = (env._view(), env.oracle_turns(), env.admissible_actions())
    _, reward, terminated, _, info = env.step("zzz not an action zzz")
    assert info[VALID_ACTION] is False, f"{env_id}: nonsense was a valid action"
    assert reward == 0.0 and terminated is False, env_id
    after = (env._view(), env.oracle_turns(), env.admissible_actions())
    assert after == before, f"{env_id}: an invalid action changed the state"


def check_bad_task_ids(env_id: str) -> None:
    """A task id that is not an int in ``0 .. 2**31 - 1`` is a clear error naming ``task_id``."""
    env = make_unwrapped(env_id)
    for bad in (-1, 2**31, "3", 2.0, True):
        try:
            env.reset(seed=0, options={TASK_ID: bad})
        except (TypeError, ValueError) as error:
            assert TASK_ID in str(error), f"{env_id}: the error does not name task_id: {error}"
        else:
            raise AssertionError(f"{env_id}: task_id={bad!r} was accepted")


def _fingerprint(env: Any, task_id: int) -> tuple:
    """What identifies a task: its reset view and the oracle's path through it."""
    observation, _ = env.reset(seed=0, options={TASK_ID: task_id})
    trail = [observation, env.oracle_turns()]
    for _ in range(4):
        oracle = env.oracle_actions()
        if not oracle:
            break
        step = env.step(oracle[0])
        trail.append(step[0])
        if step[2]:
            break
    return tuple(trail)


def check_task_ids(env_id: str) -> None:
    """The task id fixes the instance whatever the seed; ids vary; no id draws from the seed."""
    env = make_unwrapped(env_id)
    for task_id in (0, 17):
        first, _ = env.reset(seed=1, options={TASK_ID: task_id})
        turns = env.oracle_turns()
        second, _ = env.reset(seed=999, options={TASK_ID: task_id})
        assert first == second and turns == env.oracle_turns(), f"{env_id}: the seed changed it"
    prints = {_fingerprint(env, task_id) for task_id in range(12)}
    assert len(prints) >= 6, f"{env_id}: 12 task ids gave only {len(prints)} instances"
    _, info_a = env.reset(seed=21)
    _, info_b = env.reset(seed=21)
    _, info_c = env.reset(seed=22)
    assert info_a[TASK_ID] == info_b[TASK_ID] != info_c[TASK_ID], f"{env_id}: seeded draws"


def check_oracle(env_id: str, tasks: int = 50) -> None:
    """The oracle solves each task in exactly ``oracle_turns()`` (deterministic envs only)."""
    env = make_unwrapped(env_id)
    if env.stochastic:
        return  # a path is replayed exactly only where moves are deterministic
    for task_id in range(tasks):
        _, info = env.reset(seed=task_id, options={TASK_ID: task_id})
        expected = env.oracle_turns()
        assert isinstance(expected, int) and expected >= 1, (env_id, task_id, expected)
        for turn in range(1, expected + 1):
            actions = env.oracle_actions()
            assert actions, f"{env_id} task {task_id}: no oracle action at turn {turn}"
            assert set(actions) <= set(env.admissible_actions()), (env_id, task_id, actions)
            _, reward, terminated, truncated, info = env.step(actions[0])
            assert info[VALID_ACTION] is True and not truncated, (env_id, task_id, turn)
            assert env.oracle_turns() == expected - turn, (env_id, task_id, turn)
            if turn < expected:
                assert (reward, terminated, info[SUCCESS]) == (0.0, False, False), (env_id, turn)
        assert (reward, terminated, info[SUCCESS]) == (1.0, True, True), (env_id, task_id)
        assert env.oracle_actions() == [], f"{env_id}: oracle actions after success"


def check_reward(env_id: str) -> None:
    """The reward is 1.0 exactly on success, success terminates, the env never truncates."""
    env = make_unwrapped(env_id)
    rng = np.random.default_rng(7)
    for task_id in range(5):
        env.reset(seed=task_id, options={TASK_ID: task_id})
        for action in action_stream(env, rng, 60):
            _, reward, terminated, truncated, info = env.step(action)
            assert reward == (1.0 if info[SUCCESS] else 0.0), (env_id, task_id, action)
            assert not truncated, f"{env_id}: the env truncated"
            assert terminated or not info[SUCCESS], f"{env_id}: success did not terminate"
            if terminated:
                break


def _documented_info_keys(cls: type) -> set[str]:
    """The ``lowercase`` keys in the docstring's ``## Information`` section."""
    doc = cls.__doc__ or ""
    match = re.search(r"## Information\n(.*?)(?:\n\s*## |\Z)", doc, re.S)
    assert match, f"{cls.__name__} has no '## Information' section"
    return set(re.findall(r"``([a-z][a-z0-9_]*)``", match.group(1)))


def check_docstring(env_id: str) -> None:
    """The class docstring has Gymnasium's sections and lists exactly the info keys emitted."""
    env = make_unwrapped(env_id)
    cls = type(env)
    missing = [section for section in _DOC_SECTIONS if section not in (cls.__doc__ or "")]
    assert not missing, f"{cls.__name__} docstring lacks {missing}"
    emitted = set(env.reset(seed=0, options={TASK_ID: 0})[1])
    for action in action_stream(env, np.random.default_rng(0), 20):
        emitted |= set(env.step(action)[-1])
    documented = _documented_info_keys(cls)
    assert documented == emitted, f"{cls.__name__}: documents {documented}, emits {emitted}"


def check_task_supply(env_id: str) -> None:
    """A finite ``task_supply`` is an int, documented in ``## Task supply``, and true."""
    env = make_unwrapped(env_id)
    supply = env.task_supply
    if supply is None:
        return
    assert isinstance(supply, int) and supply >= 1, f"{env_id}: task_supply {supply!r}"
    assert "## Task supply" in (type(env).__doc__ or ""), f"{type(env).__name__} hides its supply"
    if supply <= 300:  # small enough to enumerate: the ids give at most that many instances
        tasks = {pickle.dumps(env._make_task(i, env._task_generator(i))) for i in range(2 * supply)}
        assert len(tasks) <= supply, f"{env_id}: more than {supply} distinct tasks"


def check_parse_memo(env_id: str) -> None:
    """``step`` memoises the parse of a text: only sound if parsing ignores the state."""
    memo, fresh = make_unwrapped(env_id), make_unwrapped(env_id)
    rng = np.random.default_rng(3)
    for task_id in (0, 1):
        results = [env.reset(seed=task_id, options={TASK_ID: task_id}) for env in (memo, fresh)]
        assert results[0] == results[1], env_id
        seen: list[str] = []
        for action in action_stream(memo, rng, 30):
            seen.append(action)
            for text in (action, seen[int(rng.integers(len(seen)))]):
                fresh._moves.clear()
                results = [env.step(text) for env in (memo, fresh)]
                assert results[0] == results[1], f"{env_id}: the parse of {text!r} is stateful"
                if results[0][2]:
                    break
            if results[0][2]:
                break


def check_budgets(env_id: str) -> None:
    """``TurnBudget(gym.make(id), T)`` gives exactly T turns, and a mixed regime draws T."""
    make_id = resolve_env_id(env_id)
    for budget in (1, 3):
        env = TurnBudget(gym.make(make_id), budget)
        env.reset(seed=0, options={TASK_ID: 0})
        for turn in range(1, budget + 1):
            *_, terminated, truncated, info = env.step("zzz not an action zzz")
            assert not terminated, f"{env_id}: an invalid action ended the episode"
            assert truncated is (turn == budget), f"{env_id}: T={budget} truncated at {turn}"
            assert info[TURNS_LEFT] == budget - turn, (env_id, budget, turn)
    mix = make_stack(make_id, BudgetRegime.mixed([2, 4]))  # the one BudgetMix builder
    drawn = {mix.reset(seed=seed, options={TASK_ID: 0})[1][BUDGET] for seed in range(12)}
    assert drawn == {2, 4}, f"{env_id}: BudgetMix drew {drawn}"


#: Every check, in the order :func:`check_family` runs them.
CHECKS: tuple[Callable[[str], None], ...] = (
    check_checker, check_spaces, check_render, check_determinism, check_pickling,
    check_any_string, check_non_str_action, check_invalid_action, check_bad_task_ids,
    check_task_ids, check_oracle, check_reward, check_docstring, check_task_supply,
    check_parse_memo, check_budgets,
)  # fmt: skip


def check_family(env_id: str, skip: Sequence[str] = ()) -> None:
    """Run every check in :data:`CHECKS` on ``env_id`` (but those named in ``skip``).

    Raises:
        ConformanceError: listing every failed check with its reason, one per line.
    """
    failures = []
    for check in CHECKS:
        if check.__name__ in skip:
            continue
        try:
            check(env_id)
        except Exception as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            failures.append(f"{check.__name__}: {type(error).__name__}: {reason}")
    if failures:
        raise ConformanceError(f"{env_id} breaks the env contract:\n" + "\n".join(failures))


def conformance_parameters(env_ids: Sequence[str], checks: Sequence[Callable] = CHECKS) -> Any:
    """Return ``pytest.mark.parametrize(("env_id", "check"), ...)`` over ids and checks.

    Each (id, check) pair is one test, named ``<id>-<check>``, so a failure
    names both.  Needs pytest (imported here, not by this module).
    """
    import pytest

    pairs = [(env_id, check) for env_id in env_ids for check in checks]
    names = [f"{env_id}-{check.__name__}" for env_id, check in pairs]
    return pytest.mark.parametrize(("env_id", "check"), pairs, ids=names)
