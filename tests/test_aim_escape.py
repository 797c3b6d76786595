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


def test_growth_is_the_difference_of_the_two_kappas():
    # numerator medians ∝ d^0.7, denominator ∝ d^0.2 (uncensored): κ_num − κ_den = 0.5 exactly
    ds = [16.0, 32.0, 64.0]
    base = np.linspace(0.5, 1.5, 21)  # odd count: the median is the middle value, 1.0
    num = [base * 0.1 * d**0.7 for d in ds]
    den = [base * 0.01 * d**0.2 for d in ds]
    stat = E.growth_statistic(ds, [1e9] * 3, [1e9] * 3)
    assert stat(*num, *den) == pytest.approx(0.5)
    kappas = E.kappa(ds, [1e9] * 3, *num) - E.kappa(ds, [1e9] * 3, *den)
    assert stat(*num, *den) == pytest.approx(kappas)


def test_growth_with_a_censored_denominator_is_nan():
    ds = [16.0, 32.0]
    ok = np.full(21, 0.2)
    censored = np.full(21, 1.0)  # every seed at its horizon 1.0
    stat = E.growth_statistic(ds, [1.0, 1.0], [1.0, 1.0])
    assert math.isnan(stat(ok, ok, ok, censored))
    assert stat(ok, censored, ok, ok) == pytest.approx(np.log(5.0) / np.log(2.0))  # lower bound


def _lognormal_times(rng, median: float, sigma: float, n: int, horizon: float) -> np.ndarray:
    """Escape times with a known median, right-censored at ``horizon`` (encoded as horizon)."""
    return np.minimum(median * np.exp(sigma * rng.standard_normal(n)), horizon)


@pytest.mark.slow  # ≈ 20 s each: 200 draws × 3 statistics × 400 resamples
@pytest.mark.parametrize("n_case", [20, 40, 80])
def test_escape_intervals_cover_at_the_seed_counts_in_use(n_case):
    """Coverage of the percentile bootstrap of κ (h1's claim, 160 seeds), of the growth
    κ(case) − κ(h1) and of the min-ratio (the case at 20, 40 or 80 seeds, as in the escape
    presets), on log-normal escape times whose medians follow known power laws, with about 10 %
    of the case's seeds censored at the largest d. Measured (seeded, 200 draws, 400 resamples each;
    standard error 0.015 at a true 0.95): κ 0.965, 0.94, 0.935, growth 0.955, 0.955, 0.97, ratio
    0.93, 0.93, 0.955 at 20, 40 and 80 seeds (80: the tiny preset's h2)."""
    from attndyn.claims.stats import bootstrap_ci

    ds = [24.0, 32.0, 45.0, 64.0]
    k_case, k_ref = 0.6, 0.0
    med_case = [0.4 * (d / 24) ** k_case for d in ds]
    med_ref = [0.28 * (d / 24) ** k_ref for d in ds]
    h_case = [m * np.exp(0.5 * 1.2816) for m in med_case]  # 10 % above the horizon (σ = 0.5)
    h_ref = [10.0] * 4
    truth = {
        "kappa": k_ref,
        "growth": k_case - k_ref,
        "ratio": min(a / b for a, b in zip(med_case, med_ref, strict=True)),
    }
    rng = np.random.default_rng(n_case)
    hits = dict.fromkeys(truth, 0)
    reps = 200
    for r in range(reps):
        case = [
            _lognormal_times(rng, m, 0.5, n_case, h) for m, h in zip(med_case, h_case, strict=True)
        ]
        ref = [_lognormal_times(rng, m, 0.2, 160, h) for m, h in zip(med_ref, h_ref, strict=True)]
        intervals = {
            "kappa": bootstrap_ci(ref, lambda *g: E.kappa(ds, h_ref, *g), n_boot=400, seed=r),
            "growth": bootstrap_ci(
                case + ref, E.growth_statistic(ds, h_case, h_ref), n_boot=400, seed=r
            ),
            "ratio": bootstrap_ci(case + ref, E.ratio_statistic(h_case, h_ref), n_boot=400, seed=r),
        }
        for key, iv in intervals.items():
            hits[key] += iv.low <= truth[key] <= iv.high
    coverage = {k: v / reps for k, v in hits.items()}
    assert min(coverage.values()) >= 0.9, coverage
