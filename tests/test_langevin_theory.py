"""The Langevin family's theory (test potentials) against simulation and independent methods.

Monte Carlo tolerances: a mean over n chains is compared at every record point with
|sim − theory| ≤ Z·SE (Z = 4.5, two-sided p ≈ 7·10⁻⁶ per point, so ~20 points fail together with
probability < 10⁻³ for a correct theory); seeds are fixed, so a pass is reproducible.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special
from scipy.linalg import eigh_tridiagonal

from attndyn.errors import InputError
from attndyn.models import langevin as L
from attndyn.models.langevin import theory as T
from attndyn.models.langevin.stationary import exponential_rate, sgd_stability_limit
from attndyn.models.langevin.theory import fokker_planck as fp
from attndyn.models.langevin.theory import ou

Z = 4.5


def _sim(**values):
    return L.simulate(L.LangevinConfig(**values))


def test_ou_moments_match_the_trainer():
    """Mean and variance of θ₁ at every record point, the decay rate of the mean and the
    plateau: the EM chain's exact Gaussian moments (bias accounted for exactly); the continuous
    SDE's differ from them by O(h)."""
    lam, s, h, x0, s0 = 1.0, 0.5, 0.02, 2.0, 0.5
    values = dict(model="quadratic", lam=lam, s=s, h=h, t_max=4.0, x0=x0, init_scale=s0)
    tr = _sim(**values, seeds=4000, records=21, grid="linear", dtype="float64")
    x = tr["x"].values
    n = x.shape[0]
    t = tr["time"].values
    m, v = ou.moments(t, lam, s, x0, s0, h=h)
    se_mean = np.sqrt(v / n)
    assert np.all(np.abs(x.mean(0) - m) <= Z * se_mean + 1e-12)
    se_var = v * math.sqrt(2.0 / (n - 1))
    assert np.all(np.abs(x.var(0, ddof=1) - v) <= Z * se_var)
    # the SDE's moments: within O(h) of the chain's (|Δv| ≤ h·(λ s/2 + …), small here)
    mc, vc = ou.moments(t, lam, s, x0, s0)
    assert np.max(np.abs(mc - m)) < h * lam * x0 and np.max(np.abs(vc - v)) < h * (s + lam * s0**2)
    # decay rate of E θ₁: the EM chain's −log(1 − λh)/h = λ(1 + λh/2 + …), fitted while the mean
    # stays above 10 standard errors, within 0.08 λ: over seeds 0, 1000, …, 7000 the fit's error
    # was +0.019 ± 0.014 (the log of a noisy mean biases the fitted slope up), so 0.08 is the
    # bias plus 4 standard deviations; a rate 10 % off fails it
    rate = exponential_rate(t, x.mean(0), 0.0, 10 * se_mean[-1])
    assert abs(rate - (-math.log(1 - lam * h) / h)) < 0.08 * lam, rate
    # plateau: at t = 4 the variance is the EM chain's stationary s/(λ(2 − λh)) up to e^{−8}
    station = ou.stationary_variance(lam, s, h)
    assert abs(x[:, -1].var(ddof=1) - station) <= Z * se_var[-1] + s0**2 * math.exp(-2 * lam * 4)
    # predict() is the SDE's: its F is (λ/2)(m² + v)
    th = T.predict(T.Config(**values, seeds=1, records=21, grid="linear"))
    np.testing.assert_allclose(th["F"].values, 0.5 * lam * (mc**2 + vc), rtol=1e-12)
    np.testing.assert_allclose(th["time"].values, t, rtol=1e-12)


def test_fokker_planck_matches_a_simulated_double_well():
    """E F(t), E x(t), E x²(t) of 2000 chains at s = 0.5 from x ~ N(1, 0.2²) against the FP
    prediction; the EM bias at h = 0.004 (kernel computation) is below one standard error."""
    values = dict(model="double-well", lam=0.0, s=0.5, h=0.004, t_max=4.0, x0=1.0, init_scale=0.2)
    tr = _sim(**values, seeds=2000, records=16, grid="linear")
    th = T.predict(T.Config(**values, records=16, grid="linear"))
    n = tr.sizes["seed"]
    for name in ("F", "x", "sq_norm"):
        sim = tr[name].values
        se = sim.std(0, ddof=1) / math.sqrt(n)
        assert np.all(np.abs(sim.mean(0) - th[name].values) <= Z * se + 1e-9), name
    bias = fp.em_stationary_mean(fp.f, 0.5, 0.004) - fp.gibbs_mean_f(0.5)
    se_F = tr["F"].values[:, -1].std(ddof=1) / math.sqrt(n)
    assert abs(bias) < se_F


def test_fokker_planck_prediction_converges_under_refinement():
    values = dict(model="double-well", lam=0.5, s=0.4, t_max=5.0, x0=0.3, init_scale=0.5)
    preds = [T.predict(T.Config(**values, records=8, fp_cells=c)) for c in (300, 600, 1200)]
    d1 = np.max(np.abs(preds[0]["F"].values - preds[1]["F"].values))
    d2 = np.max(np.abs(preds[1]["F"].values - preds[2]["F"].values))
    assert d2 < 1e-3 and d2 < d1 / 3  # second order: the difference quarters
    # the long-time limit is the Gibbs mean (quadrature)
    late = T.predict(T.Config(**{**values, "t_max": 50.0}, records=4))["F"].values[-1]
    assert abs(late - fp.gibbs_mean_f(0.4, 0.5)) < 1e-4


@pytest.mark.parametrize("s", [1.0, 0.5, 0.2])
def test_gibbs_quadrature_against_bessel_closed_form(s):
    """λ = 0: Z(a) = ∫exp(−a(x²−1)²)dx = (π/2)e^{−a/2}[I_{−1/4}(a/2) + I_{1/4}(a/2)] (from
    Gradshteyn & Ryzhik 3.323.3), so E_μ f = −d log Z/da at a = 2/s = ½[1 − ΣI'_ν/ΣI_ν](a/2)."""
    z = 1.0 / s
    nu = (-0.25, 0.25)
    closed = 0.5 * (1 - sum(special.ivp(v, z) for v in nu) / sum(special.iv(v, z) for v in nu))
    assert abs(fp.gibbs_mean_f(s) - closed) < 1e-10
    assert T.stationary_mean_F("double-well", s, 0.0, dim=3) == pytest.approx(3 * closed, 1e-10)


def test_gibbs_quadrature_against_the_grid_with_regulariser():
    """λ > 0 (no closed form): the discrete Gibbs weights of finer grids (a midpoint rule, which
    converges geometrically for this analytic, rapidly decaying integrand: Trefethen & Weideman,
    SIAM Review 56, 385 (2014)) converge to the adaptive quadrature."""
    s, lam = 0.3, 0.8
    exact = fp.gibbs_mean_f(s, lam)
    errs = []
    for cells in (10, 20, 40):
        g = fp.grid(s, lam, cells)
        errs.append(abs(g.gibbs() @ fp.f(g.x, lam) - exact))
    assert errs[2] < errs[1] < errs[0] and errs[2] < 1e-9


def _schrodinger_gap(s: float, lam: float, cells: int, L: float) -> float:
    """Independent discretisation: −(s/2)ψ'' + [f'²/(2s) − f''/2]ψ by central differences with
    ψ = 0 at ±L; its two lowest eigenvalues' difference."""
    x = np.linspace(-L, L, cells + 2)[1:-1]
    dx = x[1] - x[0]
    ddf = 12 * x * x - 4 + lam
    U = fp.df(x, lam) ** 2 / (2 * s) - ddf / 2
    diag = s / dx**2 + U
    off = np.full(cells - 1, -s / (2 * dx**2))
    e = eigh_tridiagonal(diag, off, eigvals_only=True, select="i", select_range=(0, 1))
    return float(e[1] - e[0])


@pytest.mark.parametrize("s, lam", [(1.0, 0.0), (0.4, 0.0), (0.5, 1.0)])
def test_spectral_gap_refines_and_agrees_with_the_schrodinger_form(s, lam):
    gaps = [T.spectral_gap(s, lam, cells) for cells in (300, 600, 1200)]
    assert abs(gaps[2] - gaps[1]) < abs(gaps[1] - gaps[0]) / 3  # second order
    L = fp.half_width(s, lam)
    other = _schrodinger_gap(s, lam, 4000, L)
    assert abs(other / gaps[2] - 1) < 1e-4, (other, gaps)


def test_gap_tends_to_eyring_kramers_as_s_falls():
    """λ_s / (2k_Kramers) → 1 with corrections O(s) (Berglund, arXiv 1106.5799, Eq. 1.6)."""
    ss = (0.25, 1 / 6, 0.125)
    dev = [abs(T.spectral_gap(s) / T.kramers_rate(s) - 1) for s in ss]
    assert dev[0] > dev[1] > dev[2]
    assert all(d < s / 4 for d, s in zip(dev, ss, strict=True)), dev
    with pytest.raises(InputError, match="'s'"):
        T.spectral_gap(0.03)  # λ_s ~ e^{-67}: below the eigensolver's precision


def test_other_models_are_an_input_error():
    with pytest.raises(InputError, match="model.*quadratic.*double-well"):
        T.predict(T.Config(model="attention"))
    with pytest.raises(InputError, match="model"):
        T.stationary_mean_F("lora", 0.5)


def test_euler_maruyama_kernel_bias_is_first_order_in_h():
    """The EM chain's stationary E f, decay rate and |X|-law (its Gaussian kernel, Nyström) tend
    to the SDE's as h → 0, linearly (weak order 1: Talay & Tubaro 1990): halving h halves each
    discrepancy to within 20 % (the O(h²) term); and at h = 0.04 the kernel's E f agrees with 500
    chains × 4 coordinates of the trainer, which resolve its bias."""
    s = 0.5
    exact_F, gap = fp.gibbs_mean_f(s), T.spectral_gap(s)
    bias = [fp.em_stationary_mean(fp.f, s, h) - exact_F for h in (0.02, 0.01, 0.005)]
    rate = [fp.em_relaxation_rate(s, h) - gap for h in (0.02, 0.01, 0.005)]
    ks = [fp.em_ks_distance_abs(s, h) for h in (0.02, 0.01, 0.005)]
    for err in (bias, rate, ks):
        assert err[0] > 0 and all(1.7 < a / b < 2.4 for a, b in zip(err, err[1:], strict=False))
    # the chain itself at h = 0.04 (bias ~15 %): its time-averaged F matches the kernel's value
    tr = _sim(model="double-well", lam=0.0, s=s, h=0.04, t_max=40.0, x0=1.0, init_scale=0.0, dim=4,
              seeds=500, records=81, grid="linear")  # fmt: skip
    per_chain = tr["F"].values[:, tr["time"].values >= 2.0].mean(1) / 4
    em = fp.em_stationary_mean(fp.f, s, 0.04)
    assert abs(per_chain.mean() - em) <= Z * per_chain.std(ddof=1) / math.sqrt(per_chain.size)
    assert abs(em - exact_F) > 10 * per_chain.std(ddof=1) / math.sqrt(per_chain.size)


def _second_moment_radius(H, Hi, b, s):
    """ρ of the exact second-moment map of linear minibatch SGD on vec(C): (I − sH)⊗(I − sH) +
    (s²/b)(E H_i⊗H_i − H̃⊗H̃), H̃ = E H_i (with-replacement draws)."""
    p = len(H)
    A = np.eye(p) - s * H
    Hm = Hi.mean(axis=0)
    T = np.kron(A, A) + (s**2 / b) * (
        np.mean([np.kron(x, x) for x in Hi], axis=0) - np.kron(Hm, Hm)
    )
    return max(abs(np.linalg.eigvals(T)))


def test_sgd_stability_limit_scalar_closed_form():
    """p = 1: (1 − sH)² + (s²/b)Var(h) < 1 ⟺ s < 2H/(H² + Var(h)/b), H = mean(h) + λ."""
    h = np.array([0.2, 1.5, 4.0, 0.7])
    lam, b = 0.3, 2
    H = h.mean() + lam
    want = 2 * H / (H**2 + h.var() / b)
    got = sgd_stability_limit(np.array([[H]]), h[:, None, None], b)
    assert got == pytest.approx(want, rel=1e-8)


def test_sgd_stability_limit_without_sampling_noise_is_two_over_lambda_max():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 4))
    A = X @ X.T
    H = A + 0.1 * np.eye(4)
    got = sgd_stability_limit(H, np.stack([A] * 6), batch=1)
    assert got == pytest.approx(2 / np.linalg.eigvalsh(H)[-1], rel=1e-8)


def test_sgd_stability_limit_is_where_the_second_moment_map_reaches_one():
    """Random per-sample Hessians (p = 3, n = 5, b = 1): the exact p² × p² second-moment map has
    spectral radius 1 at s_c, below 1 just under it and above 1 just over it."""
    rng = np.random.default_rng(1)
    Hi = np.stack([(lambda x: x @ x.T)(rng.normal(size=(3, 2))) for _ in range(5)])
    H = Hi.mean(axis=0) + 0.2 * np.eye(3)
    s_c = sgd_stability_limit(H, Hi, batch=1)
    assert s_c < 2 / np.linalg.eigvalsh(H)[-1]  # the noise makes the limit stricter than GD's
    assert _second_moment_radius(H, Hi, 1, s_c) == pytest.approx(1.0, abs=1e-7)
    assert (
        _second_moment_radius(H, Hi, 1, 0.98 * s_c)
        < 1
        < _second_moment_radius(H, Hi, 1, 1.02 * s_c)
    )
