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
    "episode_generator",
    "episode_seed",
    "first_integer",
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
_MASK32 = (1 << 32) - 1
_MASK128 = (1 << 128) - 1
#: PCG64's 128-bit LCG multiplier (numpy's ``PCG_DEFAULT_MULTIPLIER_128``).
_PCG_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645
_GOLDEN = 0x9E3779B97F4A7C15


def episode_seed(base_seed: int, task_id: int, sample: int) -> int:
    """Return the seed of attempt ``sample`` at task ``task_id``: an int in ``[0, 2**32)``.

    It is the first 32-bit word of ``numpy.random.SeedSequence([base_seed,
    task_id, sample])``: stable across processes and platforms, and the same
    for every budget, so that a run at T is a prefix of the run at a larger T.
    """
    return int(np.random.SeedSequence([base_seed, task_id, sample]).generate_state(1)[0])


def stream(*key: int) -> np.random.Generator:
    """Return the generator seeded with ``key``: a salt of this module and what it draws for.

    It is ``numpy.random.default_rng(list(key))``, built faster: numpy turns a
    list of ints into the ``SeedSequence``'s 32-bit words one array at a time,
    which costs more than the rest of the generator (an env builds one on every
    reset that changes its task), so the words are laid out here instead.
    """
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(_words(key))))


def episode_generator(seed: int) -> np.random.Generator:
    """Return the generator ``gymnasium.utils.seeding.np_random(seed)`` returns, built faster.

    The same stream: ``PCG64(SeedSequence(seed))``, and a one-int key gives the
    ``SeedSequence`` the words ``seed`` alone gives it.
    """
    return stream(seed)


def first_integer(high: int, *key: int) -> int:
    """Return ``stream(*key).integers(0, high)``, the stream's first draw, without the generator.

    An env draws one number from a fresh stream on most resets (a task id from
    the episode generator, a secret from the task's stream), and building a
    numpy generator costs several times what the draw does.  This is the same
    draw as numpy makes it: the ``SeedSequence`` pool, ``PCG64``'s seeding and
    XSL-RR output, and Lemire's bounded 32-bit integers (``tests/test_seeding.py``
    checks it against numpy).  A generator built later from ``key`` must
    first skip this one draw to go on with the same stream.

    >>> first_integer(100, 5) == int(episode_generator(5).integers(0, 100))
    True
    """
    words = _words(key)
    if not 0 < high <= 1 << 32 or isinstance(words, list):
        return int(stream(*key).integers(0, high))
    pool = np.random.SeedSequence(words).pool.tolist()
    state, increment = _pcg64_seeded(pool)
    outputs: list[int] = []  # PCG64 hands out each 64-bit output as two 32-bit draws
    while True:
        if not outputs:
            state = (state * _PCG_MULTIPLIER + increment) & _MASK128
            rotation = state >> 122
            mixed = ((state >> 64) ^ state) & _MASK64
            output = ((mixed >> rotation) | (mixed << (-rotation & 63))) & _MASK64
            outputs = [output >> 32, output & _MASK32]
        scaled = outputs.pop() * high
        # Lemire: a draw is rejected only below (2**32 - high) % high, which is < high.
        if scaled & _MASK32 >= high or scaled & _MASK32 >= (_MASK32 - (high - 1)) % high:
            return scaled >> 32


def _pcg64_seeded(pool: list[int]) -> tuple[int, int]:
    """Return the ``(state, increment)`` of ``PCG64`` seeded by a ``SeedSequence`` with ``pool``.

    ``SeedSequence.generate_state(4, uint64)`` hashes the pool into eight 32-bit
    words, each with the next constant of its sequence (``INIT_B`` times powers
    of ``MULT_B``, spelled out below because a loop costs more than the hashes);
    ``PCG64`` takes the first two 64-bit words as its start and the last two as
    its stream, then steps twice (``pcg_setseq_128_srandom_r``).
    """
    a, b, c, d = pool
    w0 = ((a ^ 0x8B51F9DD) * 0x464A0A99) & _MASK32
    w1 = ((b ^ 0x464A0A99) * 0x819D14A5) & _MASK32
    w2 = ((c ^ 0x819D14A5) * 0xD369FDC1) & _MASK32
    w3 = ((d ^ 0xD369FDC1) * 0x501638AD) & _MASK32
    w4 = ((a ^ 0x501638AD) * 0xA600C129) & _MASK32
    w5 = ((b ^ 0xA600C129) * 0x8B0167F5) & _MASK32
    w6 = ((c ^ 0x8B0167F5) * 0x5C1E2ED1) & _MASK32
    w7 = ((d ^ 0x5C1E2ED1) * 0x301D747D) & _MASK32
    start = (
        ((w1 ^ (w1 >> 16)) << 96) | ((w0 ^ (w0 >> 16)) << 64)
        | ((w3 ^ (w3 >> 16)) << 32) | (w2 ^ (w2 >> 16))
    )  # fmt: skip
    sequence = (
        ((w5 ^ (w5 >> 16)) << 96) | ((w4 ^ (w4 >> 16)) << 64)
        | ((w7 ^ (w7 >> 16)) << 32) | (w6 ^ (w6 >> 16))
    )  # fmt: skip
    increment = ((sequence << 1) | 1) & _MASK128
    state = (increment + start) & _MASK128
    return (state * _PCG_MULTIPLIER + increment) & _MASK128, increment


def _words(key: tuple[int, ...]) -> np.ndarray | list[int]:
    """Return ``key`` as the little-endian 32-bit words ``SeedSequence`` would make of it.

    Each int gives its words, lowest first, and ``0`` gives one zero word: the
    layout of numpy's own conversion, so the stream is the same.  Anything else
    (a negative int, a float) goes to numpy unchanged, to raise its own error.
    """
    words: list[int] = []
    for value in key:
        if type(value) is not int or value < 0:
            return list(key)
        words.append(value & _MASK32)
        value >>= 32
        while value:
            words.append(value & _MASK32)
            value >>= 32
    return np.array(words, dtype=np.uint32)


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
