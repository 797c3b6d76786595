"""Exact moments of the Ornstein–Uhlenbeck process, F = (λ/2)‖θ‖² (docs/langevin.md, T1).

dΘ = −λΘ dt + √s dW from θ₀ = x0 + σ₀ N(0, I) keeps each coordinate Gaussian, with

    m(t) = x0 e^{−λt},      v(t) = σ₀² e^{−2λt} + (s/2λ)(1 − e^{−2λt}),

so E_μF = p s/4 at stationarity (μ_s = N(0, (s/2λ) I)). Its Euler–Maruyama chain
θ ← (1 − λh)θ + √(sh) ξ is Gaussian too, with a = 1 − λh at t = kh:

    m_k = x0 aᵏ,      v_k = σ₀² a²ᵏ + s h (1 − a²ᵏ)/(1 − a²),

whose stationary variance s/(λ(2 − λh)) exceeds s/(2λ) by the factor 1/(1 − λh/2): the EM bias
(Kloeden & Platen, Numerical Solution of SDEs, §9.1 and §14.1, for the weak order one).
"""

from __future__ import annotations

import numpy as np


def moments(
    t, lam: float, s: float, x0: float, init_scale: float, h: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) of one coordinate at times t: the SDE's (h None) or, at t = k h, the
    Euler–Maruyama chain's (module docstring)."""
    t = np.asarray(t, dtype=float)
    if h is None:
        decay = np.exp(-lam * t)
        return x0 * decay, init_scale**2 * decay**2 + s / (2 * lam) * (1 - decay**2)
    a = 1.0 - lam * h
    k = np.rint(t / h)
    ak = a**k
    return x0 * ak, init_scale**2 * ak**2 + s * h * (1 - ak**2) / (1 - a * a)


def stationary_variance(lam: float, s: float, h: float | None = None) -> float:
    """s/(2λ) (SDE) or s/(λ(2 − λh)) (Euler–Maruyama with step h)."""
    return s / (2 * lam) if h is None else s / (lam * (2 - lam * h))
