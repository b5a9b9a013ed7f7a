"""Train / held-out splits of task ids that are disjoint as instances, and a check of their balance.

A study trains on some tasks and evaluates on others.  Two things make that
honest: the held-out tasks are new *instances*, not new ids of trained ones
(compared by the env's ``instance_key()`` where it declares one, else by its
``task`` object), and
the two sets are alike in difficulty, so a gap between them is not a gap in
how hard they are.  :func:`instance_split` draws such a split and
:func:`oracle_turns_test` tests the second property on the oracle's turns.

>>> train, held_out = instance_split("agent_envs/GuessNumber-Range-v0", 50, 20)
>>> len(train), len(held_out), held_out[0] >= 10_000
(50, 20, True)
>>> oracle_turns_test("agent_envs/GuessNumber-Range-v0", train, held_out)["p"] > 0.05
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from wrappers.errors import InvalidValue
from wrappers.protocol import TASK_ID, Oracle
from wrappers.utils.validators import check_int

__all__ = ["HELD_OUT_START", "instance_split", "oracle_turns_test"]

#: Held-out ids are drawn from here up, far from the training ids 0, 1, ...
HELD_OUT_START = 10_000
#: How many ids per wanted instance are tried before a split is refused.
_TRIES_PER_INSTANCE = 20


def _instance(env: gym.Env, task_id: int) -> str:
    """Return what identifies task ``task_id``'s instance: its declared key, else its task."""
    env.reset(seed=0, options={TASK_ID: task_id})
    base = env.unwrapped
    declared = getattr(base, "instance_key", None)
    if callable(declared):
        return str(declared())
    task = getattr(base, "task", None)
    return f"task:{task_id}" if task is None else repr(task)


def _distinct(env: gym.Env, start: int, count: int, taken: set[str]) -> list[int]:
    """Return ``count`` ids from ``start`` up whose instances are new to ``taken`` (updated)."""
    chosen: list[int] = []
    limit = start + _TRIES_PER_INSTANCE * count
    for task_id in range(start, limit):
        key = _instance(env, task_id)
        if key not in taken:
            taken.add(key)
            chosen.append(task_id)
            if len(chosen) == count:
                return chosen
    raise InvalidValue(
        f"{env.spec.id if env.spec else env} gave only {len(chosen)} new instances among ids "
        f"{start}..{limit - 1}, not {count}: it has too few distinct tasks for this split."
    )


def instance_split(
    env_id: str,
    train: int,
    held_out: int,
    *,
    held_out_start: int = HELD_OUT_START,
    exclude: Sequence[int] = (),
) -> tuple[list[int], list[int]]:
    """Return training ids and held-out ids whose instances are all distinct.

    Training ids are the first ``train`` ids from 0 that build distinct
    instances; held-out ids the first ``held_out`` from ``held_out_start`` that
    build instances found neither among the training ones nor among each
    other.  No id of either set builds the instance of a task in ``exclude``
    (say the few-shot examples' task ids: a model must never be shown the
    episode it is trained or scored on).  Both sets come from the env's own
    task distribution, so on a family with many instances they are alike
    (test it with :func:`oracle_turns_test`).

    Raises:
        ValueError: the env has too few distinct instances for the split.
    """
    check_int(train, "train", 1)
    check_int(held_out, "held_out", 1)
    check_int(held_out_start, "held_out_start", 0)
    env = gym.make(env_id)
    taken = {_instance(env, int(task_id)) for task_id in exclude}
    training = _distinct(env, 0, train, taken)
    if held_out_start < training[-1] + 1:
        raise InvalidValue(
            f"held_out_start ({held_out_start}) must lie above the training ids "
            f"(0..{training[-1]})."
        )
    held = _distinct(env, held_out_start, held_out, taken)
    env.close()
    return training, held


def _oracle_turns(env_id: str, task_ids: Sequence[int]) -> np.ndarray:
    env = gym.make(env_id)
    base = env.unwrapped
    if not isinstance(base, Oracle):
        raise InvalidValue(f"{env_id} has no oracle: its tasks' oracle turns are unknown.")
    turns = []
    for task_id in task_ids:
        env.reset(seed=0, options={TASK_ID: int(task_id)})
        found = base.oracle_turns()
        turns.append(-1 if found is None else found)  # -1: unsolvable from the start
    env.close()
    return np.asarray(turns)


def _chi_square(labels: np.ndarray, turns: np.ndarray, values: np.ndarray) -> float:
    """Return the chi-square statistic of homogeneity of ``turns`` between the two labels."""
    table = np.stack([np.bincount(turns[labels == side], minlength=len(values)) for side in (0, 1)])
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
    used = expected > 0
    return float((((table - expected) ** 2)[used] / expected[used]).sum())


def oracle_turns_test(
    env_id: str,
    a: Sequence[int],
    b: Sequence[int],
    *,
    permutations: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Test whether two task sets share one distribution of oracle turns from the start.

    The statistic is the chi-square of homogeneity of the two sets' counts
    per oracle-turn value; its p-value is a permutation test (the set labels
    shuffled ``permutations`` times, seeded), exact for any count, with no
    large-sample approximation.  A small p says the sets differ in difficulty.

    Returns:
        ``turns`` (the values seen, ``-1`` for unsolvable), ``a`` and ``b``
        (the counts per value), ``mean_a`` and ``mean_b`` (the mean turns
        over solvable tasks), ``chi_square`` and ``p``.
    """
    check_int(permutations, "permutations", 1)
    turns_a, turns_b = _oracle_turns(env_id, a), _oracle_turns(env_id, b)
    values, codes = np.unique(np.concatenate([turns_a, turns_b]), return_inverse=True)
    labels = np.repeat([0, 1], [len(turns_a), len(turns_b)])
    observed = _chi_square(labels, codes, values)
    rng = np.random.default_rng(seed)
    exceed = sum(
        _chi_square(rng.permutation(labels), codes, values) >= observed - 1e-12
        for _ in range(permutations)
    )
    counts = [np.bincount(codes[labels == side], minlength=len(values)) for side in (0, 1)]
    return {
        "turns": values.tolist(),
        "a": counts[0].tolist(),
        "b": counts[1].tolist(),
        "mean_a": float(turns_a[turns_a >= 0].mean()) if (turns_a >= 0).any() else None,
        "mean_b": float(turns_b[turns_b >= 0].mean()) if (turns_b >= 0).any() else None,
        "chi_square": observed,
        "p": (1 + exceed) / (1 + permutations),
    }
