"""The real-model study v4: each of the paper's claims tested where it can fail.

Declared in code before any run; :func:`design` is the whole of it, one
JSON object whose hash (:func:`studies.preregistration.design_hash`) the
launch records and every sitting checks.  What v3 (``docs/real_model_study``)
could not conclude, and what this version changes:

* **Tasks a walk cannot win.** v3's ranges (10-40 numbers) let a one-step walk
  succeed within the budget, so a gain that grows with T followed from the
  walk itself.  Here ``ENV_ID`` draws ranges of 64-99 numbers: bisection
  needs at most 7 guesses (5.4 on average), a walk from one end covers about
  20 numbers in 20 turns.
* **Budgets** ``T_GRID`` run from below the oracle's turns (3, 5) to three
  times them (20).  The hidden budget lets one episode at T=20 answer every
  T.  No regime trains at 3, 5 or 10 (claim 3 is tested there too).
* **Regimes** (``REGIMES``), 8 training seeds each: ``base``; ``short`` (T=7,
  the oracle's worst case); ``long`` (T=20); ``mix`` (BudgetMix over 7, 14,
  20); ``long-pr``, long with the process reward (the paper's process
  supervision: the share of the oracle distance covered,
  :func:`baselines.llm.training.rewards.process_reward`, coefficient
  ``PROCESS_REWARD``); ``validity``, the long settings with a reward for valid
  replies only, which separates what the task's reward teaches from what the
  format alone teaches.
* **Primary tests** (``PRIMARY``), each a paired sign-flip test over the
  training seeds, Holm over all five:

  1. claim 1: long's gain over base *as a share of the room the base leaves
     below the oracle* grows from T=5 to T=20 (K=1);
  2. claim 2: against the validity control, long's step-quality gain off the
     oracle's path (right after a mistake) exceeds its gain on it;
  3. claim 3, as non-inferiority: at every T of the grid, mix is at least the
     better of short and long minus ``MARGIN`` (one-sided; intersection-union
     over T, its p the largest);
  4. process supervision: long-pr minus long in the share of bisecting moves;
  5. process supervision: long-pr minus long in Pass@(1,T), mean over the grid.

* **One verdict rule** (:func:`verdict`) for every test: *supported* where the
  Holm-adjusted p is below ``ALPHA`` in the paper's direction, *contradicted*
  where it is below ``ALPHA`` against it, else *not supported*.  The process
  tests, where the paper states no direction, read *higher*, *lower* or *no
  difference shown*.  Every other figure is secondary or post hoc, and says so.
* **Gates** (``GATES``), each computed from these thresholds and written once:
  calibration (the pilot, on training tasks, before launch) and learning
  (the first two seeds' long runs, before the rest).

The model, prompt and update are v3's: SmolLM2-135M-Instruct, LoRA rank 16 on
``q_proj`` and ``v_proj`` of every layer, 3 oracle examples, temperature 0.7,
30 GRPO steps of 2 tasks x 8 attempts.  The dtype is bfloat16
(:mod:`baselines.llm.models.precision`), as the learning check
(``docs/real_model_study/bf16-check``) allowed.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from studies.preregistration import function_record
from studies.real_llm.setup import FEW_SHOT, LORA_TARGETS, MAX_NEW_TOKENS, TEMPERATURE

VERSION = "v4"
ENV_ID = "agent_envs/GuessNumber-Wide-Terse-v0"
MODEL = "smollm2-135m"
DTYPE = "bfloat16"
LORA_RANK = 16
SEEDS = 8
TRAIN_TASKS, EVAL_TASKS, EVAL_SAMPLES = 128, 16, 8
T_GRID = (3, 5, 7, 10, 14, 20)
SHORT, LONG, MIX = 7, 20, (7, 14, 20)
KS = (1, 2, 4, 8)
STEPS, K, TASKS_PER_STEP = 30, 8, 2
LEARNING_RATE, BETA, MICRO_BATCH = 5e-4, 0.0, 4
#: The collapse guard is off, as in v3: every run plays its STEPS.
COLLAPSE_INVALID = 1.0
#: The process reward's coefficient: a full episode's progress counts half a success.
PROCESS_REWARD = 0.5
#: Shared reference states per held-out task (v3 had 4: 21 recovery states in all).
STEP_QUALITY_STATES = 8
STEP_QUALITY_SEED = zlib.crc32(f"real_model_{VERSION}/{ENV_ID}".encode()) & 0x7FFFFFFF
ALPHA = 0.05
#: Claim 3's non-inferiority margin, in Pass@(1,T).
MARGIN = 0.075
#: Claim 1's budgets: the tight T (the oracle solves 41% of tasks) and the generous T.
CLAIM_1_T = (5, 20)
#: Claim 1's room below the oracle is floored here, so a near-zero room cannot blow up a share.
ROOM_FLOOR = 0.05

#: name -> the training budgets (``None``: the base model, untrained), process-reward
#: coefficient and reward.  Every trained regime plays the same steps and episodes.
REGIMES: dict[str, dict[str, Any] | None] = {
    "base": None,
    "short": {"budgets": [SHORT], "process_reward": 0.0, "reward": "outcome"},
    "long": {"budgets": [LONG], "process_reward": 0.0, "reward": "outcome"},
    "mix": {"budgets": list(MIX), "process_reward": 0.0, "reward": "outcome"},
    "long-pr": {"budgets": [LONG], "process_reward": PROCESS_REWARD, "reward": "outcome"},
    "validity": {"budgets": [LONG], "process_reward": 0.0, "reward": "validity"},
}

#: The gates, computed from these thresholds and written once.
GATES = {
    "calibration": {
        # The base model on training tasks: room to improve at the long T, a budget
        # that binds at the short T, and a GRPO signal at both training budgets.
        "tasks": 32,
        "samples": 8,
        "long_between": [0.10, 0.50],
        "short_at_most_share_of_long": 0.5,
        "mixed_groups_at_least": 0.25,
        "group_size": K,
    },
    "learning": {"seeds": [0, 1], "min_gain_at_long_t": 0.05},
}


# ----------------------------------------------------------------- statistics
def pass1(record: Mapping[str, Any]) -> np.ndarray:
    """Per (task, T): a run record's Pass@(1,T) estimate."""
    result = record["result"]
    return np.asarray(result["success_counts"], dtype=float) / result["settings"]["samples"]


def _column(record: Mapping[str, Any], t: int) -> int:
    return list(record["result"]["settings"]["budgets"]).index(t)


def claim_1(runs: Mapping[str, Sequence[Mapping]], oracle: Mapping[int, float]) -> np.ndarray:
    """Per seed: long's share of the room at ``CLAIM_1_T[1]`` minus its share at ``CLAIM_1_T[0]``.

    share(T) = (long - base) / max(oracle - base, ``ROOM_FLOOR``), each a mean
    Pass@(1,T) over the held-out tasks; ``oracle[T]`` is the oracle's.
    """
    values = []
    for long_, base in zip(runs["long"], runs["base"], strict=True):
        shares = []
        for t in CLAIM_1_T:
            b = pass1(base)[:, _column(base, t)].mean()
            gain = pass1(long_)[:, _column(long_, t)].mean() - b
            shares.append(gain / max(oracle[t] - b, ROOM_FLOOR))
        values.append(shares[1] - shares[0])
    return np.array(values)


def _step_quality(record: Mapping[str, Any], part: str) -> float:
    return float(record["result"]["diagnostics"]["step_quality"][f"{part}_optimal_rate"])


def claim_2(runs: Mapping[str, Sequence[Mapping]], oracle: Mapping[int, float]) -> np.ndarray:
    """Per seed: (long - validity) in step quality off the oracle's path, minus on it."""
    values = []
    for long_, control in zip(runs["long"], runs["validity"], strict=True):
        off = _step_quality(long_, "recovery") - _step_quality(control, "recovery")
        on = _step_quality(long_, "on_path") - _step_quality(control, "on_path")
        values.append(off - on)
    return np.array(values)


def claim_3(runs: Mapping[str, Sequence[Mapping]], oracle: Mapping[int, float]) -> np.ndarray:
    """Per (seed, T): mix minus the better of short and long, plus ``MARGIN``.

    The better of the two at each T is the one with the higher mean Pass@(1,T)
    over seeds and tasks; non-inferiority holds at T where this is > 0.
    """
    mean = {n: np.array([pass1(r).mean(axis=0) for r in runs[n]]) for n in ("mix", "short", "long")}
    better = np.where(mean["short"].mean(axis=0) >= mean["long"].mean(axis=0), 0, 1)
    rival = np.where(better == 0, mean["short"], mean["long"])
    return mean["mix"] - rival + MARGIN


def _bisect_share(record: Mapping[str, Any]) -> float:
    return float(record["moves"]["bisect"])


def process_bisection(runs: Mapping[str, Sequence[Mapping]], oracle: Mapping[int, float]):
    """Per seed: long-pr minus long in the share of moves that bisect the interval."""
    pairs = zip(runs["long-pr"], runs["long"], strict=True)
    return np.array([_bisect_share(a) - _bisect_share(b) for a, b in pairs])


def process_pass(runs: Mapping[str, Sequence[Mapping]], oracle: Mapping[int, float]):
    """Per seed: long-pr minus long in Pass@(1,T), mean over tasks and the T grid."""
    pairs = zip(runs["long-pr"], runs["long"], strict=True)
    return np.array([pass1(a).mean() - pass1(b).mean() for a, b in pairs])


def sign_flip_p(values: np.ndarray, alternative: str) -> float:
    """The exact paired sign-flip p-value of mean(values) over seeds.

    ``alternative`` ``"two-sided"``: |mean| at least as large under random
    signs; ``"greater"``: mean at least as large.  Every one of the 2^n sign
    vectors is enumerated (n <= 16).
    """
    values = np.asarray(values, dtype=float)
    if not 1 <= len(values) <= 16 or not np.all(np.isfinite(values)):
        raise ValueError(f"sign_flip_p needs 1 to 16 finite values, got {values!r}")
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(values))))
    means = signs @ values / len(values)
    observed = values.mean()
    tolerance = 1e-12  # floating-point ties count as ties
    if alternative == "two-sided":
        return float(np.mean(np.abs(means) >= abs(observed) - tolerance))
    if alternative == "greater":
        return float(np.mean(means >= observed - tolerance))
    raise ValueError(f"alternative must be 'two-sided' or 'greater', got {alternative!r}")


def primary_p(values: np.ndarray, alternative: str) -> float:
    """A primary test's p: per seed values, or per (seed, T) for an intersection-union test.

    With a T axis, every T must reject: the p is the largest of the per-T p's.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        return sign_flip_p(values, alternative)
    return max(sign_flip_p(values[:, column], alternative) for column in range(values.shape[1]))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given."""
    order = np.argsort(p_values, kind="stable")
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def verdict(estimate: float, holm_p: float, direction: int) -> str:
    """The one verdict rule: the word for a test's estimate and Holm p.

    ``direction`` is the paper's sign (+1 or -1), or 0 where the paper states
    none (then the words are *higher*, *lower* and *no difference shown*).
    """
    if not holm_p < ALPHA or estimate == 0:
        return "not supported" if direction else "no difference shown"
    if direction == 0:
        return "higher" if estimate > 0 else "lower"
    return "supported" if np.sign(estimate) == direction else "contradicted"


#: name -> the regimes it reads, its per-seed statistic, the alternative and the paper's sign.
PRIMARY: dict[str, dict[str, Any]] = {
    "claim 1: long's share of the room grows from T=5 to T=20": {
        "regimes": ("long", "base"),
        "statistic": claim_1,
        "alternative": "two-sided",
        "direction": 1,
    },
    "claim 2: off-path step-quality gain over the validity control exceeds the on-path gain": {
        "regimes": ("long", "validity"),
        "statistic": claim_2,
        "alternative": "two-sided",
        "direction": 1,
    },
    "claim 3: mix non-inferior to the better of short and long at every T": {
        "regimes": ("mix", "short", "long"),
        "statistic": claim_3,
        "alternative": "greater",
        "direction": 1,
    },
    "process supervision: long-pr - long, bisecting moves": {
        "regimes": ("long-pr", "long"),
        "statistic": process_bisection,
        "alternative": "two-sided",
        "direction": 0,
    },
    "process supervision: long-pr - long, Pass@(1,T) over the grid": {
        "regimes": ("long-pr", "long"),
        "statistic": process_pass,
        "alternative": "two-sided",
        "direction": 0,
    },
}

#: Secondary figures, none of them a primary test's: reported with their own labels.
SECONDARY = (
    "the K=8 surfaces of every regime",
    "the move shares of every regime (bisect, step, repeat, invalid, other)",
    "recovery beside step quality, every regime against base and against validity",
)


def primary_results(
    runs: Mapping[str, Sequence[Mapping]], oracle: Mapping[int, float]
) -> dict[str, dict[str, Any]]:
    """Every primary test's per-seed values, estimate, p, Holm p and verdict word."""
    cells = {}
    for name, test in PRIMARY.items():
        values = test["statistic"](runs, oracle)
        estimate = float(np.mean(values)) if values.ndim == 1 else float(values.mean(0).min())
        cells[name] = {
            "per_seed": values.tolist(),
            "estimate": estimate,
            "p": primary_p(values, test["alternative"]),
        }
    for cell, adjusted in zip(cells.values(), holm([c["p"] for c in cells.values()]), strict=True):
        cell["holm_p"] = adjusted
    for name, cell in cells.items():
        direction = PRIMARY[name]["direction"]
        # Claim 3's estimate is its smallest mean over T (margin included): > 0 is non-inferior.
        cell["verdict"] = verdict(cell["estimate"], cell["holm_p"], direction)
    return cells


# ---------------------------------------------------------------------- gates
def calibration_gate(per_task: Mapping[int, Sequence[float]]) -> dict[str, Any]:
    """The calibration gate, from the pilot's per-task Pass@(1,T) on training tasks.

    ``per_task[T]`` holds each pilot task's success share within T.  A GRPO
    group of ``group_size`` attempts at a task has a learning signal when it
    holds a success and a failure; its expected share is averaged over tasks.
    """
    gate = GATES["calibration"]
    mean = {t: float(np.mean(values)) for t, values in per_task.items()}
    low, high = gate["long_between"]
    n = gate["group_size"]
    mixed = {
        t: float(np.mean([1 - p**n - (1 - p) ** n for p in per_task[t]])) for t in (SHORT, LONG)
    }
    checks = {
        "long in band": low <= mean[LONG] <= high,
        "short binds": mean[SHORT] <= gate["short_at_most_share_of_long"] * mean[LONG],
        "signal at short T": mixed[SHORT] >= gate["mixed_groups_at_least"],
        "signal at long T": mixed[LONG] >= gate["mixed_groups_at_least"],
    }
    return {"pass1": mean, "mixed_groups": mixed, "checks": checks, "passed": all(checks.values())}


def learning_gate(runs: Mapping[str, Sequence[Mapping]]) -> dict[str, Any]:
    """The learning gate: long's held-out gain over base at the long T, mean over its seeds."""
    gate = GATES["learning"]
    gains = []
    for seed in gate["seeds"]:
        long_, base = runs["long"][seed], runs["base"][seed]
        column = _column(long_, LONG)
        gains.append(float(pass1(long_)[:, column].mean() - pass1(base)[:, column].mean()))
    gain = float(np.mean(gains))
    return {"gains": gains, "gain": gain, "passed": gain >= gate["min_gain_at_long_t"]}


def design() -> dict[str, Any]:
    """The whole design as one JSON object: what the launch hashes and every sitting checks."""
    return {
        "version": VERSION,
        "env_id": ENV_ID,
        "model": MODEL,
        "dtype": DTYPE,
        "lora": {"rank": LORA_RANK, "targets": list(LORA_TARGETS), "layers": None},
        "prompt": {
            "few_shot": FEW_SHOT,
            "temperature": TEMPERATURE,
            "max_new_tokens": MAX_NEW_TOKENS,
        },
        "seeds": SEEDS,
        "tasks": {"train": TRAIN_TASKS, "held_out": EVAL_TASKS, "samples": EVAL_SAMPLES},
        "t_grid": list(T_GRID),
        "ks": list(KS),
        "grpo": {
            "steps": STEPS,
            "k": K,
            "tasks_per_step": TASKS_PER_STEP,
            "learning_rate": LEARNING_RATE,
            "beta": BETA,
            "micro_batch": MICRO_BATCH,
            "collapse_invalid": COLLAPSE_INVALID,
        },
        "regimes": REGIMES,
        "step_quality": {"states_per_task": STEP_QUALITY_STATES, "seed": STEP_QUALITY_SEED},
        "alpha": ALPHA,
        "margin": MARGIN,
        "claim_1_t": list(CLAIM_1_T),
        "room_floor": ROOM_FLOOR,
        "primary": {
            name: {
                "regimes": list(test["regimes"]),
                "statistic": function_record(test["statistic"]),
                "alternative": test["alternative"],
                "direction": test["direction"],
            }
            for name, test in PRIMARY.items()
        },
        "test": {
            "sign_flip": function_record(sign_flip_p),
            "combine": function_record(primary_p),
            "holm": function_record(holm),
            "primary": function_record(primary_results),
        },
        "verdict": function_record(verdict),
        "helpers": [function_record(f) for f in (pass1, _column, _step_quality, _bisect_share)],
        "gate_rules": {
            "calibration": function_record(calibration_gate),
            "learning": function_record(learning_gate),
        },
        "secondary": list(SECONDARY),
        "gates": GATES,
    }
