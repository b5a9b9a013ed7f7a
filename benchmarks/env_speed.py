"""Measure env speed for every registered id: steps/s and resets/s.

For each id it prints:

* ``raw steps/s``: the unwrapped env under a fixed stream of random
  admissible actions (precomputed, so the stream itself costs nothing);
* ``make``, ``+TurnBudget``, ``+BudgetMix`` steps/s: the same stream through
  ``gym.make``'s own stack, and through it plus each budget wrapper;
* ``TB cost`` / ``BM cost``: the extra time per step of each budget wrapper
  relative to ``gym.make``'s stack alone;
* ``reset ms``: the median time of ``reset`` on a fresh task.

Targets: GuessNumber >= 150k raw steps/s, Sokoban and
FrozenLake >= 30k, every other id >= 20k; reset median <= 1 ms for
Sokoban-v0 and <= 2 ms for every id; the wrappers add <= 25%.

``--peer`` measures instead under the protocol of the comparison with peer
libraries (gem-llm, TextArena), which counts reset cost the way they
do: the unwrapped env steps on random actions from a fixed per-id list
(:data:`PEER_ACTIONS`, else the id's ``action_vocabulary``, else the admissible
actions after ``reset(seed=0)``), chosen by ``random.Random(0)``, and resets
with ``reset(seed=i)`` (a fresh task each time) at termination or every
:data:`PEER_EPISODE` steps.  It prints the best of ``--repeats`` runs, since
the machine is shared and the best run is the one least disturbed by others,
next to the figure recorded before the peer-speed work (:data:`PEER_BEFORE`).  It times
CPU time by default (``--clock cpu``), which leaves out the time spent waiting
for a core on a loaded machine; ``--clock wall`` times like the peer script.
Target: Hanoi-3 and GuessNumber-v0 >= 300k steps/s, and no id
slower than before.

Figures after that work (CPU clock, best of 5 interleaved runs, same load):
Hanoi-3 394k steps/s (3.5x), GuessNumber-v0 387k (1.8x); every id 1.0x to
3.6x within the noise of this machine (about +-8% between runs; the ids at
0.92-0.93 in one run measured 1.05-1.08 over 9 runs).  By the wall clock at a
load average of 10 on 2 cores: Hanoi-3 175-180k (55-60k before),
GuessNumber-v0 165-257k (102-156k before).  What is left of GuessNumber's
cost is mostly its reset: gymnasium seeding ``np_random`` and the task's own
generator take about 27 of its 31 microseconds.  A later change removed both
from GuessNumber's reset (the episode generator is built on first use, and a task id
or secret that is a stream's first draw is computed without a generator):
13-14 CPU microseconds by seed and 8 by task id, against 24-28 and 24 before.

GuessNumber builds its texts once per env, for either format (the feedback on
each legal guess in advance), so a step neither tests the format nor formats
a number.  ``--peer`` (CPU clock, best of 5, load average 1.7 on 2 cores):
GuessNumber-v0 672k steps/s against 516k before, its step alone 1.90M
against 1.07M; GuessNumber-Range 494k against 454k; GuessNumber-Range-Terse
541k against 534k; the other ids as before.  By the peer script's wall clock,
median of 3 runs interleaved with gem-llm's GuessTheNumber-v0-easy (load
average 1.9): GuessNumber-v0 660k steps/s, 510k before the terse format's
branches were precomputed and 611k before the format existed; gem-llm 242k,
so 2.73x (2.11x before).

Run: ``python benchmarks/env_speed.py [--steps 20000] [--ids ID ...]``
or ``python benchmarks/env_speed.py --peer [--steps 100000] [--repeats 5]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import gymnasium as gym
import numpy as np

import agent_envs
from wrappers import BudgetMix, TurnBudget

gym.register_envs(agent_envs)

#: The peer protocol resets at termination or after this many steps.
PEER_EPISODE = 20

#: The fixed action lists of the peer protocol, for the ids it compared with peers.
PEER_ACTIONS: dict[str, list[str]] = {
    "agent_envs/GuessNumber-v0": [str(i) for i in range(1, 21)],
    "agent_envs/Sokoban-v0": ["up", "down", "left", "right"],
    "agent_envs/Hanoi-3-v0": [f"move {a} {b}" for a in "123" for b in "123" if a != b],
    "agent_envs/FrozenLake-v0": ["up", "down", "left", "right"],
    "agent_envs/Wordle-v0": ["crane", "slate", "pious", "mound", "light", "zebra"],
}

#: Peer-protocol steps/s before the peer-speed work (main at 0176843): CPU clock, best of 5
#: runs of 30k steps, interleaved with runs of the new code, on the 2-core
#: machine shared with other work (load average about 10).
PEER_BEFORE: dict[str, float] = {
    "agent_envs/GuessNumber-v0": 214_373,
    "agent_envs/GuessNumber-1000-v0": 227_181,
    "agent_envs/Sokoban-v0": 67_894,
    "agent_envs/Sokoban-8x8-v0": 55_831,
    "agent_envs/FrozenLake-v0": 68_667,
    "agent_envs/FrozenLake-8x8-v0": 57_066,
    "agent_envs/FrozenLake-Slippery-v0": 68_342,
    "agent_envs/FrozenLake-8x8-Slippery-v0": 57_573,
    "agent_envs/Maze-7x7-v0": 104_970,
    "agent_envs/Maze-15x15-v0": 36_121,
    "agent_envs/Hanoi-3-v0": 113_494,
    "agent_envs/Hanoi-4-v0": 124_458,
    "agent_envs/Hanoi-5-v0": 110_366,
    "agent_envs/Wordle-v0": 76_855,
    "agent_envs/Household-v0": 80_028,
    "agent_envs/Household-Small-v0": 97_333,
    "agent_envs/Household-Large-v0": 64_697,
    "agent_envs/WebShop-v0": 15_557,
    "agent_envs/KnowledgeSearch-v0": 14_679,
    "agent_envs/KnowledgeSearch-Deep-v0": 13_611,
}


def action_stream(env_id: str, steps: int, seed: int = 0) -> list[tuple[int, list[str]]]:
    """Record episodes of random admissible actions: (task id, actions) pairs."""
    env = gym.make(env_id).unwrapped
    rng = np.random.default_rng(seed)
    episodes, total, task_id = [], 0, 0
    while total < steps:
        env.reset(seed=task_id, options={"task_id": task_id})
        actions = []
        for _ in range(min(100, steps - total)):
            legal = env.admissible_actions()
            action = legal[int(rng.integers(len(legal)))]
            actions.append(action)
            if env.step(action)[2]:
                break
        episodes.append((task_id, actions))
        total += len(actions)
        task_id += 1
    return episodes


def steps_per_second(env, episodes, repeats: int = 3, now=time.perf_counter) -> float:
    """Replay the recorded episodes; time only the step loop; best of ``repeats``.

    The best of several runs is the figure least disturbed by other processes.
    ``now`` is the clock (``time.process_time`` leaves out waits for a core).
    """
    best = 0.0
    for _ in range(repeats):
        elapsed, count = 0.0, 0
        for task_id, actions in episodes:
            env.reset(seed=task_id, options={"task_id": task_id})
            step = env.step
            start = now()
            for action in actions:
                step(action)
            elapsed += now() - start
            count += len(actions)
        best = max(best, count / elapsed)
    return best


def median_reset_ms(env_id: str, resets: int) -> float:
    env = gym.make(env_id).unwrapped
    env.reset(seed=0, options={"task_id": 0})  # warm imports and caches of the class
    times = []
    for task_id in range(1, resets + 1):
        start = time.perf_counter()
        env.reset(seed=task_id, options={"task_id": task_id})
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def peer_actions(env_id: str) -> list[str]:
    """The peer protocol's fixed action list for ``env_id``."""
    if env_id in PEER_ACTIONS:
        return PEER_ACTIONS[env_id]
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    return list(getattr(env, "action_vocabulary", None) or env.admissible_actions())


def peer_steps_per_second(env_id: str, steps: int, repeats: int, clock: str = "cpu") -> float:
    """Steps/s of the unwrapped env under the peer protocol, best of ``repeats`` runs.

    ``clock="cpu"`` times with the process's CPU time instead of the wall clock:
    on a machine shared with other work it leaves out the time spent waiting
    for a core, so two versions compare fairly even when the load changes.
    """
    now = time.process_time if clock == "cpu" else time.perf_counter
    actions = peer_actions(env_id)
    best = 0.0
    for _ in range(repeats):
        env = gym.make(env_id).unwrapped
        rng = random.Random(0)
        env.reset(seed=0)
        start = now()
        taken = 0
        for i in range(steps):
            _, _, terminated, truncated, _ = env.step(rng.choice(actions))
            taken += 1
            if terminated or truncated or taken == PEER_EPISODE:
                env.reset(seed=i)
                taken = 0
        best = max(best, steps / (now() - start))
    return best


def reset_microseconds(env_id: str, resets: int, repeats: int, task_ids: bool) -> float:
    """CPU microseconds of one ``reset`` on a fresh task, best of ``repeats`` loops.

    ``task_ids=False`` resets as the peer protocol does, ``reset(seed=i)``: the
    env draws the task id from the seed.  ``task_ids=True`` resets as the
    evaluator does, ``reset(seed=i, options={"task_id": i})``.
    """
    env = gym.make(env_id).unwrapped
    env.reset(seed=0, options={"task_id": 0})  # warm imports and caches of the class
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        if task_ids:
            for i in range(1, resets + 1):
                env.reset(seed=i, options={"task_id": i})
        else:
            for i in range(1, resets + 1):
                env.reset(seed=i)
        best = min(best, time.process_time() - start)
    return 1e6 * best / resets


def peer_main(ids: list[str], steps: int, repeats: int, clock: str) -> None:
    """Print, per id: peer-protocol steps/s against :data:`PEER_BEFORE`, then
    reset and step apart: steps/s of the step loop alone (no resets) and the
    CPU microseconds of a reset by seed and by task id."""
    header = (
        f"{'id':36} {'steps/s':>10} {'before':>10} {'ratio':>6} "
        f"{'step/s':>10} {'reset us':>9} {'+task us':>9}"
    )
    print(f"peer protocol: {steps} steps, best of {repeats} runs, {clock} clock")
    print(header)
    print("-" * len(header))
    clocks = {"cpu": time.process_time, "wall": time.perf_counter}
    for env_id in ids:
        now = peer_steps_per_second(env_id, steps, repeats, clock)
        before = PEER_BEFORE.get(env_id)
        was = f"{before:10,.0f} {now / before:6.2f}" if before else f"{'-':>10} {'-':>6}"
        episodes = action_stream(env_id, min(steps, 20000))
        stepping = steps_per_second(gym.make(env_id).unwrapped, episodes, repeats, clocks[clock])
        by_seed = reset_microseconds(env_id, 5000, repeats, task_ids=False)
        by_task = reset_microseconds(env_id, 5000, repeats, task_ids=True)
        print(
            f"{env_id:36} {now:10,.0f} {was} {stepping:10,.0f} {by_seed:9.1f} {by_task:9.1f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000, help="steps per measurement")
    parser.add_argument("--resets", type=int, default=300, help="resets for the median")
    parser.add_argument("--ids", nargs="*", default=None, help="ids to measure (default: all)")
    parser.add_argument("--peer", action="store_true", help="measure under the peer protocol")
    parser.add_argument("--repeats", type=int, default=5, help="peer protocol: runs per id")
    parser.add_argument(
        "--clock", choices=("cpu", "wall"), default="cpu", help="peer protocol: what to time"
    )
    args = parser.parse_args()
    ids = args.ids or agent_envs.env_ids()
    if args.peer:
        peer_main(ids, args.steps, args.repeats, args.clock)
        return
    header = (
        f"{'id':36} {'raw steps/s':>12} {'make':>10} {'+TurnBudget':>12} "
        f"{'+BudgetMix':>11} {'TB cost':>8} {'BM cost':>8} {'reset ms':>9}"
    )
    print(header)
    print("-" * len(header))
    for env_id in ids:
        episodes = action_stream(env_id, args.steps)
        raw = steps_per_second(gym.make(env_id).unwrapped, episodes)
        made = steps_per_second(gym.make(env_id), episodes)
        budget = steps_per_second(TurnBudget(gym.make(env_id), 10**6), episodes)
        mix = steps_per_second(BudgetMix(gym.make(env_id), [10**6, 10**6 + 1]), episodes)
        reset = median_reset_ms(env_id, args.resets)
        print(
            f"{env_id:36} {raw:12,.0f} {made:10,.0f} {budget:12,.0f} {mix:11,.0f} "
            f"{made / budget - 1:8.1%} {made / mix - 1:8.1%} {reset:9.3f}"
        )


if __name__ == "__main__":
    main()
