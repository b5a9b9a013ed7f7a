"""Seeds have one owner, ``wrappers.utils.seeding``, and every stream still draws what it drew."""

from __future__ import annotations

import ast
import pathlib
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import seeding as gym_seeding
from gymnasium.utils.env_checker import check_env

from agent_envs.core import MAX_TASK_ID
from agent_envs.statistics import bootstrap_rng
from wrappers import BudgetMix, TaskPool
from wrappers.utils import seeding
from wrappers.utils.seeding import episode_seed, sampling_seed, turn_hash

ROOT = pathlib.Path(__file__).resolve().parents[1]
GUESS = "agent_envs/GuessNumber-v0"


def test_every_salt_is_distinct_and_only_the_seeding_module_spells_one():
    salts = {name: value for name, value in vars(seeding).items() if name.isupper()}
    assert len(salts) >= 9 and len(set(salts.values())) == len(salts)
    # A salt is a long hex literal; SeedSequence is how seeds are derived.
    spelled = re.compile(r"\b0x[0-9a-fA-F]{4,}\b|SeedSequence")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for package in ("agent_envs", "wrappers", "baselines")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != ROOT / "wrappers" / "utils" / "seeding.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if spelled.search(line)
    ]
    assert found == []


def _int_literals(path: pathlib.Path, values: set[int]) -> list[int]:
    """Return every int literal in ``path`` that equals one of ``values``, however spelled."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value in values
    ]


def test_no_other_module_spells_a_salts_value():
    """The hex pattern above misses a short salt (``SB3_DEMOS = 0xBC``) or one in decimal."""
    values = {getattr(seeding, name) for name in seeding.__all__ if name.isupper()}
    owner = ROOT / "wrappers" / "utils" / "seeding.py"
    # The scan sees every salt where it is defined, so an empty answer below means something.
    assert sorted(_int_literals(owner, values)) == sorted(values) and len(values) >= 9
    found = [
        f"{path.relative_to(ROOT)}: {value:#x}"
        for package in ("agent_envs", "wrappers", "baselines")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != owner
        for value in _int_literals(path, values)
    ]
    assert found == []


def test_the_streams_draw_exactly_what_they_drew_before_they_moved_here():
    # Figures from the code before the seeds had one module: a changed salt, key
    # order or hash would change them, and with them every stored result.
    assert (episode_seed(0, 3, 1), episode_seed(7, 0, 0)) == (3679268941, 2083679832)
    assert turn_hash(1, 2, 3, 4) == 15374388949593934587
    assert sampling_seed(5, 123, 2, "hello") == 520252306
    assert sampling_seed(5, None, 0, "x") == 363649271
    assert bootstrap_rng(3).integers(1 << 30) == 179876644
    mix = BudgetMix(gym.make(GUESS), budgets=[3, 5, 7, 9, 11])
    budgets = [mix.reset(seed=4)[1]["budget"]] + [mix.reset()[1]["budget"] for _ in range(5)]
    assert budgets == [9, 5, 7, 3, 11, 7]
    pool = TaskPool(gym.make(GUESS), task_ids=list(range(100)))
    tasks = [pool.reset(seed=9)[1]["task_id"]] + [pool.reset()[1]["task_id"] for _ in range(5)]
    assert tasks == [81, 84, 35, 28, 13, 58]


def test_first_integer_is_the_first_draw_of_the_same_stream():
    # Lemire's method rejects draws below (2**32 - high) % high: highs near 2**31
    # and small ones exercise the rejection and the second half of a 64-bit output.
    highs = (1, 3, 7, 100, 2**31 - 1, 2**31 + 12_345, 2**32)
    keys = [(seed,) for seed in range(1500)] + [(2**32,), (2**64 + 5,), (0,)]
    keys += [(seeding.STEP_QUALITY_STATES, seed, 3) for seed in range(300)]
    for key in keys:
        for high in highs:
            assert seeding.first_integer(high, *key) == np.random.default_rng(list(key)).integers(
                0, high
            ), (key, high)
    # Outside the 32-bit range it asks numpy, and numpy's own errors stay.
    assert seeding.first_integer(2**40, 9) == np.random.default_rng([9]).integers(0, 2**40)
    with pytest.raises(ValueError):
        seeding.first_integer(10, -1)


def test_stream_and_the_episode_generator_draw_what_numpy_and_gymnasium_draw():
    for key in [(0,), (7,), (2**32,), (2**64 + 5,), (0xB0075, 3), (1, 0, 2**33 + 1)]:
        assert (seeding.stream(*key).random(4) == np.random.default_rng(list(key)).random(4)).all()
    for seed in (0, 1, 2**31, 2**40):
        ours, theirs = seeding.episode_generator(seed), gym_seeding.np_random(seed)[0]
        assert (ours.integers(0, 1000, 5) == theirs.integers(0, 1000, 5)).all()


def _count_generators(monkeypatch) -> list[str]:
    built: list[str] = []
    for name in ("stream", "episode_generator"):
        real = getattr(seeding, name)

        def counted(*key, _real=real, _name=name):
            built.append(_name)
            return _real(*key)

        monkeypatch.setattr(seeding, name, counted)
    return built


@pytest.mark.parametrize(
    "env_id, by_seed, by_task",
    [
        (GUESS, 0, 0),  # the task id and the secret are first draws: no generator
        ("agent_envs/Hanoi-3-v0", 0, 0),
        ("agent_envs/Sokoban-v0", 1, 1),  # the level generator's stream only
    ],
)
def test_a_reset_builds_at_most_the_generator_its_task_draws_from(
    monkeypatch, env_id, by_seed, by_task
):
    env = gym.make(env_id).unwrapped
    env.reset(seed=0, options={"task_id": 0})
    built = _count_generators(monkeypatch)
    for seed in range(1, 21):
        env.reset(seed=seed)
    assert built.count("stream") <= 20 * by_seed and "episode_generator" not in built
    built.clear()
    for seed in range(1, 21):
        env.reset(seed=seed, options={"task_id": 100 + seed})
    assert built.count("stream") == 20 * by_task and "episode_generator" not in built


def test_the_episode_generator_is_built_on_first_use_from_the_reset_seed(monkeypatch):
    env = gym.make(GUESS).unwrapped
    built = _count_generators(monkeypatch)
    # Given a task id, the episode's generator is Gymnasium's np_random(seed).
    env.reset(seed=11, options={"task_id": 4})
    assert built == [] and env.np_random_seed == 11
    assert env.np_random.random() == gym_seeding.np_random(11)[0].random()
    assert built.count("episode_generator") == 1  # (it is a stream, counted too)
    # Without one, the task id was the generator's first draw, and it goes on from there.
    _, info = env.reset(seed=12)
    reference = gym_seeding.np_random(12)[0]
    assert info["task_id"] == reference.integers(0, MAX_TASK_ID)
    assert env.np_random.random() == reference.random()
    # A reset without a seed draws its task id from where the stream stands.
    env.reset(seed=13)
    reference = gym_seeding.np_random(13)[0]
    first = reference.integers(0, MAX_TASK_ID)
    assert env.reset()[1]["task_id"] == reference.integers(0, MAX_TASK_ID) != first
    # A seed Gymnasium refuses is refused with Gymnasium's own error.
    for bad in (-1, 1.5, "3"):
        with pytest.raises(gym.error.Error):
            env.reset(seed=bad)


def test_gymnasiums_checker_accepts_the_lazy_generator():
    for env_id in (GUESS, "agent_envs/FrozenLake-v0", "agent_envs/Sokoban-v0"):
        check_env(gym.make(env_id).unwrapped, skip_render_check=True)
