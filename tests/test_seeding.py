"""Seeds have one owner, ``wrappers.seeding``, and every stream still draws what it drew."""

from __future__ import annotations

import pathlib
import re

import gymnasium as gym

from agent_envs.evaluation.result import bootstrap_rng
from wrappers import BudgetMix, TaskPool, seeding
from wrappers.seeding import episode_seed, sampling_seed, turn_hash

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
        if path != ROOT / "wrappers" / "seeding.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if spelled.search(line)
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
