"""The unbiased Pass@k estimator (its bootstrap is :mod:`agent_envs.statistics`')."""

from __future__ import annotations

import math

import numpy as np

from wrappers.utils.validators import check_int

__all__ = ["pass_at_k", "pass_at_k_table"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Return the unbiased estimate of Pass@k from ``c`` successes in ``n`` attempts.

    This is ``1 - C(n - c, k) / C(n, k)`` (Chen et al., 2021): the chance that
    ``k`` attempts drawn without replacement from the ``n`` include a success.
    The ratio of binomials is the product ``prod_{i=n-c+1}^{n} (1 - k / i)``;
    it is summed in log space (``log1p``) and turned back with ``expm1`` so
    that small and large values both keep full relative precision, for any
    ``n`` (no big binomials, no overflow).

    Args:
        n: attempts per task.
        c: successful attempts, ``0 <= c <= n``.
        k: attempts drawn, ``0 <= k <= n``.

    Raises:
        ValueError: for negative values, ``c > n`` or ``k > n``.
        TypeError: for a value that is not an int (a ``bool`` included).

    >>> pass_at_k(10, 3, 1)
    0.3
    >>> round(pass_at_k(10, 3, 4), 6)
    0.833333
    """
    n, c, k = check_int(n, "n", 0), check_int(c, "c", 0), check_int(k, "k", 0)
    if c > n:
        raise ValueError(f"c (successes) must be at most n (attempts), got c={c} > n={n}.")
    if k > n:
        raise ValueError(
            f"k must be at most n (attempts per task), got k={k} > n={n}: "
            "run more samples per task instead of asking for more draws."
        )
    if c == 0 or k == 0:
        return 0.0
    if n - c < k:
        return 1.0
    if k == 1:
        return c / n  # the common case, exact in one division
    log_fail = math.fsum(math.log1p(-k / i) for i in range(n - c + 1, n + 1))
    return -math.expm1(log_fail)


def pass_at_k_table(n: int, counts: np.ndarray, ks: list[int]) -> np.ndarray:
    """Return ``pass_at_k(n, counts[...], k)`` for every count and every k.

    Args:
        n: attempts per task.
        counts: integer array of success counts, any shape ``S``.
        ks: the k values.

    Returns:
        A float array of shape ``(len(ks), *S)``.
    """
    counts = np.asarray(counts)
    # Compute each distinct count once, not per task and cell; only the counts
    # that occur, since every one costs O(n) (all n + 1 of them at n = 10,000
    # would take seconds per k).
    distinct, where = np.unique(counts, return_inverse=True)
    table = np.array([[pass_at_k(n, int(c), k) for c in distinct] for k in ks], dtype=float)
    return table[:, where.reshape(counts.shape)]
