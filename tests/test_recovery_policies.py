"""Recovery, step quality and decision quality separate four synthetic policies on GuessNumber-20.

The policies read only the interval the env states, and draw from
(episode seed, turn), so every figure is reproducible:

* A bisects with probability 0.8; its first error is another guess inside the
  interval (which usually gets closer); after it, A only wastes turns
  (valid guesses outside the interval, which change nothing).
* A' is A whose error is itself a wasted guess.
* B bisects with probability 0.5, else guesses uniformly inside the interval.
* W guesses 10, then walks one step toward the secret.
* L always guesses the lowest number still possible: steady progress of one
  number a turn from the start, which recovery credits although L never
  bisects (docs/evaluation.md: recovery separates better steps from better
  recovery only when read together with step quality).

An error is recovered only by success or by ending strictly closer to the goal
than both before and right after it, so A, whose errors are followed by
wasted turns only, recovers nothing, although its error itself got closer.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from agent_envs.evaluation import evaluate

ENV = "agent_envs/GuessNumber-20-v0"
TOP = 20
BUDGETS = list(range(1, 13))
_INTERVAL = re.compile(r"between (\d+) and (\d+)")


def _interval(observation: str) -> tuple[int, int]:
    low, high = _INTERVAL.findall(observation)[-1]
    return int(low), int(high)


class Synthetic:
    """Base: parse the interval, draw from (episode seed, turn); one instance per episode."""

    bisect_probability = 1.0

    def __init__(self) -> None:
        self.erred = False
        self.turn = 0

    def rng(self, info: dict) -> np.random.Generator:
        self.turn += 1
        return np.random.default_rng([int(info.get("episode_seed", 0)), self.turn])

    def act(self, observation: str, info: dict) -> str:
        low, high = _interval(observation)
        return str(self.guess(low, high, self.rng(info)))

    @staticmethod
    def wasted(low: int, high: int, rng: np.random.Generator) -> int | None:
        outside = [n for n in range(1, TOP + 1) if not low <= n <= high]
        return int(rng.choice(outside)) if outside else None


class PolicyA(Synthetic):
    def guess(self, low: int, high: int, rng: np.random.Generator) -> int:
        middle = (low + high) // 2
        if self.erred:
            wasted = self.wasted(low, high, rng)
            return middle if wasted is None else wasted
        if rng.random() < 0.8 or low == high:
            return middle
        self.erred = True
        return self.error(low, high, middle, rng)

    def error(self, low: int, high: int, middle: int, rng: np.random.Generator) -> int:
        others = [n for n in range(low, high + 1) if n != middle]
        return int(rng.choice(others))


class PolicyAPrime(PolicyA):
    def error(self, low: int, high: int, middle: int, rng: np.random.Generator) -> int:
        wasted = self.wasted(low, high, rng)
        if wasted is None:  # the whole range is still open: nothing to waste yet
            self.erred = False
            return middle
        return wasted


class PolicyB(Synthetic):
    def guess(self, low: int, high: int, rng: np.random.Generator) -> int:
        if rng.random() < 0.5:
            return (low + high) // 2
        return int(rng.integers(low, high + 1))


class PolicyW(Synthetic):
    def __init__(self) -> None:
        super().__init__()
        self.last: int | None = None

    def guess(self, low: int, high: int, rng: np.random.Generator) -> int:
        if self.last is None:
            self.last = 10
        else:
            self.last += 1 if self.last < low else -1
        return self.last


class PolicyL(Synthetic):
    def guess(self, low: int, high: int, rng: np.random.Generator) -> int:
        return low


POLICIES = {"A": PolicyA, "A'": PolicyAPrime, "B": PolicyB, "W": PolicyW, "L": PolicyL}


def figures(policy: type, step_quality: int = 3) -> dict:
    """Return recovery, success after an error, decision and step quality (per T where per T)."""
    with warnings.catch_warnings():
        # 100 ids of 20 instances, as the check asks: the interval is not the point.
        warnings.filterwarnings("ignore", "agent_envs/GuessNumber-20-v0 has only 20")
        result = _evaluate(policy, step_quality)
    diagnostics = result.diagnostics
    return {
        "recovery": [item["rate"] for item in diagnostics["error_recovery"]],
        "recovered": [
            (item["recovered"], item["recoverable"]) for item in diagnostics["error_recovery"]
        ],
        "success_after_error": [
            item["success_rate"] for item in diagnostics["success_after_error"]
        ],
        "decision_quality": diagnostics["decision_quality"],
        "step_quality": diagnostics["step_quality"]["optimal_rate"],
    }


def _evaluate(policy: type, step_quality: int):
    return evaluate(
        policy,
        ENV,
        ks=[1],
        budgets=BUDGETS,
        tasks=100,
        samples=4,
        step_quality=step_quality,
        n_bootstrap=10,
    )


@pytest.fixture(scope="module")
def measured() -> dict[str, dict]:
    return {name: figures(policy) for name, policy in POLICIES.items()}


def test_a_wasted_turn_after_an_error_that_got_closer_is_no_recovery(measured):
    for name in ("A", "A'"):
        rates = [rate for rate in measured[name]["recovery"] if rate is not None]
        assert rates and max(rates) <= 0.05, (name, measured[name]["recovered"])
    # A's errors are there to be recovered: it makes many, at every T from 2.
    assert measured["A"]["recovered"][-1][1] > 100


def test_a_policy_that_keeps_guessing_inside_the_interval_recovers_more(measured):
    for t in range(1, len(BUDGETS)):
        assert measured["B"]["recovery"][t] > (measured["A"]["recovery"][t] or 0.0)
    assert measured["B"]["recovery"][-1] > 0.9


def test_step_quality_ranks_the_better_single_steps_first(measured):
    # A bisects at 0.8 on the shared states, B at 0.5 plus its lucky uniform guesses.
    assert measured["A"]["step_quality"] > measured["B"]["step_quality"]
    # On-policy decision quality ranks them the other way: it mixes in what
    # A does after its errors, which is why claim 2 is argued from step quality.
    assert measured["A"]["decision_quality"] < measured["B"]["decision_quality"]


def test_the_walker_recovers_by_walking(measured):
    # W's steps of one are errors that get one closer; the next step gets
    # closer still, so its errors are recovered, and it never bisects.
    assert measured["W"]["recovery"][-1] > 0.9
    assert measured["W"]["step_quality"] < measured["B"]["step_quality"]


def test_recovery_credits_steady_progress_of_any_kind(measured):
    # L never bisects (step quality near the share of states where the lowest
    # number is the bisection point), yet most of its errors are "recovered" at
    # T=12, because each next guess ends one closer: recovery alone does not
    # tell better recovery from a slow walk; step quality beside it does.
    assert measured["L"]["recovery"][-1] > 0.7
    assert measured["L"]["step_quality"] < 0.25 < measured["B"]["step_quality"]
