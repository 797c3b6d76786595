"""The PL example of P1 = arXiv 2609.03858, App. D.5 (Eqs. 392–394), behind aim-strong-recovery:
the PL bound along the exact flow, the limit rate 8c, the square start's quarter rate, and the
experiment's estimators."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate

from attndyn.errors import InputError
from attndyn.experiments.aim.strong_recovery import excess_loss, fitted_rate, pl_rate
from attndyn.models.aim.config import AIMConfig
from attndyn.models.aim.solvable import eigenvalue_flow, moments_of, riccati_flow

C = 0.5


def _wide_start(d: int, rho: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((d, int(rho * d))) / np.sqrt(d)
    return W @ W.T


def test_pl_bound_along_the_exact_flow():
    """Eq. 394 with c₀ = λ_min(S1): along dS1/dt = 2(S1S2 + S2S1) − 4S1², S2 = cI, the excess
    Φ = (2/d)Tr[(S1 − S2)²] obeys −dΦ/dt = (16/d)Tr[S1(S1 − S2)²] ≥ 8λ_min(S1)·Φ; the derivative
    is checked against central differences of the closed form, and the local rate tends to 8c."""
    d = 48
    S0, S2 = _wide_start(d, 2.0), C * np.eye(d)
    t, h = np.linspace(0.05, 6.0, 40), 1e-5

    def phi(tt):
        D = riccati_flow(S0, S2, tt) - S2
        return 2.0 * np.einsum("tab,tba->t", D, D) / d

    S = riccati_flow(S0, S2, t)
    D = S - S2
    minus_dphi = 16.0 * np.einsum("tab,tbc,tca->t", S, D, D) / d
    np.testing.assert_allclose(minus_dphi, -(phi(t + h) - phi(t - h)) / (2 * h), rtol=1e-6)
    lam_min = np.linalg.eigvalsh(S)[:, 0]
    assert np.all(minus_dphi >= 8.0 * lam_min * phi(t) * (1 - 1e-12))
    assert np.all(lam_min >= min(np.linalg.eigvalsh(S0)[0], C) - 1e-12)  # S1 ⪰ c₀I all along
    assert minus_dphi[-1] / phi(t)[-1:] == pytest.approx(8.0 * C, rel=1e-3)


def test_square_start_falls_at_a_quarter_of_the_pl_rate():
    """A square student (r = d): S1(0)'s eigenvalues follow Marchenko–Pastur on [0, 4] with
    density √(4 − λ)/(2π√λ). With λ = u² the excess of the d → ∞ flow is
    Φ(t) = ∫₀² 2(λ(t; u²) − c)² √(4 − u²)/π du; the modes that start below c·e^{−4ct} (mass
    ∝ e^{−2ct}) set its rate, 2c = 8c/4, the value the square-start control relies on."""

    def phi(t):
        def f(u):
            return 2.0 * (eigenvalue_flow(u * u, C, t) - C) ** 2 * np.sqrt(4.0 - u * u) / np.pi

        return integrate.quad(f, 0.0, 2.0, limit=400, epsabs=0, epsrel=1e-11)[0]

    h = 1e-3
    for t in (3.0, 5.0, 8.0):
        rate = -(np.log(phi(t + h)) - np.log(phi(t - h))) / (2 * h)
        assert rate / (8.0 * C) == pytest.approx(0.25, abs=0.01), t


def test_estimators_excess_and_rate():
    """excess_loss is (2ℓ/d)Tr[(S1 − S2)²] from the moments (Eq. 392); fitted_rate returns r of
    A·e^{−rt} exactly on the window, per seed; pl_rate is 8c (4c for the half loss)."""
    d = 20
    S1, S2 = _wide_start(d, 2.0, seed=1), C * np.eye(d)
    m = {k: np.asarray(v) for k, v in moments_of(S1, S2).items()}

    class Traj(dict):
        def __getitem__(self, k):
            return type("V", (), {"values": m[k]})

    direct = 2.0 * np.trace((S1 - S2) @ (S1 - S2)) / d
    assert excess_loss(Traj(), "full") == pytest.approx(direct, rel=1e-12)
    assert excess_loss(Traj(), "half") == pytest.approx(direct / 2, rel=1e-12)
    t = np.linspace(0.0, 3.0, 31)
    curves = np.stack([3.0 * np.exp(-4.0 * t), 0.1 * np.exp(-1.5 * t + 0.2 * (t < 1.0))])
    np.testing.assert_allclose(fitted_rate(t, curves, (1.5, 3.0)), [4.0, 1.5], rtol=1e-12)
    base = dict(param="tied", L=1, output="index", activation="h1", teacher="identity")
    assert pl_rate(AIMConfig(**base, teacher_scale=0.5, loss_scale="full")) == 4.0
    assert pl_rate(AIMConfig(**base, teacher_scale=0.5, loss_scale="half")) == 2.0


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"d": [64, 32]}, "d"),
        ({"base.teacher": "wishart"}, "base"),
        ({"base.activation": "h2"}, "base"),
        ({"fit_window": [1.0, 5.0]}, "fit_window"),
    ],
)
def test_config_refuses_what_the_rate_cannot_mean(overrides, field):
    """The rate 8c needs the D.3 model with S2 = cI and γ = 0; the fit window lies inside the
    horizon; d increases."""
    from attndyn.claims.runner import experiment_config

    with pytest.raises(InputError, match=field):
        experiment_config("aim-strong-recovery", "tiny", overrides)
