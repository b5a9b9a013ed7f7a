"""Fast uniform draws for task generation, pre-fetched from a numpy generator.

Building a catalogue or a knowledge base takes a few hundred small random
choices.  One numpy call per choice costs microseconds each and would dominate
``reset``; drawing a block of floats at once and consuming them in plain Python
is an order of magnitude cheaper and stays fully determined by the generator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

__all__ = ["Draws"]

T = TypeVar("T")

_BLOCK = 512


class Draws:
    """Uniform choices that consume a pre-fetched block of ``rng.random()`` floats.

    Example:
        >>> draws = Draws(np.random.default_rng(0))
        >>> draws.below(10) in range(10)
        True
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._buffer: list[float] = []
        self._next = 0

    def uniform(self) -> float:
        """Return a float in ``[0, 1)``."""
        index = self._next
        if index == len(self._buffer):
            self._buffer = self._rng.random(_BLOCK).tolist()
            index = 0
        self._next = index + 1
        return self._buffer[index]

    def below(self, n: int) -> int:
        """Return an int in ``[0, n)``; ``n`` must be positive."""
        if n < 1:
            raise ValueError(f"below() needs n >= 1, got {n}.")
        value = int(self.uniform() * n)
        # Float rounding can give u * n == n for huge n.
        return value if value < n else n - 1

    def between(self, low: int, high: int) -> int:
        """Return an int in ``[low, high]`` (both ends included)."""
        return low + self.below(high - low + 1)

    def choice(self, items: Sequence[T]) -> T:
        """Return one element of a non-empty sequence."""
        return items[self.below(len(items))]

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """Return ``k`` distinct elements in random order (partial Fisher-Yates)."""
        pool = list(items)
        size = len(pool)
        if not 0 <= k <= size:
            raise ValueError(f"cannot sample {k} of {size} items.")
        uniform = self.uniform
        for index in range(k):
            # index + u * (size - index) < size for the small sizes sampled here.
            swap = index + int(uniform() * (size - index))
            pool[index], pool[swap] = pool[swap], pool[index]
        return pool[:k]

    def shuffle(self, items: list[T]) -> None:
        """Shuffle ``items`` in place."""
        items[:] = self.sample(items, len(items))
