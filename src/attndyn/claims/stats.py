"""Confidence intervals over seeds for experiment claims (docs/claims.md).

A claim over seeds reports its statistic with a two-sided ``level`` interval and passes only if
the whole interval clears its target (:class:`attndyn.claims.base.Claim`):

- :func:`mean_ci`: the seed mean with the Student-t interval ``x̄ ± t_{n−1} s/√n``;
- :func:`bootstrap_ci`: any statistic of one or more groups of per-seed values (e.g. one group
  per dimension d), by the percentile bootstrap that resamples seeds within each group
  independently (Efron & Tibshirani 1993, ch. 13).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

LEVEL = 0.95
N_BOOT = 2000


@dataclass(frozen=True)
class Interval:
    """A statistic ``value`` with its confidence interval [``low``, ``high``] over ``n_seeds``."""

    value: float
    low: float
    high: float
    n_seeds: int
    level: float = LEVEL

    @property
    def finite(self) -> bool:
        return all(math.isfinite(v) for v in (self.value, self.low, self.high))

    def map(self, fn: Callable[[float], float]) -> Interval:
        """The interval of a monotone increasing ``fn`` of the statistic."""
        return Interval(fn(self.value), fn(self.low), fn(self.high), self.n_seeds, self.level)


def mean_ci(samples: Sequence[float], level: float = LEVEL) -> Interval:
    """Seed mean and its Student-t interval; NaN/inf samples make the interval NaN (fails)."""
    from scipy import stats

    x = np.asarray(samples, dtype=float).ravel()
    n = x.size
    if n == 0 or not np.all(np.isfinite(x)):
        nan = float("nan")
        return Interval(nan, nan, nan, n, level)
    mean = float(x.mean())
    if n == 1:
        return Interval(mean, -math.inf, math.inf, 1, level)
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return Interval(mean, mean - half, mean + half, n, level)


def bootstrap_ci(
    groups: Sequence[Sequence[float]] | Sequence[float],
    statistic: Callable[..., float],
    level: float = LEVEL,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> Interval:
    """Percentile-bootstrap interval of ``statistic(*groups)``.

    ``groups`` is one array of per-seed values (then ``statistic(x)``) or a list of arrays (then
    ``statistic(x_1, …, x_k)``); seeds are resampled with replacement within each group. The
    point value is the statistic of the data; ``n_seeds`` is the smallest group size. A
    non-finite per-seed value (a diverged or never-crossing seed), a NaN statistic of the data or
    NaN in more than half of the resamples gives a NaN interval (the claim fails).
    """
    arrays = _groups(groups)
    n = min(a.size for a in arrays)
    nan = float("nan")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        return Interval(nan, nan, nan, n, level)
    value = float(statistic(*arrays))
    if not math.isfinite(value):
        return Interval(nan, nan, nan, n, level)
    rng = np.random.default_rng(seed)
    draws = np.empty(n_boot)
    for b in range(n_boot):
        draws[b] = statistic(*(a[rng.integers(0, a.size, a.size)] for a in arrays))
    good = draws[np.isfinite(draws)]
    if good.size < n_boot / 2:
        return Interval(value, nan, nan, n, level)
    low, high = np.quantile(good, [0.5 - level / 2, 0.5 + level / 2])
    return Interval(value, float(low), float(high), n, level)


def worst(cells: dict[Any, Interval], end: str) -> Any:
    """The key of the cell whose interval ``end`` is worst for a claim that must hold in every
    cell: the largest ``high`` (an "every one below" claim) or the smallest ``low`` ("every one
    above"); a non-finite end counts as the worst."""
    sign = 1.0 if end == "high" else -1.0

    def badness(key) -> float:
        v = getattr(cells[key], end)
        return sign * v if math.isfinite(v) else math.inf

    return max(cells, key=badness)


def _groups(groups) -> list[np.ndarray]:
    if len(groups) and np.ndim(groups[0]) == 0:
        return [np.asarray(groups, dtype=float)]
    return [np.asarray(g, dtype=float).ravel() for g in groups]
