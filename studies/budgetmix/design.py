"""The BudgetMix study, v3: does the training budget regime shape the Pass@(1,T) surface?

Design (the numbers are the settings below):

* **Envs where the budget can matter.**  Slippery FrozenLake, whose
  budget-aware oracle maximises P(success within the turns left): the
  held-out tasks are *chosen* so that its best first move changes with T.
  Maze, where exploring matters: the agent never sees the map; a memoryless
  policy sees the feedback ``You moved east.`` beside the view
  (``feedback_length``), so a wall follower is a function of one
  observation.  Digits are outside the charset, so coordinates read as
  unknown and what the policy learns cannot hang on one map's layout.
* **Policies that learn first.**  Every seed starts from a behaviour-cloning
  warm start on ``NoisyOracleAgent`` demonstrations (the stand-in for a
  pretrained model), then fine-tunes with MaskablePPO under one regime, on a
  fresh task every episode (ids from ``TRAIN_FIRST`` up).
* **The budget is part of the problem.**  The turns left are in the
  observation vector; running out of turns is terminal.
* **Regimes** (budget visible): ``warm`` (the warm start alone), ``short``
  (T = the longest shortest path of the held-out tasks), ``long``, ``mix``
  (BudgetMix), ``long+pr`` (long plus the potential-based ``ProcessReward``).
* **Evaluation** on ``HELD_OUT`` held-out tasks, ``SAMPLES`` attempts per task
  and T (greedy policies; slides still make attempts differ); the oracle and
  the random agent on the same tasks for scale.
* **Primary metric (declared before any figure):** the worst-case Pass@(1,T)
  over the T grid, restricted per task to T at or above its shortest path,
  averaged over tasks.  The unit is the training seed: hierarchical bootstrap
  intervals (seeds, then tasks); every pair of regimes compared by a paired
  sign-flip test over seeds, Holm over the pairs.

Writes ``results.md``, ``results.json`` and the difference plots into
``--out`` (default ``docs/budgetmix``); runs go to ``--work`` (default
``runs/budgetmix``), and a rerun skips finished runs (:mod:`studies.runner`).

    python -m studies.budgetmix          # the full study (see results.md for time)
    python -m studies.budgetmix --quick  # plumbing check (8 CPU-s: docs/bench/budgetmix_quick.txt)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# ------------------------------------------------------------------ settings
SEEDS = 10
HELD_OUT = 100  # held-out task ids per env
#: Attempts per (task, T): the primary metric's per-task minimum over T of
#: 4-attempt estimates (v2) is biased down.
SAMPLES = 8
BC_EPSILON = 0.2  # the demonstrator's noise
WORKERS = 2
ALGO = "maskable_ppo"
PROCESS_REWARD_COEF = 0.1
TRAIN_FIRST = 100_000  # training draws task ids from here up; held-out ids lie below
ORACLE_SAMPLES = 16
STEP_QUALITY = 2  # shared reference states per task for the step-quality diagnostic
#: The reference states are the study's (one set per env), never a training seed's.
STEP_QUALITY_SEED = 13
REGIMES = ("warm", "short", "long", "mix", "long+pr")
#: PPO fine-tuning: a small learning rate and no entropy bonus keep the warm start.
FINE_TUNE = {"learning_rate": 2e-4, "ent_coef": 0.0, "n_steps": 128, "batch_size": 256}
#: Learned policies act greedily: sampling from a cloned, still uncertain
#: distribution adds errors the greedy policy does not make.
GREEDY = True
QUICK = {
    "seeds": 1, "held_out": 4, "samples": 2, "bc_episodes": 8, "timesteps": 256,
    "oracle_samples": 2,
}  # fmt: skip


@dataclass(frozen=True)
class EnvPlan:
    """The budgets, evaluation grid, encoding, task choice and training sizes of one env.

    The short budget is the longest shortest path of the chosen held-out
    tasks, and the grid gains it.  The training sizes are the smallest found
    in sizing runs that let the long regime reach 80% of the oracle.
    """

    long: int
    mix: tuple[int, ...]
    grid: tuple[int, ...]
    encoding: dict[str, Any] = field(default_factory=dict)
    #: Held-out tasks must have a best first move that changes with T.
    budget_sensitive: bool = False
    #: Noisy-oracle demonstration episodes and supervised epochs of the warm start.
    bc_episodes: int = 3000
    bc_epochs: int = 20
    #: PPO fine-tuning steps per regime, and overrides of ``FINE_TUNE``.
    timesteps: int = 8_000
    fine_tune: dict[str, Any] = field(default_factory=dict)
    net_arch: tuple[int, ...] = (256, 256)

    def describe(self) -> str:
        """Return the training settings as one sentence for results.md."""
        return (
            f"warm start = behaviour cloning on {self.bc_episodes} NoisyOracleAgent"
            f"(epsilon={BC_EPSILON}) episodes, {self.bc_epochs} epochs, net {list(self.net_arch)}; "
            f"then {self.timesteps} PPO steps per regime ({ {**FINE_TUNE, **self.fine_tune} })"
        )


_LAKE = {"mode": "chars", "view_only": True, "charset": "FHSG@", "max_length": 60}
#: The view at fixed positions after the feedback's first 16 characters.
_MAZE = {"mode": "chars", "view_only": True, "keep": "head", "max_length": 72,
         "charset": "abcdefghijklmnopqrstuvwxyz", "feedback_length": 16}  # fmt: skip
PLANS = {
    "agent_envs/FrozenLake-Slippery-v0": EnvPlan(
        long=32, mix=(8, 12, 16, 24, 32), grid=(12, 16, 24, 32, 48), encoding=_LAKE,
        budget_sensitive=True,
    ),
    # 5x5: long T = 2 * (25 - 1) = 48, the most turns a wall follower needs to
    # visit every cell of a perfect 5x5 maze (7x7: see docs/classic_rl.md).
    "agent_envs/Maze-5x5-v0": EnvPlan(
        long=48, mix=(12, 24, 36, 48), grid=(36, 48, 72), encoding=_MAZE,
        bc_episodes=1000, bc_epochs=10, timesteps=48_000, net_arch=(64, 64),
        fine_tune={"learning_rate": 1e-3},
    ),
}  # fmt: skip


# -------------------------------------------------------------- task choice
def grid_of(env_id: str, shortest: list[int]) -> tuple[int, ...]:
    """Return the evaluation T grid: the plan's, with the short budget added."""
    return tuple(sorted({max(shortest), *PLANS[env_id].grid}))


def held_out_tasks(env_id: str, count: int, plan: EnvPlan) -> tuple[list[int], list[int]]:
    """Return ``count`` held-out task ids below ``TRAIN_FIRST`` and their shortest paths.

    With ``budget_sensitive`` only tasks whose oracle's best first move
    differs between some two budgets from the shortest path to ``plan.long``
    are kept.
    """
    import gymnasium as gym

    import agent_envs  # noqa: F401  (registers the ids)
    from wrappers import TurnBudget

    env = TurnBudget(gym.make(env_id), max_turns=plan.long)
    chosen, shortest = [], []
    for task_id in range(TRAIN_FIRST):
        env.reset(seed=0, options={"task_id": task_id})
        distance = env.unwrapped.oracle_turns()
        if plan.budget_sensitive:
            firsts = set()
            for budget in range(distance, plan.long + 1):
                env.reset(seed=0, options={"task_id": task_id, "budget": budget})
                firsts.add(tuple(env.unwrapped.oracle_actions()))
            if len(firsts) < 2:
                continue
        chosen.append(task_id)
        shortest.append(distance)
        if len(chosen) == count:
            break
    env.close()
    return chosen, shortest
