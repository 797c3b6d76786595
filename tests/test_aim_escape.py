"""The censored escape-time helpers of aim-untied-escape and aim-direct-escape
(src/attndyn/experiments/aim/escape.py): Kaplan–Meier, its median under censoring at the
horizon, and κ in median τ_wr ∝ d^κ, on exact synthetic laws."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attndyn.experiments.aim import escape as E


def test_km_survival_textbook_example_with_censoring():
    # times 1, 2, 2+, 3, 4+, 5: S = 5/6, 5/6·4/5, ·2/3, ·0
    steps, surv = E.km_survival([1, 2, 2, 3, 4, 5], events=[1, 1, 0, 1, 0, 1])
    assert steps.tolist() == [1, 2, 3, 5]
    np.testing.assert_allclose(surv, [5 / 6, 4 / 6, 4 / 9, 0.0])


def test_km_survival_without_censoring_is_the_empirical_survival():
    x = np.random.default_rng(0).exponential(size=37)
    steps, surv = E.km_survival(x)
    np.testing.assert_allclose(steps, np.sort(x))
    np.testing.assert_allclose(surv, 1 - np.arange(1, 38) / 37)


@pytest.mark.parametrize("n", [7, 20, 21, 40])
def test_km_median_is_the_first_event_with_survival_at_most_half(n):
    rng = np.random.default_rng(n)
    horizon = 1.2
    for _ in range(20):
        x = np.minimum(rng.exponential(size=n), horizon)  # censored at the horizon
        med = E.km_median(x, horizon)
        if E.censored_fraction(x, horizon) >= 0.5:
            assert math.isnan(med)
            continue
        steps, surv = E.km_survival(x, horizon)
        assert med == steps[np.nonzero(surv <= 0.5 + 1e-12)[0][0]]


def test_km_median_of_an_exact_law_under_heavy_censoring():
    # Exp(1) censored at τ = 1: 37 % censored; the KM median estimates ln 2
    x = np.minimum(np.random.default_rng(1).exponential(size=40_000), 1.0)
    assert E.censored_fraction(x, 1.0) == pytest.approx(math.exp(-1), abs=0.01)
    assert E.km_median(x, 1.0) == pytest.approx(math.log(2), rel=0.02)
    # censored at 0.6 < ln 2: more than half censored, no median
    assert math.isnan(E.km_median(np.minimum(x, 0.6), 0.6))


def _law(ds, kappa, n, seed, horizon=np.inf):
    """τ = d^κ · Exp(1) per seed (median ∝ d^κ exactly), censored at ``horizon``."""
    rng = np.random.default_rng(seed)
    return [np.minimum(d**kappa * rng.exponential(size=n), horizon) for d in ds]


@pytest.mark.parametrize("kappa", [0.0, 0.5, 1.0])
def test_kappa_recovers_the_exponent_of_an_exact_law(kappa):
    ds = [24, 32, 45, 64]
    groups = _law(ds, kappa, 20_000, 2)
    assert E.kappa(ds, [np.inf] * 4, *groups) == pytest.approx(kappa, abs=0.03)


def test_kappa_with_censoring_below_half_is_unbiased_and_above_half_is_a_lower_bound():
    ds = [24, 32, 45, 64]
    horizon = 1.2 * 64**1.0 * math.log(2)  # largest d: P(censored) = 2^−1.2 ≈ 0.44
    groups = _law(ds, 1.0, 20_000, 3, horizon)
    hs = [horizon] * 4
    assert E.censored_fraction(groups[-1], horizon) == pytest.approx(0.435, abs=0.02)
    assert E.kappa(ds, hs, *groups) == pytest.approx(1.0, abs=0.03)
    short = 0.8 * 64 * math.log(2)  # the largest d now > 50 % censored
    censored = [np.minimum(g, short) for g in groups]
    assert math.isnan(E.kappa(ds, [short] * 4, *censored))
    low = E.kappa_lower(ds, [short] * 4, censored)
    exact = np.polyfit(np.log(ds), np.log([24, 32, 45, 0.8 * 64]), 1)[0]  # τ_max at d = 64
    assert low == pytest.approx(exact, abs=0.03) and low < 1.0


def test_kappa_interval_covers_the_exponent_by_bootstrap_and_jackknife():
    ds = [24, 45]
    big = E.kappa_interval(ds, [np.inf, np.inf], _law(ds, 1.0, 400, 4))  # bootstrap path
    assert big.low < 1.0 < big.high and big.high - big.low < 0.6
    small = E.kappa_interval(ds, [np.inf, np.inf], _law(ds, 1.0, 8, 5))  # jackknife-t
    assert small.finite and small.n_seeds == 8


def test_escape_times_interpolate_censor_and_drop_diverged_seeds():
    tau = np.linspace(0.0, 1.0, 11)
    rising = np.clip(tau, 0, None)  # crosses 0.35 at τ = 0.35
    flat = np.full(11, 0.1)  # never: censored at the horizon
    diverged = rising.copy()
    diverged[2] = np.nan  # not finite before its crossing
    out = E.escape_times(tau, np.stack([rising, flat, diverged]), 0.35, 1.0)
    assert out[0] == pytest.approx(0.35) and out[1] == 1.0 and math.isnan(out[2])


def test_ratio_counts_a_censored_numerator_as_its_horizon():
    fast = np.full(20, 0.1)
    slow = np.full(20, 5.0)  # every seed censored at the horizon 2.0
    stat = E.ratio_statistic([2.0], [1.0])
    assert stat(slow, fast) == pytest.approx(20.0)  # ≥ 2.0/0.1, a lower bound
    assert math.isnan(stat(fast, np.full(20, 1.0)))  # censored denominator: no ratio
