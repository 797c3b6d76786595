"""The LoRA balance b = ‖A‖² − ‖B‖² under dΘ = −∇F dt + √s dW (docs/langevin.md, "The
balance"): L̂ depends on BA only, so ⟨A, ∇_A L̂⟩ = ⟨B, ∇_B L̂⟩ and Itô's formula
gives db = −2λ b dt + s(#A − #B) dt + 2√s(⟨A, dW_A⟩ − ⟨B, dW_B⟩), whatever the loss:

- E b_t = b* + (E b_0 − b*) e^{−2λt} with b* = s(#A − #B)/(2λ) at λ > 0 (mean reversion), and
  E b_t = E b_0 + s(#A − #B) t at λ = 0 (a walk along the GL(r) orbit);
- Var(b_t − b_0) = 4s ∫₀ᵗ E(‖A‖² + ‖B‖²) du at λ = 0.

These identities were the claims `lora-walk` / `lora-bounded` of the retired experiment
langevin-regularization (docs/langevin.md).
"""

from __future__ import annotations

import functools
import math

import jax
import numpy as np
import pytest

from attndyn.models import langevin as L
from attndyn.models.langevin.model import potential

S, CHAINS = 0.1, 128
BASE = dict(
    model="lora", n=8, width=8, d=4, rank=2, activation="tanh", dynamics="sde", s=S, h=0.02,
    t_max=6.0, records=13, grid="linear", seeds=CHAINS,
)  # fmt: skip


def variance_slope(b: np.ndarray, t: np.ndarray, t_from: float) -> float:
    """Log–log slope of Var_chains(b_t − b_0) against t over the records with t ≥ t_from."""
    var = np.var(b - b[:, :1], axis=0, ddof=1)
    late = t >= t_from
    return float(np.polyfit(np.log(t[late]), np.log(var[late]), 1)[0])


def ito_variance(traj, s: float) -> np.ndarray:
    """4s ∫₀ᵗ E(‖A‖² + ‖B‖²) du (trapezoid over the records): Itô's Var(b_t − b_0) at λ = 0."""
    m = traj["sq_norm"].values.mean(axis=0)
    t = traj["time"].values
    return 4 * s * np.concatenate([[0.0], np.cumsum(np.diff(t) * (m[1:] + m[:-1]) / 2)])


@functools.cache  # each λ is simulated once for the module
def _run(lam: float):
    config = L.LangevinConfig(**BASE, lam=lam)
    params = potential(config).init(jax.random.PRNGKey(0))
    drift = S * (params["A"].size - params["B"].size)  # s(#A − #B): Itô's term
    tr = L.simulate(config)
    return tr["balance"].values.astype(float), tr["time"].values.astype(float), drift, tr


@pytest.mark.parametrize("lam", [0.0, 0.5])
def test_balance_mean_follows_ito(lam):
    """E b_t against the closed form within 4.5 standard errors plus 2 % of the scale (EM's
    O(h) terms h‖∇_A L̂‖² − h‖∇_B L̂‖² are not in the SDE's identity)."""
    b, t, c, _ = _run(lam)
    b0 = b[:, 0].mean()
    if lam == 0:
        want = b0 + c * t
    else:
        star = c / (2 * lam)
        want = star + (b0 - star) * np.exp(-2 * lam * t)
    se = b.std(axis=0, ddof=1) / math.sqrt(CHAINS)
    err = np.abs(b.mean(axis=0) - want)
    assert np.all(err <= 4.5 * se + 0.02 * np.abs(want).max()), (err, se)


def test_balance_variance_is_the_ito_variance_and_grows_without_regularisation():
    """Var(b_t − b_0) over 4s∫E(‖A‖² + ‖B‖²) at the last record: 1 within 4 standard errors of a
    variance ratio (√(2/(n − 1)) for Gaussian increments); its log–log slope over the late half is
    above 1 (a walk: ≥ 1, the norms growing), while at λ = 0.5 it stays near 0 (saturated)."""
    b, t, _, tr = _run(0.0)
    var = np.var(b - b[:, :1], axis=0, ddof=1)
    ratio = var[-1] / ito_variance(tr, S)[-1]
    assert abs(ratio - 1) < 4 * math.sqrt(2 / (CHAINS - 1)), ratio
    assert variance_slope(b, t, t[-1] / 2) > 1.0
    b_reg, t_reg, _, _ = _run(0.5)
    assert abs(variance_slope(b_reg, t_reg, t_reg[-1] / 2)) < 0.3
