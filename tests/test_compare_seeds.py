"""compare() at the seed level: hierarchical bootstrap and a seed-level paired test."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agent_envs.cli import main
from agent_envs.evaluation import EvalResult, EvalSettings, compare
from agent_envs.statistics import (
    bootstrap_means,
    diagnostic_family,
    hierarchical_bootstrap,
    holm,
    holm_family,
    min_p_value,
    paired_family,
    paired_permutation_test,
    paired_seed_differences,
    percentile_interval,
    task_sampler,
    unpaired_permutation_test,
)


def fake(successes, samples=4, agent="A", tasks=None):
    """A one-cell (K=1, T=10) result whose task i had ``successes[i]`` of ``samples``."""
    counts = np.array(successes, dtype=np.int64)[:, None]
    surface = np.array([[counts.mean() / samples]])
    settings = EvalSettings(
        ks=[1],
        budgets=[10],
        tasks=list(tasks if tasks is not None else range(len(successes))),
        samples=samples,
        n_bootstrap=400,
        env_name="agent_envs/GuessNumber-v0",
        agent_name=agent,
        mode="hidden",
    )
    return EvalResult(
        settings=settings,
        surface=surface,
        ci_low=surface,
        ci_high=surface,
        success_counts=counts,
    )


def seeds(levels, agent, tasks=8):
    """One result per seed; seed s solves ``levels[s]`` of 4 attempts at every task."""
    return [fake([level] * tasks, agent=agent) for level in levels]


# ------------------------------------------------------------------- the tests
def test_the_sign_flip_test_is_exact():
    differences = np.array([0.1, 0.2, 0.3, 0.1, 0.2, 0.4])
    rng = np.random.default_rng(0)
    assert paired_permutation_test(differences, rng) == pytest.approx(2 / 64)
    assert paired_permutation_test(np.array([0.1, -0.1, 0.2, -0.2]), rng) == 1.0
    assert min_p_value(6, 6, paired=True) == 2 / 64
    assert min_p_value(4, 4, paired=True) == 2 / 16
    # Unpaired: 3 vs 3, every split; the observed one is the most extreme.
    a, b = np.array([3.0, 4.0, 5.0]), np.array([0.0, 1.0, 2.0])
    assert unpaired_permutation_test(a, b, rng) == pytest.approx(2 / 20)
    assert min_p_value(3, 3, paired=False) == 2 / 20


def test_beyond_fourteen_seeds_the_monte_carlo_p_counts_the_observed_labelling():
    # Thirty seeds that all agree: of the 2**30 sign patterns only all-plus and
    # all-minus are as extreme, so the 2**14 random draws almost surely hit
    # neither, and the one relabelling always counted is the observed one.
    p = paired_permutation_test(np.ones(30), np.random.default_rng(0))
    assert p == 1 / 2**14


def test_seeds_are_the_unit_so_a_seed_effect_widens_the_interval():
    # Four seeds that differ a lot, eight tasks each: the (seed, task) pairs
    # look like 32 independent draws, but only 4 policies were trained.
    results = seeds([0, 4, 1, 3], "A")
    draws = hierarchical_bootstrap(
        [task_sampler(r.per_task_values()) for r in results], 2000, np.random.default_rng(1)
    )
    low, high = percentile_interval(draws)
    pooled = np.concatenate([r.per_task_values() for r in results])
    naive_low, naive_high = percentile_interval(
        bootstrap_means(pooled, 2000, np.random.default_rng(1))
    )
    assert (high - low).item() > 2 * (naive_high - naive_low).item()
    assert draws.mean() == pytest.approx(0.5, abs=0.03)


def test_fewer_than_five_seeds_per_side_can_never_be_significant():
    difference = compare(seeds([4, 4, 4], "A"), seeds([0, 0, 0], "B"))
    assert difference.unit == "seed" and difference.seeds == [3, 3]
    assert difference.diff[0, 0] == 1.0
    assert difference.ci_low[0, 0] == 1.0  # the interval alone would call it
    assert not difference.can_be_significant
    assert difference.wins().tolist() == [[""]]
    table = difference.table()
    assert "No cell can be significant: fewer than 5 seeds per side (3 vs 3)" in table
    assert "A is better at: nowhere" in table


def test_five_paired_seeds_cannot_reach_p_005_and_the_table_says_why():
    difference = compare(seeds([4] * 5, "A"), seeds([0] * 5, "B"))
    assert difference.min_p_value == 2 / 32
    assert not difference.can_be_significant
    assert "cannot go below p = 0.0625" in difference.table()


def test_six_paired_seeds_that_all_agree_are_significant():
    a = seeds([4, 3, 4, 4, 3, 4], "A")
    b = seeds([0, 1, 0, 1, 0, 0], "B")
    difference = compare(a, b)
    assert difference.test == "paired sign-flip permutation test"
    assert difference.p_value[0, 0] == pytest.approx(2 / 64)
    assert difference.wins().tolist() == [["A"]]
    # Seed 1 of B beating seed 1 of A breaks the all-agree pattern: p = 4/64.
    b[1] = fake([4] * 8, agent="B")
    assert compare(a, b).wins().tolist() == [[""]]


def test_holm_adjusts_within_a_family_step_down():
    # Hand-computed: sorted 0.01, 0.03, 0.04 of m=3 -> 3 x 0.01, max(0.03, 2 x 0.03),
    # max(0.06, 1 x 0.04); nan is no test and stays nan.
    adjusted = holm(np.array([[0.01, 0.04], [0.03, np.nan]]))
    assert adjusted[0].round(6).tolist() == [0.03, 0.06]
    assert adjusted[1, 0].round(6) == 0.06 and np.isnan(adjusted[1, 1])
    assert holm(np.array([0.3, 0.45])).tolist() == [0.6, 0.6]  # monotone step-down
    assert holm(np.array([0.6, 0.2])).tolist() == [0.6, 0.4]
    assert holm(np.array([0.7, 0.9])).tolist() == [1.0, 1.0]  # capped at 1


def test_a_cell_significant_alone_is_not_after_holm_over_its_family():
    a = seeds([4, 3, 4, 4, 3, 4], "A")
    b = seeds([0, 1, 0, 1, 0, 0], "B")
    alone = compare(a, b)
    assert alone.wins().tolist() == [["A"]]  # p = 2/64 = 0.031
    # The same cell in a family of two: Holm's smallest adjusted p is 2 x 0.031.
    family = [compare(a, b), compare(seeds([2] * 6, "C"), seeds([2] * 6, "D"))]
    assert holm_family(family, "secondary") == 2
    assert family[0].p_adjusted[0, 0] == pytest.approx(2 * 2 / 64)
    assert family[0].wins().tolist() == [[""]]
    assert family[0].to_dict()["family"] == "secondary"
    # 6 seeds cannot reach 0.05 in a family of two, and the table says so.
    assert not family[0].can_be_significant and not family[0].to_dict()["can_be_significant"]
    table = family[0].table()
    assert "Holm-adjusted p-values (family 'secondary', 2 tests" in table
    assert "in a Holm family of 2 tests no adjusted p goes below 0.0625" in table
    # 8 seeds can: the family's floor is 2 x 2/256.
    wide = [compare(seeds([4, 3] * 4, "A"), seeds([0, 1] * 4, "B")) for _ in range(2)]
    holm_family(wide, "secondary")
    assert wide[0].can_be_significant and wide[0].wins().tolist() == [["A"]]
    # Rows outside the family's K are untested: null in JSON, never marked.
    assert holm_family([alone], "primary", ks=[2]) == 0
    assert alone.to_dict()["p_adjusted"] == [[None]] and alone.wins().tolist() == [[""]]
    assert not alone.can_be_significant


def test_unequal_seed_counts_use_the_unpaired_test_and_json_round_trips():
    difference = compare(seeds([4, 4, 3, 4, 4, 4], "A"), seeds([0, 1, 0, 0, 1], "B"))
    assert difference.test == "unpaired permutation test" and not difference.paired
    assert difference.p_value[0, 0] < 0.05 and difference.wins().tolist() == [["A"]]
    data = json.loads(json.dumps(difference.to_dict()))
    assert data["unit"] == "seed" and data["seeds"] == [6, 5] and data["can_be_significant"]


def test_it_is_deterministic_for_a_seed():
    a, b = seeds([4, 2, 3], "A"), seeds([1, 2, 0], "B")
    first, again = compare(a, b, seed=3), compare(a, b, seed=3)
    assert np.array_equal(first.ci_low, again.ci_low)
    assert np.array_equal(first.p_value, again.p_value)


def test_a_single_result_per_side_keeps_the_task_level_comparison():
    difference = compare(fake([4] * 8), fake([0] * 8, agent="B"))
    assert difference.unit == "task" and difference.p_value is None
    assert difference.wins().tolist() == [["A"]]
    with pytest.raises(TypeError, match="one per seed"):
        compare([], fake([0] * 8))


def test_the_cli_takes_one_file_per_seed(tmp_path, capsys):
    paths = {}
    # Each seed's result differs: the CLI refuses one result repeated as several seeds.
    for side, levels in (("a", [4, 3, 2]), ("b", [0, 1, 2])):
        names = []
        for index, result in enumerate(seeds(levels, side.upper())):
            path = tmp_path / f"{side}{index}.json"
            result.save(path)
            names.append(str(path))
        paths[side] = ",".join(names)
    assert main(["compare", paths["a"], paths["b"]]) == 0
    out = capsys.readouterr().out
    assert "hierarchical bootstrap" in out and "No cell can be significant" in out


def test_paired_seed_differences_give_exact_p_and_holm_over_the_family():
    rng = lambda: np.random.default_rng(0)  # noqa: E731
    cells = paired_seed_differences(
        {
            "up": ([0.6, 0.7, 0.8, 0.9, 0.7, 0.8], [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]),
            "flat": ([0.5, 0.4, 0.6, 0.5, 0.4, 0.6], [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]),
        },
        rng,
        rng,
    )
    # Six seeds that all agree: the exact sign-flip p is 2 / 2**6; Holm doubles the smaller.
    assert cells["up"]["p"] == pytest.approx(2 / 64) and cells["up"]["holm_p"] == pytest.approx(
        4 / 64
    )
    assert cells["up"]["diff"] == pytest.approx(0.25) and 0 < cells["up"]["low"] < 0.25
    assert cells["flat"]["diff"] == pytest.approx(0.0) and cells["flat"]["p"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="the test pairs seeds"):
        paired_seed_differences({"x": ([1.0, 2.0], [1.0])}, rng, rng)


def test_the_diagnostic_family_pairs_each_group_with_the_baseline_seed_by_seed():
    def run(recovery, quality):
        result = fake([[4, 4]] * 2)
        result.diagnostics = {
            "error_recovery": [{"rate": 0.1}, {"rate": recovery}],
            "step_quality": {"optimal_rate": quality},
        }
        return result

    runs = {
        "warm": [run(0.5, 0.8) for _ in range(6)],
        "long": [run(0.5 + 0.05 * (i + 1), 0.8) for i in range(6)],
        "short": [run(0.4, 0.7) for _ in range(5)],  # another seed count: left out
    }
    cells = diagnostic_family(runs, "warm")
    assert list(cells) == ["long - warm: recovery", "long - warm: step quality"]
    assert cells["long - warm: recovery"]["diff"] == pytest.approx(0.175)  # the largest T's rate
    assert cells["long - warm: recovery"]["holm_p"] == pytest.approx(2 * 2 / 64)
    assert cells["long - warm: step quality"]["diff"] == pytest.approx(0.0)


def test_a_paired_family_difference_is_the_first_regime_minus_the_second():
    # Seed s scores 0.6 + 0.1 s (mean of its two tasks) against a flat 0.5:
    # the mean over six seeds of the differences is 0.85 - 0.5.
    better = [np.array([0.5 + 0.1 * s, 0.7 + 0.1 * s]) for s in range(6)]
    worse = [np.array([0.5, 0.5]) for _ in range(6)]
    cells = paired_family(
        [("better", "worse"), ("worse", "better")], {"better": better, "worse": worse}
    )
    ahead, behind = cells["better - worse"], cells["worse - better"]
    assert ahead["diff"] == pytest.approx(0.35) and 0 < ahead["low"] <= 0.35 <= ahead["high"]
    assert behind["diff"] == pytest.approx(-0.35) and behind["low"] <= -0.35 <= behind["high"] < 0
    assert ahead["p"] == behind["p"] == pytest.approx(2 / 64)  # six seeds that all agree


@pytest.mark.parametrize(
    ("confidence", "error"),
    [
        (0, ValueError),
        (0.0, ValueError),
        (1, ValueError),
        (1.5, ValueError),
        (float("nan"), ValueError),
        (True, TypeError),
        ("0.9", TypeError),
    ],
)
def test_a_confidence_outside_0_1_is_refused_not_read_as_the_default(confidence, error):
    # 0 was read as "not given" (the first result's 0.95); 1.5 failed inside numpy.
    with pytest.raises(error, match="confidence must be a number in \\(0, 1\\)"):
        compare(fake([4] * 8), fake([0] * 8, agent="B"), confidence=confidence)


def test_a_given_confidence_sets_the_interval_and_none_takes_the_first_result_s():
    a, b = fake([4, 3, 2, 4, 1, 0, 4, 2]), fake([0, 1, 2, 0, 1, 0, 3, 0], agent="B")
    narrow, default = compare(a, b, confidence=0.5), compare(a, b)
    assert (narrow.confidence, default.confidence) == (0.5, a.confidence)
    assert narrow.ci_high[0, 0] - narrow.ci_low[0, 0] < default.ci_high[0, 0] - default.ci_low[0, 0]
