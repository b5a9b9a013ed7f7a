"""BudgetMix: reproducible per-episode budgets, independent across sub-envs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from wrappers import BudgetMix
from wrappers.budget import BudgetDraw
from wrappers.utils.seeding import BUDGET

ENV_ID = "agent_envs/GuessNumber-v0"


def make(budgets=(5, 10, 20), weights=None, visible=False) -> BudgetMix:
    return BudgetMix(gym.make(ENV_ID), budgets=list(budgets), weights=weights, visible=visible)


def test_empirical_frequencies_match_weights():
    env = make(budgets=(2, 4, 8), weights=[0.6, 0.3, 0.1])
    env.reset(seed=123)
    draws = [env.reset()[1]["budget"] for _ in range(6000)]
    counts = np.array([draws.count(b) for b in (2, 4, 8)])
    expected = 6000 * np.array([0.6, 0.3, 0.1])
    # Within 4 binomial standard deviations; the seed makes the draw fixed.
    sd = np.sqrt(6000 * np.array([0.6, 0.3, 0.1]) * np.array([0.4, 0.7, 0.9]))
    assert np.all(np.abs(counts - expected) < 4 * sd)


def test_uniform_by_default():
    env = make(budgets=(3, 6))
    env.reset(seed=0)
    draws = [env.reset()[1]["budget"] for _ in range(4000)]
    assert abs(draws.count(3) - 2000) < 4 * np.sqrt(1000)


def test_seeded_reset_is_reproducible():
    a, b = make(), make()
    seq_a = [a.reset(seed=9)[1]["budget"]] + [a.reset()[1]["budget"] for _ in range(50)]
    seq_b = [b.reset(seed=9)[1]["budget"]] + [b.reset()[1]["budget"] for _ in range(50)]
    assert seq_a == seq_b
    assert len(set(seq_a)) == 3


def test_episode_plays_under_the_sampled_budget():
    env = make(budgets=(2, 3))
    _, info = env.reset(seed=4, options={"task_id": 1})
    budget = info["budget"]
    truncated = False
    for turn in range(1, budget + 1):
        *_, truncated, info = env.step("0")
        assert truncated is (turn == budget)
    assert info["budget"] == budget


def test_forced_budget_option():
    env = make(budgets=(5, 10))
    options = {"budget": 7}
    _, info = env.reset(seed=0, options=options)
    assert info["budget"] == 7 and options == {"budget": 7}


def test_sync_vector_sub_envs_draw_independently():
    envs = gym.vector.SyncVectorEnv([lambda: make(budgets=tuple(range(1, 41))) for _ in range(4)])
    rows = []
    _, infos = envs.reset(seed=0)
    rows.append(tuple(infos["budget"]))
    for seed in range(1, 20):
        _, infos = envs.reset(seed=seed * 10)
        rows.append(tuple(infos["budget"]))
    columns = list(zip(*rows, strict=True))
    assert len(set(columns)) == 4  # no two sub-envs share a budget sequence
    assert all(len(set(row)) > 1 for row in rows[:5])


def test_async_vector_without_shared_memory_matches_sync():
    def make_env():
        return make(budgets=(3, 6, 9), visible=True)

    sync = gym.vector.SyncVectorEnv([make_env for _ in range(3)])
    async_ = gym.vector.AsyncVectorEnv([make_env for _ in range(3)], shared_memory=False)
    try:
        out_s = sync.reset(seed=5, options={"task_id": 7})
        out_a = async_.reset(seed=5, options={"task_id": 7})
        assert list(out_s[0]) == list(out_a[0])
        assert list(out_s[1]["budget"]) == list(out_a[1]["budget"])
        for actions in (["50", "25", "x"], ["1", "99", "50"], ["0", "0", "0"]):
            step_s, step_a = sync.step(actions), async_.step(actions)
            assert list(step_s[0]) == list(step_a[0])
            for left, right in zip(step_s[1:4], step_a[1:4], strict=True):
                assert np.array_equal(left, right)
            assert list(step_s[4]["turns_left"]) == list(step_a[4]["turns_left"])
    finally:
        async_.close()
        sync.close()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"budgets": []}, ValueError, "must not be empty"),
        ({"budgets": [5, 0]}, ValueError, "every budget"),
        ({"budgets": [5, 2.5]}, TypeError, "every budget"),
        ({"budgets": "5,10"}, TypeError, "sequence of ints"),
        ({"budgets": [5, 10], "weights": [1.0]}, ValueError, "weights has 1"),
        ({"budgets": [5, 10], "weights": [1.0, -1.0]}, ValueError, "non-negative"),
        ({"budgets": [5, 10], "weights": [0.0, 0.0]}, ValueError, "all be zero"),
        ({"budgets": [5, 10], "weights": [1.0, float("nan")]}, ValueError, "finite"),
        ({"budgets": [5, 10], "weights": [float("inf"), 1.0]}, ValueError, "finite"),
        ({"budgets": [5, 10], "weights": []}, ValueError, "weights has 0"),
        ({"budgets": [5, 10], "weights": ["1", "2"]}, TypeError, "weights must be numbers"),
        ({"budgets": [5, 10], "weights": [True, 1]}, TypeError, "weights must be numbers"),
        ({"budgets": [5, 10], "weights": [10**400, 1]}, ValueError, "finite and non-negative"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        BudgetMix(gym.make(ENV_ID), **kwargs)


def test_rebuilds_from_spec():
    env = make(budgets=(4, 8), weights=[1.0, 3.0], visible=True)
    rebuilt = gym.make(env.spec)
    assert isinstance(rebuilt, BudgetMix)
    assert rebuilt.budgets == (4, 8)
    assert np.allclose(rebuilt.weights, [0.25, 0.75])
    assert rebuilt.visible is True
    assert rebuilt.reset(seed=3) == env.reset(seed=3)


def test_huge_and_tiny_weights_normalise_instead_of_overflowing():
    """Weights of 1e308 used to sum to inf and fail inside numpy on reset."""
    env = make(budgets=(4, 8), weights=[1e308, 1e308])
    assert env.weights.tolist() == [0.5, 0.5]
    assert env.reset(seed=0)[1]["budget"] in (4, 8)
    assert BudgetDraw([4, 8], [1e308, 3e307]).probabilities == pytest.approx((10 / 13, 3 / 13))
    assert make(budgets=(4, 8), weights=[5e-324, 0.0]).weights.tolist() == [1.0, 0.0]


@pytest.mark.parametrize(
    ("weights", "seed", "expected"),
    [  # drawn before BudgetDraw took over the draw: the sequences must not change
        (None, 0, [2, 8, 4, 2, 8, 4, 2, 8, 4, 4, 2, 2]),
        (None, 7, [2, 4, 2, 4, 2, 8, 2, 8, 4, 2, 4, 2]),
        ([0.6, 0.3, 0.1], 0, [2, 4, 2, 2, 8, 2, 2, 4, 2, 4, 2, 2]),
        ([0.6, 0.3, 0.1], 7, [2, 2, 2, 2, 2, 4, 2, 4, 2, 2, 2, 2]),
        ([1e308, 1e308, 1.0], 0, [2, 4, 4, 2, 4, 2, 2, 4, 4, 4, 2, 2]),
    ],
)
def test_drawn_budgets_are_unchanged_for_existing_seeds(weights, seed, expected):
    env = make(budgets=(2, 4, 8), weights=weights)
    env.reset(seed=seed)
    drawn = [env.budget]
    for _ in range(len(expected) - 1):
        env.reset()
        drawn.append(env.budget)
    assert drawn == expected


def numpy_budgets(budgets, probabilities, seed, count):
    """The first ``count`` budgets of ``seed``, drawn with numpy alone, as the docs define them.

    The stream is ``default_rng([BUDGET, seed])`` and each draw is one
    ``choice`` of an index with the normalised weights: nothing of ``wrappers``
    but the salt.
    """
    rng = np.random.default_rng([BUDGET, seed])
    return [budgets[int(rng.choice(len(budgets), p=probabilities))] for _ in range(count)]


def reset_budgets(env, seed, count):
    """Reset ``env`` with ``seed`` once, then ``count - 1`` times unseeded; the budgets drawn."""
    drawn = [env.reset(seed=seed)[1]["budget"]]
    drawn += [env.reset()[1]["budget"] for _ in range(count - 1)]
    return drawn


def test_budget_mix_draws_the_numpy_stream_of_its_seed_with_the_normalised_weights():
    env = make(budgets=(2, 4, 8), weights=[5.0, 3.0, 2.0])
    assert reset_budgets(env, 11, 20) == numpy_budgets((2, 4, 8), [0.5, 0.3, 0.2], 11, 20)


def test_every_seeded_reset_restarts_the_budget_stream_not_only_the_first():
    env = make(budgets=(2, 4, 8))
    uniform = [1 / 3] * 3
    for seed in (3, 5, 3):
        assert reset_budgets(env, seed, 12) == numpy_budgets((2, 4, 8), uniform, seed, 12)
