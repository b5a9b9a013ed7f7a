"""How fast is the evaluator, and what do the hidden-budget shortcut and batching buy?

Run:  python benchmarks/eval_speed.py [--env agent_envs/GuessNumber-v0] [--repeats 3]

It prints three measurements (best of ``--repeats`` wall times):

1. Overhead.  Episodes/s of ``evaluate`` with ``RandomAgent`` and diagnostics
   off, against a hand-written rollout loop over the very same episodes (same
   seeds, same wrappers, same agent).  Target: the evaluator keeps >= 70% of
   the loop's speed.  The evaluator's time includes building the envs and the
   bootstrap; the success counts of both are checked to be equal.  Then the
   cost of the diagnostics: time with diagnostics on over time with them off
   (target <= 1.5x).
2. Hidden against visible budget on a 6-budget grid.  Hidden mode plays each
   attempt once at max(T); visible mode plays it once per T.  The episode
   ratio is exactly 1/6; the time ratio is about max(T) / sum(T) when episodes
   run to the budget, and 1/6 when they end early.
3. Batching.  A policy with ``act_batch`` against the same policy without it:
   policy calls, and wall time when every call costs a fixed latency (a
   stand-in for one forward pass of a model).
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import agent_envs  # noqa: F401  (registers the ids)
from agent_envs.evaluation import episode_seed, evaluate
from baselines.simple_agents import RandomAgent
from wrappers import ActionHints, TurnBudget

# ----------------------------------------------------------------- settings
TASKS, SAMPLES, BUDGET = 200, 4, 30
GRID_TASKS, GRID_SAMPLES = 50, 4
LATENCY_S, PER_ITEM_S = 0.002, 0.00002  # simulated model cost per call / per sequence


def best_time(function, repeats: int):
    """Return (best wall seconds, last return value) over ``repeats`` calls."""
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - start)
    return best, value


def hand_loop(env_id: str) -> np.ndarray:
    """The minimal rollout loop: same episodes, wrappers and agent as evaluate()."""
    env = ActionHints(TurnBudget(gym.make(env_id), BUDGET), admissible=True, oracle=False)
    agent = RandomAgent()
    successes = np.zeros(TASKS, dtype=np.int64)
    for task in range(TASKS):
        for sample in range(SAMPLES):
            seed = episode_seed(0, task, sample)
            observation, info = env.reset(seed=seed, options={"task_id": task, "budget": BUDGET})
            info["episode_seed"] = seed
            while True:
                observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
                info["episode_seed"] = seed
                if terminated or truncated:
                    successes[task] += bool(info["success"])
                    break
    return successes


def overhead(env_id: str, repeats: int) -> None:
    episodes = TASKS * SAMPLES
    grid = dict(ks=[1], budgets=[BUDGET], tasks=TASKS, samples=SAMPLES)
    loop_s = eval_s = diag_s = float("inf")
    # Interleaved, so that a change in machine load hits all three alike.
    for _ in range(repeats):
        seconds, loop_counts = best_time(lambda: hand_loop(env_id), 1)
        loop_s = min(loop_s, seconds)
        seconds, result = best_time(
            lambda: evaluate(RandomAgent(), env_id, diagnostics=False, **grid), 1
        )
        eval_s = min(eval_s, seconds)
        seconds, _ = best_time(lambda: evaluate(RandomAgent(), env_id, diagnostics=True, **grid), 1)
        diag_s = min(diag_s, seconds)
    assert np.array_equal(np.asarray(result.success_counts)[:, 0], loop_counts), "episodes differ"
    steps = result.timing["env_steps"]
    print(f"1. Overhead on {env_id}: {episodes} episodes, {steps} steps, T={BUDGET}, RandomAgent")
    print(f"   hand-written loop        : {episodes / loop_s:6.0f} episodes/s")
    print(
        f"   evaluate, diagnostics off: {episodes / eval_s:6.0f} episodes/s"
        f"  -> {loop_s / eval_s:.0%} of the loop (target >= 70%)"
    )
    print(
        f"   evaluate, diagnostics on : {episodes / diag_s:6.0f} episodes/s"
        f"  -> {loop_s / diag_s:.0%} of the loop (oracle call every step)"
    )
    print(
        f"   diagnostics cost: {diag_s / eval_s:.2f}x the time of diagnostics off "
        "(target <= 1.5x; RandomAgent errs on almost every step, the worst case for "
        "per-error recovery)"
    )


def modes(env_id: str, repeats: int, budgets: list[int]) -> None:
    grid = dict(
        ks=[1, 2, 4], budgets=budgets, tasks=GRID_TASKS, samples=GRID_SAMPLES, diagnostics=False
    )
    hidden_s, hidden = best_time(lambda: evaluate(RandomAgent(), env_id, **grid), repeats)
    visible_s, visible = best_time(
        lambda: evaluate(RandomAgent(), env_id, visible_budget=True, **grid), repeats
    )
    episodes = hidden.timing["episodes_run"] / visible.timing["episodes_run"]
    steps = hidden.timing["env_steps"] / visible.timing["env_steps"]
    print(f"2. Hidden vs visible budget, T={budgets}, {GRID_TASKS}x{GRID_SAMPLES} attempts:")
    print(f"   wall time: hidden {hidden_s:.2f}s, visible {visible_s:.2f}s")
    print(
        f"   hidden/visible: time {hidden_s / visible_s:.3f}, episodes {episodes:.3f} (1/6), "
        f"env steps {steps:.3f} (max/sum of T = {max(budgets) / sum(budgets):.3f})"
    )


class SimulatedModel:
    """Random actions at a fixed cost per call: a stand-in for an LLM forward pass."""

    required_info = ("admissible_actions",)

    def __init__(self) -> None:
        self._agent = RandomAgent()

    def act(self, observation, info):
        time.sleep(LATENCY_S + PER_ITEM_S)
        return self._agent.act(observation, info)


class SimulatedBatchedModel(SimulatedModel):
    def act_batch(self, observations, infos):
        time.sleep(LATENCY_S + PER_ITEM_S * len(observations))
        return [self._agent.act(o, i) for o, i in zip(observations, infos, strict=True)]


def batching(env_id: str) -> None:
    grid = dict(ks=[1, 4], budgets=[10, 20], tasks=25, samples=4, diagnostics=False)
    single = evaluate(SimulatedModel(), env_id, **grid)
    print(f"3. Batching ({LATENCY_S * 1000:.0f} ms per model call), 100 episodes, T<=20:")
    print(
        f"   act        : {single.timing['policy_calls']:5d} calls, {single.timing['wall_s']:.2f}s"
    )
    for batch_size in (8, 64):
        batched = evaluate(SimulatedBatchedModel(), env_id, batch_size=batch_size, **grid)
        assert np.array_equal(batched.surface, single.surface), "batching changed the result"
        speedup = single.timing["wall_s"] / batched.timing["wall_s"]
        print(
            f"   act_batch {batch_size:>2}: {batched.timing['policy_calls']:5d} calls, "
            f"{batched.timing['wall_s']:.2f}s ({speedup:.0f}x faster, same surface)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="agent_envs/GuessNumber-v0")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    overhead(args.env, args.repeats)
    modes(args.env, args.repeats, [20, 22, 24, 26, 28, 30])
    modes(args.env, args.repeats, [5, 10, 20, 40, 80, 160])
    batching(args.env)


if __name__ == "__main__":
    main()
