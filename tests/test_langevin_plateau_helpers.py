"""The plateau, rate and min-F helpers of attndyn.models.langevin.stationary (docs/langevin.md)."""

from __future__ import annotations

import numpy as np
import pytest

from attndyn.models import langevin as L
from attndyn.models.langevin import stationary as S
from attndyn.models.langevin.potentials import flat_directions


@pytest.mark.parametrize("amplitude", [2.0, -0.7])
def test_relaxation_rate_recovers_a_known_exponential(amplitude):
    t = np.linspace(0, 20, 201)
    curve = 1.5 + amplitude * np.exp(-0.37 * t)
    assert S.relaxation_rate(t, curve, 1.5, 1e-6) == pytest.approx(0.37, rel=1e-6)


def test_relaxation_rate_is_nan_without_an_approach():
    t = np.linspace(0, 1, 11)
    assert np.isnan(S.relaxation_rate(t, np.ones_like(t), 1.0, 1e-3))


def test_window_change_is_the_drift_over_the_window():
    t = np.linspace(0, 10, 101)
    rng = np.random.default_rng(0)
    offsets = rng.normal(size=(5, 1))  # per-chain constants do not drift
    values = offsets + 0.3 * t[None, :]
    assert S.window_change(values, t, 4.0) == pytest.approx(0.3 * 6.0, rel=1e-9)
    assert S.window_change(offsets + 0 * t[None, :], t, 4.0) == pytest.approx(0.0, abs=1e-12)


def test_em_gap_factor_drops_flat_directions_and_matches_the_ar1_variance():
    h, H = 0.1, np.array([0.0, 0.0, 2.0, 4.0])
    expected = np.mean([1 / (1 - h * 2.0 / 2), 1 / (1 - h * 4.0 / 2)])
    assert S.em_gap_factor(H, h, 2) == pytest.approx(expected)
    assert S.em_gap_factor(np.array([30.0]), 0.1, 0) == np.inf  # hH ≥ 2: EM unstable


def test_plateau_of_an_exact_ou_run_matches_the_em_laplace_gap():
    """F = (λ/2)‖θ‖² (quadratic: the Laplace value is exact) under EM with a large step: the
    stationary E F is (s·p/4)/(1 − hλ/2), 25 % above s·p/4, and the time-averaged plateau
    resolves it (4 standard errors over independent chains)."""
    lam, h, s, dim = 2.0, 0.2, 0.5, 8
    c = L.LangevinConfig(
        model="quadratic", lam=lam, h=h, s=s, dim=dim, t_max=60.0, records=121, seeds=200
    )
    tr = L.simulate(c)
    avg = S.time_average(tr["F"].values, tr["time"].values, 10.0)
    predicted = S.laplace_gap(s, dim) * S.em_gap_factor(np.full(dim, lam), h, 0)
    se = avg.std(ddof=1) / np.sqrt(avg.size)
    assert abs(avg.mean() - predicted) < 4 * se
    assert abs(avg.mean() - S.laplace_gap(s, dim)) > 4 * se  # the O(h) bias is resolved


def test_minimise_newton_finds_the_double_well_minimum_and_its_curvature():
    c = L.LangevinConfig(model="double-well", lam=0.0, dim=3, s=0.0, init_scale=1.0)
    F, g_sq, eig = S.minimise_newton(c, range(4))
    assert np.min(F) == pytest.approx(0.0, abs=1e-9)
    assert np.max(g_sq) < 1e-10
    np.testing.assert_allclose(eig, 8.0, rtol=1e-4)  # F'' = 12x² − 4 at x = ±1


LORA = dict(
    model="lora", d=4, width=8, rank=2, lam=0.3, n=32, teacher_scale=3.0, label_noise=0.3, s=0.0
)


def test_lora_minimum_has_exactly_the_symmetry_orbit_flat():
    """At the LoRA minimiser (full rank here) the Hessian has r(r − 1)/2 zero eigenvalues (the
    O(r) orbit) and the others positive: nondegenerate up to the symmetry."""
    c = L.LangevinConfig(**LORA)
    F, _, eig = S.minimise_newton(c, range(3))
    flat = flat_directions(c)
    order = np.sort(np.abs(eig))
    assert flat == 1
    assert order[flat - 1] < 1e-3 * c.lam and order[flat] > 0.1 * c.lam
    assert eig[0] > -1e-3 * c.lam  # a minimum, not a saddle
    # gradient descent (the s = 0 dynamics) reaches the same minimum
    F_gd, g_gd, params = S.minimise(c, range(1), 2000, 0.1)
    assert np.min(F_gd) == pytest.approx(np.min(F), rel=1e-5)
    eig_gd = S.hessian_eigenvalues(c, {k: v[int(np.argmin(F_gd))] for k, v in params.items()})
    np.testing.assert_allclose(np.sort(eig_gd)[flat:], np.sort(eig)[flat:], rtol=1e-3, atol=1e-4)
