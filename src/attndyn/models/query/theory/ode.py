"""Limiting ODEs of projected and unconstrained SGA on E‖a‖² (docs/query-theory.md §2–§4).

Sphere (our derivation, docs/query-theory.md §2): with ĝ the mini-batch mean of
∇_q‖a‖² (so E ĝ = ∇J, no factor ½) and q_{k+1} = (q_k + η_k ĝ)/‖q_k + η_k ĝ‖,

    m_{k+1} = m_k + η_k (⟨ĝ, u⟩ − m_k⟨ĝ, q_k⟩) + O(η_k² ‖ĝ‖²),

and ⟨∇J, u⟩ − m⟨∇J, q⟩ = (1 − m²) Φ'(m) exactly (J(q) = F(⟨q,u⟩, ‖P_⊥q‖) and Φ(m) =
F(m, √(1 − m²))), so on the time axis t = Σ_{j<k} η_j (the simulator's ``ode_time``)

    ṁ = (1 − m²) Φ'(m).                                                             (ODE-S)

β enters only through Φ (the scores β⟨q, x⟩); the constant in front is exactly 1.
Unconstrained (Π = id, penalty (l2/2)‖q‖²): with α = ⟨q, u⟩, b = ‖P_⊥ q‖,

    α̇ = F_α(α, b) − l2·α,   ḃ = F_b(α, b) − l2·b.                                  (ODE-U)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attndyn.core.ode import integrate
from attndyn.models.query.theory.population import PhiFit, Population


def solve_sphere(fit: PhiFit, m0, times, rtol: float = 1e-10) -> np.ndarray:
    """m(t) of (ODE-S) for each initial overlap in ``m0`` at ``times`` (ODE time t = Σ η):
    shape (len(m0), len(times)). Φ' is the Chebyshev interpolant of the CRN estimator."""
    m0 = np.atleast_1d(np.asarray(m0, np.float64))
    times = np.asarray(times, np.float64)
    out = integrate(lambda t, m: fit.rhs(m), m0, times, rtol=rtol)
    return np.clip(out, -1.0, 1.0)


@dataclass(frozen=True)
class FixedPoint:
    """A zero of the right-hand side (1 − m²)Φ'(m): ``slope`` = d(rhs)/dm there (negative:
    stable), ``kind`` 'stable', 'unstable' or 'marginal' (|slope| within ``slope_se`` of 0,
    ``slope_se`` the propagated Monte Carlo error estimate)."""

    m: float
    slope: float
    kind: str
    slope_se: float = 0.0


def fixed_points(fit: PhiFit, population: Population | None = None) -> list[FixedPoint]:
    """Fixed points of (ODE-S) in [−1, 1]: m = ±1 (always: the factor 1 − m²), m = 0 when Φ is
    even (Φ'(0) = 0), and the real roots of the fitted Φ' in (−1, 1). The slope is
    −2mΦ'(m) + (1 − m²)Φ''(m): −2Φ'(1) at m = 1, Φ''(0) at m = 0 (docs/query-theory.md §3).
    With ``population``, the slope's Monte Carlo standard error at ±1 (from F_a and F_bb) is
    attached and slopes within 3 standard errors of 0 are called marginal."""
    roots = fit.derivative.roots()
    roots = roots[np.abs(roots.imag) < 1e-9].real
    roots = roots[(roots > -1 + 1e-9) & (roots < 1 - 1e-9)]
    cand = [-1.0, 1.0]
    if not fit.coef[1::2].any():
        cand.append(0.0)
    for r in roots:
        if min(abs(r - c) for c in cand) > 1e-6:
            cand.append(float(r))
    cand = sorted(cand)
    out = []
    for m in cand:
        slope = float(fit.rhs_slope(m))
        se = 0.0
        if population is not None and abs(m) == 1.0:
            r = population.evaluate(np.array([m]), np.array([0.0]), order=2)
            # d rhs/dm at ±1 = −2 m Φ'(m) = −2 (F_a(±1,0)·(±1) − F_bb) (docs §3)
            se = float(2 * (r["se_Fa"][0] + r["se_Fbb"][0]))
        if se > 0 and abs(slope) < 3 * se:
            kind = "marginal"
        else:
            kind = "stable" if slope < 0 else ("unstable" if slope > 0 else "marginal")
        out.append(FixedPoint(m=m, slope=slope, kind=kind, slope_se=se))
    return out


def sphere_time_to(fit: PhiFit, m0: float, target: float, t_max: float = 1e9) -> float:
    """ODE time for (ODE-S) to take |m| from |m0| to ``target`` (∫ dm / rhs, by quadrature on a
    log grid in 1 − |m| near 1); inf when the flow does not get there."""
    from scipy.integrate import quad

    a, b = abs(m0), target
    if a >= b:
        return 0.0
    val, _ = quad(lambda m: 1.0 / max(fit.rhs(m), 1e-300), a, b, limit=400)
    return float(val) if np.isfinite(val) and val < t_max else float("inf")


def solve_unconstrained(
    population: Population, alpha0, b0, times, l2: float = 0.0, rtol: float = 1e-6
) -> tuple[np.ndarray, np.ndarray]:
    """(α(t), b(t)) of (ODE-U) from each initial (α0, b0), shapes (len(α0), len(times)).
    F_α, F_b come from the CRN estimator (exact derivatives of F̂, one Monte Carlo evaluation
    per right-hand-side call), so keep ``population.samples`` modest."""
    alpha0 = np.atleast_1d(np.asarray(alpha0, np.float64))
    b0 = np.atleast_1d(np.asarray(b0, np.float64))
    k = len(alpha0)

    def rhs(t, y):
        a, b = y[:k], np.abs(y[k:])
        r = population.evaluate(a, b, order=1)
        return np.concatenate([r["Fa"] - l2 * a, r["Fb"] - l2 * b])

    y = integrate(rhs, np.concatenate([alpha0, b0]), times, rtol=rtol, method="RK45")
    return y[:k], np.abs(y[k:])
