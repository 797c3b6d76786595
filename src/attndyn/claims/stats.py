"""Confidence intervals over seeds for experiment claims (docs/claims.md).

A claim over seeds reports its statistic with a two-sided ``level`` interval and passes only if
the whole interval clears its target (:class:`attndyn.claims.base.Claim`):

- :func:`mean_ci`: the seed mean with the Student-t interval ``x̄ ± t_{n−1} s/√n``;
- :func:`jackknife_ci`: a smooth statistic of one or more groups of per-seed values (a ratio of
  means, a log–log slope of group means over d): ``θ̂ ± t_ν · se_jack`` with the delete-one
  jackknife standard error and Welch–Satterthwaite degrees of freedom ν (Efron & Tibshirani
  1993, ch. 11; for one group and the mean it is :func:`mean_ci` exactly);
- :func:`bootstrap_ci`: any statistic of one or more groups of per-seed values (e.g. one group
  per dimension d), by the percentile bootstrap that resamples seeds within each group
  independently (Efron & Tibshirani 1993, ch. 13).

Coverage of the nominal 95 % intervals at the seed counts in use, measured by
tests/test_interval_coverage.py: the t and jackknife-t intervals cover 0.92–0.99 at n = 2, 3, 4,
8 and 20 seeds (Gaussian and skewed Gamma(4) values; means, paired differences, ratios, log–log
slopes); the percentile bootstrap covers 0.79 at n = 3, 0.90 at n = 8 and 0.92 at n = 20, so it
is meant for many seeds (chains): it refuses fewer than :data:`MIN_BOOTSTRAP_SEEDS`. Resamples
whose statistic is not finite (a resample without a crossing, a fit without data) are counted in
``Interval.dropped`` and reported with the claim; more than the tail mass (1 − level)/2 of them
makes the interval NaN (the claim fails): beyond that the dropped resamples could have held a
whole tail of the percentile interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

LEVEL = 0.95
Groups = Sequence[npt.ArrayLike] | npt.ArrayLike
"""Per-seed values: one array, or a list of arrays (one group each)."""
N_BOOT = 2000
MIN_BOOTSTRAP_SEEDS = 20
"""The fewest seeds at which the percentile bootstrap's coverage is ≥ 0.9 at nominal 0.95."""


@dataclass(frozen=True)
class Interval:
    """A statistic ``value`` with its confidence interval [``low``, ``high``] over ``n_seeds``."""

    value: float
    low: float
    high: float
    n_seeds: int
    level: float = LEVEL
    dropped: int = 0
    """Bootstrap resamples whose statistic was not finite, left out of the percentiles."""

    @property
    def finite(self) -> bool:
        return all(math.isfinite(v) for v in (self.value, self.low, self.high))

    def map(self, fn: Callable[[float], float]) -> Interval:
        """The interval of a monotone increasing ``fn`` of the statistic."""
        ends = fn(self.value), fn(self.low), fn(self.high)
        return Interval(*ends, self.n_seeds, self.level, self.dropped)


def mean_ci(samples: npt.ArrayLike, level: float = LEVEL) -> Interval:
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


def jackknife_ci(
    groups: Groups,
    statistic: Callable[..., float],
    level: float = LEVEL,
    paired: bool = False,
) -> Interval:
    """Jackknife-t interval of ``statistic(*groups)``: ``θ̂ ± t_ν √V``.

    ``groups`` is one array of per-seed values or a list of arrays, as for :func:`bootstrap_ci`.
    Independent groups (``paired=False``): V = Σ_g (n_g − 1)/n_g Σ_i (θ̂_(g,i) − θ̄_(g))², where
    θ̂_(g,i) leaves seed i out of group g alone, and ν is the Welch–Satterthwaite
    (Σ_g V_g)² / Σ_g V_g²/(n_g − 1). Paired groups (the same seeds in every group, equal sizes):
    seed i leaves every group at once, V = (n − 1)/n Σ_i (θ̂_(i) − θ̄)², ν = n − 1. One seed gives
    an infinite interval; a non-finite per-seed value, point value or leave-one-out value gives a
    NaN interval (the claim fails).
    """
    arrays, value, point = _point(groups, statistic, level)
    if point is not None:
        return point
    n = min(a.size for a in arrays)
    nan = float("nan")
    if paired:
        if len({a.size for a in arrays}) != 1:
            raise ValueError("paired groups must hold the same seeds (equal sizes)")
        loo = [np.array([statistic(*(np.delete(a, i) for a in arrays)) for i in range(n)])]
    else:
        loo = [
            np.array([statistic(*_without(arrays, g, i)) for i in range(a.size)])
            for g, a in enumerate(arrays)
        ]
    if not all(np.all(np.isfinite(x)) for x in loo):
        return Interval(value, nan, nan, n, level)
    parts = [(x.size - 1) / x.size * float(np.sum((x - x.mean()) ** 2)) for x in loo]
    var = sum(parts)
    if var == 0.0:
        return Interval(value, value, value, n, level)
    df = var * var / sum(v * v / (x.size - 1) for v, x in zip(parts, loo, strict=True))
    from scipy import stats

    half = float(stats.t.ppf(0.5 + level / 2, df)) * math.sqrt(var)
    return Interval(value, value - half, value + half, n, level)


def _without(arrays: list[np.ndarray], g: int, i: int) -> list[np.ndarray]:
    return [np.delete(a, i) if h == g else a for h, a in enumerate(arrays)]


def bootstrap_ci(
    groups: Groups,
    statistic: Callable[..., float],
    level: float = LEVEL,
    n_boot: int = N_BOOT,
    seed: int = 0,
    max_dropped: float | None = None,
) -> Interval:
    """Percentile-bootstrap interval of ``statistic(*groups)``.

    ``groups`` is one array of per-seed values (then ``statistic(x)``) or a list of arrays (then
    ``statistic(x_1, …, x_k)``); seeds are resampled with replacement within each group. The
    point value is the statistic of the data; ``n_seeds`` is the smallest group size. One seed
    (in the smallest group) gives an infinite interval; 2 to ``MIN_BOOTSTRAP_SEEDS − 1`` are
    refused (ValueError: the coverage is below 0.9 there; use :func:`jackknife_ci`). A
    non-finite per-seed value (a diverged or never-crossing seed) or a NaN statistic of the data
    gives a NaN interval; so do non-finite statistics in more than ``max_dropped`` of the
    resamples (default (1 − level)/2, the bound for a claim), and fewer are counted in
    ``dropped``.
    """
    arrays, value, point = _point(groups, statistic, level)
    if point is not None:
        return point
    n = min(a.size for a in arrays)
    if n < MIN_BOOTSTRAP_SEEDS:
        raise ValueError(
            f"bootstrap_ci: {n} seeds in the smallest group; the percentile bootstrap needs "
            f">= {MIN_BOOTSTRAP_SEEDS} (its coverage is below 0.9 under that): use jackknife_ci"
        )
    nan = float("nan")
    rng = np.random.default_rng(seed)
    draws = np.empty(n_boot)
    for b in range(n_boot):
        draws[b] = statistic(*(a[rng.integers(0, a.size, a.size)] for a in arrays))
    good = draws[np.isfinite(draws)]
    dropped = n_boot - good.size
    if dropped > ((1 - level) / 2 if max_dropped is None else max_dropped) * n_boot:
        return Interval(value, nan, nan, n, level, dropped)
    low, high = np.quantile(good, [0.5 - level / 2, 0.5 + level / 2])
    return Interval(value, float(low), float(high), n, level, dropped)


def worst(cells: dict[Any, Interval], end: str) -> Any:
    """The key of the cell whose interval ``end`` is worst for a claim that must hold in every
    cell: the largest ``high`` (an "every one below" claim) or the smallest ``low`` ("every one
    above"); a non-finite end counts as the worst."""
    sign = 1.0 if end == "high" else -1.0

    def badness(key) -> float:
        v = getattr(cells[key], end)
        return sign * v if math.isfinite(v) else math.inf

    return max(cells, key=badness)


def _point(groups: Groups, statistic: Callable[..., float], level: float):
    """The groups as arrays, the statistic of the data, and the interval when no spread can be
    estimated: NaN for a non-finite per-seed value or statistic, infinite for one seed; else
    None."""
    arrays = _groups(groups)
    n = min(a.size for a in arrays)
    nan = float("nan")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        return arrays, nan, Interval(nan, nan, nan, n, level)
    value = float(statistic(*arrays))
    if not math.isfinite(value):
        return arrays, value, Interval(nan, nan, nan, n, level)
    if n < 2:  # one seed (a resample of it is itself): no spread to learn from
        return arrays, value, Interval(value, -math.inf, math.inf, n, level)
    return arrays, value, None


def _groups(groups) -> list[np.ndarray]:
    if len(groups) and np.ndim(groups[0]) == 0:
        return [np.asarray(groups, dtype=float)]
    return [np.asarray(g, dtype=float).ravel() for g in groups]
