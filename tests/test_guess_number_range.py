"""GuessNumber-Range: a study env and split where bisection transfers and a memorised prior not.

The checks a split must pass before a study uses it (``docs/envs/guess_number.md``):
the held-out tasks are new instances, they are as hard as the training ones
(the same distribution of oracle turns, by a permutation test), and a policy
that plays the training instances' empirical prior gains nothing on them over
the interval guesser, although it gains a lot on the training tasks.
"""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest

import agent_envs  # noqa: F401
from agent_envs.evaluation import PerEpisode, evaluate
from agent_envs.splits import instance_split, oracle_turns_test
from baselines.simple_agents import IntervalGuesser, PriorGuesser
from wrappers.protocol import TASK_ID

ENV = "agent_envs/GuessNumber-Range-v0"
BUDGETS = [1, 2, 3, 4, 5, 6, 8]


@pytest.fixture(scope="module")
def split():
    return instance_split(ENV, 1000, 300)


def instances(task_ids):
    env = gym.make(ENV).unwrapped
    found = []
    for task_id in task_ids:
        env.reset(options={TASK_ID: task_id})
        found.append(tuple(env.task))
    return found


def test_each_task_states_its_own_range_and_a_guess_outside_it_is_invalid():
    env = gym.make(ENV)
    observation, _ = env.reset(seed=0, options={TASK_ID: 3})
    low, high, secret = env.unwrapped.task
    assert f"between {low} and {high}." in observation.splitlines()[0]
    assert 10 <= high - low + 1 <= 40 and low <= secret <= high
    assert env.unwrapped.admissible_actions() == [str(n) for n in range(low, high + 1)]
    _, _, _, _, info = env.step(str(low - 1))
    assert not info["valid_action"]
    turns, played, terminated = env.unwrapped.oracle_turns(), 0, False
    while not terminated:
        _, reward, terminated, _, info = env.step(env.unwrapped.oracle_actions()[0])
        played += 1
    assert (reward, info["success"], played) == (1.0, True, turns)


def test_it_has_thousands_of_distinct_instances():
    assert len(set(instances(range(3000)))) > 2800
    assert gym.make(ENV).unwrapped.task_supply == 46_500


def test_the_split_is_disjoint_as_instances_and_balanced_in_oracle_turns(split):
    train, held_out = split
    assert len(set(instances(train + held_out))) == len(train) + len(held_out) == 1300
    assert min(held_out) >= 10_000
    balance = oracle_turns_test(ENV, train, held_out)
    assert balance["p"] > 0.2, balance
    assert abs(balance["mean_a"] - balance["mean_b"]) < 0.15
    assert balance == oracle_turns_test(ENV, train, held_out)  # deterministic


def pass_at_1(policy, tasks) -> np.ndarray:
    """Per task, Pass@(1,T) averaged over the T grid (4 attempts)."""
    result = evaluate(policy, ENV, ks=[1], budgets=BUDGETS, tasks=tasks, samples=4, n_bootstrap=10)
    return (result.success_counts / result.samples).mean(axis=1)


def test_a_memorised_prior_gains_nothing_on_held_out_tasks_over_the_interval_guesser(split):
    train, held_out = split
    prior = PerEpisode(functools.partial(PriorGuesser, instances(train)))
    gains = {}
    for name, tasks in (("train", train[:300]), ("held out", held_out)):
        difference = pass_at_1(prior, tasks) - pass_at_1(IntervalGuesser(), tasks)
        error = difference.std(ddof=1) / np.sqrt(len(difference))
        gains[name] = (difference.mean(), difference.mean() + 1.96 * error)
    # Memorising pays on the instances it memorised: the check has power ...
    assert gains["train"][0] > 0.4, gains
    # ... and buys nothing on new ones: a gain of 2 points is excluded.
    assert gains["held out"][1] < 0.02, gains


def test_on_guess_number_20_the_same_split_is_refused():
    with pytest.raises(ValueError, match="too few distinct tasks"):
        instance_split("agent_envs/GuessNumber-20-v0", 15, 10)


def test_a_split_leaves_out_the_instances_of_excluded_tasks():
    train, held_out = instance_split(ENV, 20, 5)
    excluded = [train[3], held_out[0]]
    train2, held_out2 = instance_split(ENV, 20, 5, exclude=excluded)
    assert not set(instances(excluded)) & set(instances(train2 + held_out2))
    # The other ids stay: only the excluded instances' ids are skipped.
    assert train2[:3] == train[:3] and train[3] not in train2
