"""The plateau, rate and min-F helpers of attndyn.models.langevin.stationary (docs/langevin.md)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.experiments.langevin.plateau_common import orbit_tolerance, spectrum
from attndyn.models import langevin as L
from attndyn.models.langevin import stationary as S
from attndyn.models.langevin.model import (
    flat_directions,
    lora_forward,
    orbit_dimension,
    potential,
)


@pytest.mark.parametrize("amplitude", [2.0, -0.7])
def test_relaxation_rate_recovers_a_known_exponential(amplitude):
    t = np.linspace(0, 20, 201)
    curve = 1.5 + amplitude * np.exp(-0.37 * t)
    assert S.relaxation_rate(t, curve, 1.5, 1e-6) == pytest.approx(0.37, rel=1e-6)


def _ou_modes(rates, chains=400, steps=400, dt=0.25, seed=0):
    """Exact stationary OU samples x_i(t) with dx = −k_i x dt + dW (unit stationary variance
    after scaling), on a grid of spacing dt: (chain, time, mode)."""
    rng = np.random.default_rng(seed)
    k = np.asarray(rates, dtype=float)
    a = np.exp(-k * dt)
    x = np.empty((chains, steps, len(k)))
    x[:, 0] = rng.standard_normal((chains, len(k)))
    for t in range(1, steps):
        x[:, t] = a * x[:, t - 1] + np.sqrt(1 - a**2) * rng.standard_normal((chains, len(k)))
    return x


def test_slowest_rate_finds_the_slowest_mode_in_the_span_and_bounds_the_gap_from_above():
    """Two independent OU modes (rates 0.5 and 2; the gap is 0.5): observables x₂, x₁ + x₂ and
    x₂² span the slow mode, so the estimate is 0.5 (within 5 % at 400 × 400 samples); without x₁
    in the span it is x₂'s own rate 2 (an upper bound on the gap, never below it); the quadratic
    x₁² alone relaxes at 2 × 0.5 = 1. The lag does not move the estimate for an exact mode."""
    x = _ou_modes([0.5, 2.0])
    x1, x2 = x[..., 0], x[..., 1]
    mixed = np.stack([x2, x1 + x2, x2**2], axis=-1)
    for lag in (1, 4):
        assert S.slowest_rate(mixed, lag, 0.25) == pytest.approx(0.5, rel=0.05)
    assert S.slowest_rate(x2[..., None], 2, 0.25) == pytest.approx(2.0, rel=0.05)
    assert S.slowest_rate(x1[..., None] ** 2, 2, 0.25) == pytest.approx(1.0, rel=0.07)
    # a collinear copy (F = loss + reg in the experiment) is dropped, not a singular C(0)
    dup = np.stack([x1, x2, x1 + 2 * x2], axis=-1)
    assert S.slowest_rate(dup, 2, 0.25) == pytest.approx(0.5, rel=0.05)


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
    F, g_sq, eig, _ = S.minimise_newton(c, range(4))
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
    F, g_sq, eig, best = S.minimise_newton(c, range(3))
    flat = flat_directions(c)
    order = np.sort(np.abs(eig))
    assert flat == 1
    # the orbit through the minimiser found is the generic one, and the Hessian shows it
    tol = orbit_tolerance(float(g_sq[int(np.argmin(F))]), c.lam)
    assert orbit_dimension(c, best, {}, tol) == flat
    assert spectrum(_values(c), eig, 0.01, flat)["flat_observed"] == flat
    # a degenerate minimum (one more zero eigenvalue) fails the count
    assert spectrum(_values(c), np.append(eig, 0.0), 0.01, flat)["flat_observed"] == flat + 1
    assert order[flat - 1] < 1e-3 * c.lam and order[flat] > 0.1 * c.lam
    assert eig[0] > -1e-3 * c.lam  # a minimum, not a saddle
    # gradient descent (the s = 0 dynamics) reaches the same minimum
    F_gd, g_gd, params = S.minimise(c, range(1), 2000, 0.1)
    assert np.min(F_gd) == pytest.approx(np.min(F), rel=1e-5)
    eig_gd = S.hessian_eigenvalues(c, {k: v[int(np.argmin(F_gd))] for k, v in params.items()})
    np.testing.assert_allclose(np.sort(eig_gd)[flat:], np.sort(eig)[flat:], rtol=1e-3, atol=1e-4)


def _values(c: L.LangevinConfig) -> dict:
    return c.model_dump(exclude={"s", "seeds", "t_max", "records", "h", "dynamics", "beta"})


def test_orbit_dimension_is_the_generic_count_and_smaller_at_rank_deficient_points():
    """o(r) − o(r − k) for factors of rank k: r(r − 1)/2 generic, r − 1 at rank 1, 0 at
    A = B = 0; attention's per-head O(d_k) orbit likewise."""
    rng = np.random.default_rng(0)
    c = L.LangevinConfig(model="lora", d=4, width=8, rank=3)
    B, A = rng.normal(size=(8, 3)), rng.normal(size=(3, 4))
    assert orbit_dimension(c, {"A": A, "B": B}, {}, 1e-8) == flat_directions(c) == 3
    u = rng.normal(size=(3, 1))
    rank1 = {"A": u @ rng.normal(size=(1, 4)), "B": rng.normal(size=(8, 1)) @ u.T}
    assert orbit_dimension(c, rank1, {}, 1e-8) == 2
    assert orbit_dimension(c, {"A": 1e-9 * A, "B": 1e-9 * B}, {}, 1e-8) == 0
    ca = L.LangevinConfig(model="attention", d=3, heads=2, d_k=2, train_k=False)
    W = {g: rng.normal(size=(2, 3, 2)) for g in ("Q", "K", "V")}
    fixed = {"K": W.pop("K")}
    assert orbit_dimension(ca, W, fixed, 1e-8) == flat_directions(ca) == 0  # K frozen
    cb = L.LangevinConfig(model="attention", d=3, heads=2, d_k=2)
    assert orbit_dimension(cb, {**W, **fixed}, {}, 1e-8) == flat_directions(cb) == 2


def test_adapter_free_minimum_has_no_flat_direction_and_the_predicted_spectrum():
    """When σ₁(G) < λ, G = ∇_W L̂(W₀), the point A = B = 0 is a strict minimum of
    L̂(W₀ + BA) + (λ/2)(‖A‖² + ‖B‖²) (λ‖BA‖_* at balanced factors; its subdifferential at 0 is
    the spectral ball of radius λ): the quadratic form there is Σ_k (λ/2)(‖a_k‖² + ‖b_k‖²) +
    b_kᵀG a_k, eigenvalues λ ± σ_i(G) and λ, each r times. Its O(r) orbit is a point, so the
    Hessian has no flat direction although the generic count is r(r − 1)/2 = 1."""
    c0 = L.LangevinConfig(**LORA)
    fz = L.frozen_part(c0, potential(c0))

    def loss(D):
        pred = lora_forward(jnp.eye(4), D, fz["W0"], fz["a"], fz["X"], "tanh")
        return 0.5 * jnp.mean(jnp.square(pred - fz["Y"]))

    sigma = np.linalg.svd(np.asarray(jax.grad(loss)(jnp.zeros((8, 4))), float), compute_uv=False)
    lam = 2.0 * float(sigma[0])
    c = L.LangevinConfig(**{**LORA, "lam": lam})
    F, g_sq, eig, best = S.minimise_newton(c, range(3))
    b = int(np.argmin(F))
    assert np.linalg.norm(best["A"]) < 1e-3 and np.linalg.norm(best["B"]) < 1e-3
    predicted = np.sort(np.concatenate([lam - sigma, lam + sigma, np.full(8 - 4, lam)] * 2))
    np.testing.assert_allclose(eig, predicted, rtol=1e-4, atol=1e-5 * lam)
    orbit = orbit_dimension(c, best, {}, orbit_tolerance(float(g_sq[b]), lam))
    assert orbit == 0 and flat_directions(c) == 1
    spec = spectrum(_values(c), eig, 0.01, orbit)
    assert spec["flat_observed"] == spec["flat"] == 0 and spec["p_eff"] == spec["p"] == 24
