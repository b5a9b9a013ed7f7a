"""Is a GuessNumber split one where the skill transfers and a memorised prior does not?

Two checks a study's split must pass before it is used (``docs/envs/guess_number.md``):

1. the training and held-out tasks share one distribution of oracle turns
   (``agent_envs.splits.oracle_turns_test``: chi-square of homogeneity,
   permutation p-value);
2. a policy that plays the training instances' empirical prior
   (``baselines.simple_agents.PriorGuesser``) gains nothing on the held-out
   tasks over the interval guesser, though it gains on the training tasks.

Printed for GuessNumber-Range-v0 (``instance_split``: 1000 training, 500
held-out instances) and, for contrast, for the v3 LLM study's GuessNumber-20
split (64 training ids over 10 secrets, one id per held-out secret).
Pass@(1,T) per task is averaged over T in {1, 2, 3, 4, 5, 6, 8}, 4 attempts.

    python benchmarks/guess_number_split.py
"""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np

import agent_envs  # noqa: F401  (registers the env ids)
from agent_envs.evaluation import PerEpisode, evaluate
from agent_envs.splits import instance_split, oracle_turns_test
from baselines.simple_agents import IntervalGuesser, OracleAgent, PriorGuesser
from wrappers.protocol import TASK_ID

BUDGETS = [1, 2, 3, 4, 5, 6, 8]
SAMPLES = 4


def instances(env_id: str, task_ids: list[int]) -> list[tuple[int, int, int]]:
    """Return each task's ``(low, high, secret)``."""
    env = gym.make(env_id).unwrapped
    found = []
    for task_id in task_ids:
        env.reset(options={TASK_ID: task_id})
        task = env.task
        found.append(tuple(task) if isinstance(task, tuple) else (1, env.max_number, task))
    return found


def per_task(policy, env_id: str, tasks: list[int]) -> np.ndarray:
    result = evaluate(
        policy, env_id, ks=[1], budgets=BUDGETS, tasks=tasks, samples=SAMPLES, n_bootstrap=10
    )
    return (result.success_counts / result.samples).mean(axis=1)


def report(env_id: str, train: list[int], held_out: list[int]) -> None:
    balance = oracle_turns_test(env_id, train, held_out)
    print(f"\n{env_id}: {len(train)} training, {len(held_out)} held-out tasks")
    print(
        f"  oracle turns {balance['turns']}: training {balance['a']} (mean "
        f"{balance['mean_a']:.2f}), held-out {balance['b']} (mean {balance['mean_b']:.2f}); "
        f"chi-square {balance['chi_square']:.2f}, permutation p {balance['p']:.3f}"
    )
    prior = PerEpisode(functools.partial(PriorGuesser, instances(env_id, train)))
    for name, tasks in (("training", train[: len(held_out)] or train), ("held-out", held_out)):
        values = {
            agent: per_task(policy, env_id, tasks)
            for agent, policy in (
                ("prior", prior),
                ("interval", IntervalGuesser()),
                ("oracle", OracleAgent()),
            )
        }
        gain = values["prior"] - values["interval"]
        error = gain.std(ddof=1) / np.sqrt(len(gain)) if len(gain) > 1 else float("nan")
        print(
            f"  {name} ({len(tasks)} tasks), Pass@(1,T) over the T grid: prior "
            f"{values['prior'].mean():.3f}, interval guesser {values['interval'].mean():.3f}, "
            f"oracle {values['oracle'].mean():.3f}; prior - interval {gain.mean():+.3f} "
            f"[{gain.mean() - 1.96 * error:+.3f}, {gain.mean() + 1.96 * error:+.3f}]"
        )


def study_split_20() -> tuple[list[int], list[int]]:
    """The v3 LLM study's GuessNumber-20 split: training ids and one id per held-out secret."""
    env = gym.make("agent_envs/GuessNumber-20-v0").unwrapped
    held_secrets = tuple(
        sorted(int(x) for x in np.random.default_rng(20).choice(20, 10, False) + 1)
    )

    def secret(task_id: int) -> int:
        env.reset(options={TASK_ID: task_id})
        return int(env.task)

    train = [t for t in range(10_000) if secret(t) not in held_secrets][:64]
    by_secret: dict[int, int] = {}
    task_id = 10_000
    while len(by_secret) < len(held_secrets):
        if secret(task_id) in held_secrets:
            by_secret.setdefault(secret(task_id), task_id)
        task_id += 1
    return train, [by_secret[s] for s in held_secrets]


def main() -> None:
    report(
        "agent_envs/GuessNumber-Range-v0",
        *instance_split("agent_envs/GuessNumber-Range-v0", 1000, 500),
    )
    report("agent_envs/GuessNumber-20-v0", *study_split_20())


if __name__ == "__main__":
    main()
