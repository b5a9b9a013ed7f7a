"""Seeds and random streams: every seeded draw in the project starts here.

Three kinds of seed, each with one owner in this module:

* **Episode seeds.** Attempt ``j`` at task ``i`` of a run with base seed ``s``
  resets its env with :func:`episode_seed` ``(s, i, j)``, the same seed for
  every budget, in the evaluator and in GRPO training alike.
* **Streams.** A generator that must not reuse another's numbers is seeded
  with a named *salt* and the integers it draws for: :func:`stream`
  ``(BUDGET, seed)`` is ``BudgetMix``'s budget draw, for example, apart from
  the env's own stream under the same ``reset(seed=...)``.  Each consumer has
  its own salt below, and no other module spells one (``tests/test_seeding.py``
  checks both).
* **Per-turn draws.** An agent inside the evaluator draws from ``(its seed,
  info["episode_seed"], info["turn"])`` alone, so what an episode does never
  depends on batching or on the episodes around it: :func:`turn_hash` for the
  reference agents, :func:`sampling_seed` for language models (which also key
  on the prompt), and :func:`stream` with a salt for the SB3 agent.

The values are fixed: changing a salt, or the order of a stream's key,
changes every result drawn from it.

>>> episode_seed(0, 3, 1) == episode_seed(0, 3, 1) != episode_seed(0, 3, 2)
True
>>> stream(BUDGET, 7).random() == stream(BUDGET, 7).random()
True
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = [
    "BOOTSTRAP",
    "BUDGET",
    "COMPARE_BOOTSTRAP",
    "COMPARE_TESTS",
    "HANOI_ORDER",
    "SB3_DEMOS",
    "SB3_SAMPLING",
    "STEP_QUALITY_STATES",
    "TASK_POOL",
    "episode_seed",
    "name_salt",
    "sampling_seed",
    "stream",
    "turn_hash",
]

#: ``BudgetMix``'s budget draws, keyed ``(BUDGET, seed)`` ("BUDG" in ASCII).
BUDGET = 0x42554447
#: ``TaskPool``'s task draws, keyed ``(TASK_POOL, seed)``.
TASK_POOL = 0x7A5C
#: The bootstrap over tasks of one result, keyed ``(BOOTSTRAP, seed)``.
BOOTSTRAP = 0xB0075
#: Which reference states step quality keeps, keyed ``(STEP_QUALITY_STATES, seed, task)``.
STEP_QUALITY_STATES = 0x57E9
#: ``compare``'s seed-level tests, keyed ``(seed, COMPARE_TESTS)``.
COMPARE_TESTS = 0x7E57
#: ``compare``'s bootstrap of a difference, keyed ``(seed, COMPARE_BOOTSTRAP)``.
COMPARE_BOOTSTRAP = 0x5739
#: The fixed order in which Hanoi numbers its states, keyed ``(HANOI_ORDER, disks)``.
HANOI_ORDER = 0x4A4E
#: The SB3 agent's action sampling ("SB3A"), keyed ``(SB3_SAMPLING, episode seed, turn)``.
SB3_SAMPLING = 0x53423341
#: The episode seeds of behaviour-cloning demonstrations, keyed ``(SB3_DEMOS, seed, ...)``.
SB3_DEMOS = 0xBC

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def episode_seed(base_seed: int, task_id: int, sample: int) -> int:
    """Return the seed of attempt ``sample`` at task ``task_id``: an int in ``[0, 2**32)``.

    It is the first 32-bit word of ``numpy.random.SeedSequence([base_seed,
    task_id, sample])``: stable across processes and platforms, and the same
    for every budget, so that a run at T is a prefix of the run at a larger T.
    """
    return int(np.random.SeedSequence([base_seed, task_id, sample]).generate_state(1)[0])


def stream(*key: int) -> np.random.Generator:
    """Return the generator seeded with ``key``: a salt of this module and what it draws for."""
    return np.random.default_rng(list(key))


def name_salt(name: str) -> int:
    """Return a salt derived from ``name`` (its CRC-32), for a stream per class or per env."""
    return zlib.crc32(name.encode())


def turn_hash(*words: int) -> int:
    """Return a 64-bit SplitMix64 hash of ``words``: a counter-based draw, no generator state.

    The reference agents draw with ``turn_hash(agent seed, episode seed, turn, stream)``.

    >>> turn_hash(0, 7, 1, 1) == turn_hash(0, 7, 1, 1) != turn_hash(0, 7, 2, 1)
    True
    """
    state = 0
    for word in words:
        state = ((state ^ (word & _MASK64)) + _GOLDEN) & _MASK64
        state = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        state = ((state ^ (state >> 27)) * 0x94D049BB133111EB) & _MASK64
        state ^= state >> 31
    return state


def sampling_seed(agent_seed: int, episode_seed: int | None, turn: int, prompt: str) -> int:
    """Return the sampling seed of one language-model reply, in ``[0, 2**31)``.

    It is a hash of the agent's seed, the episode seed the evaluator puts in
    ``info["episode_seed"]`` (different for every attempt; ``None`` counts as
    -1), the turn, and a CRC of the prompt.  Nothing depends on which other
    episodes share a batch, so batching does not change what an episode samples.
    """
    episode = -1 if episode_seed is None else int(episode_seed)
    entropy = [
        int(agent_seed) & _MASK64,
        episode & _MASK64,
        int(turn) & 0xFFFFFFFF,
        zlib.crc32(prompt.encode("utf-8", "replace")),
    ]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0] >> 1)
