"""The reduced two-scalar gradient flow of the QK/OV circuits (docs/circuits-theory.md §1).

Source: the README of the authors' code (Vashisht & Ramaswamy, ICML 2026, arXiv 2608.06776,
github.com/vashishtrahul/Faster-Query-Key-Learning-Sharpens-Attention-in-Self-Attention-Models,
"Fig-4 Code"; docs/references.md); the paper body (where these are presumably the Fig. 4
equations) was not available to us. A stylised next-token problem whose gradient flow reduces to two
scalars, μ_QK (the logit of the m informative tokens; the n uninformative ones have logit 0) and
μ_OV (the margin of the correct one of M output classes):

    α(t)       = m e^{μ_QK} / (m e^{μ_QK} + n)                 attention mass on informative tokens
    L(t)       = log(1 + (M − 1) e^{−α μ_OV})
    dμ_OV/dt   = η_OV α / (b (e^{α μ_OV} + M − 1))
    dμ_QK/dt   = η_QK (M − 1) α (1 − α) μ_OV / (M b² (e^{α μ_OV} + M − 1))

Our derivation (checked in tests/test_circuits_theory.py): the right-hand side is a metric-scaled
gradient flow, dμ/dt = −diag(η_OV/(b(M−1)), η_QK/(M b²)) ∇L, so b and M act as per-coordinate
learning-rate scalings; the path in (μ_OV, μ_QK) depends only on r = η_QK/η_OV, with
dμ_QK/dμ_OV = r (M − 1)(1 − α) μ_OV/(M b) (:func:`path_rhs`); dμ_QK/dt = 0 while μ_OV = 0.

The authors integrate with RK4 in τ = t·min(η_OV, η_QK), dτ = 10, until L = 1e-4 (the
"Fig-4 Code" notebook). Here: scipy's adaptive DOP853 in float64 (rtol 1e-10 by default, absolute
tolerance rtol·1e-4) on the physical time t, with terminal and non-terminal events at loss
thresholds (event function log L − log L_k, so small thresholds are resolved in relative terms).
The loss falls monotonically along the flow (dL/dt = −∇Lᵀ diag(·) ∇L ≤ 0), so the first crossing
of a threshold is the only one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from attndyn.core import ode

__all__ = [
    "ReducedParams",
    "alpha",
    "loss",
    "rhs",
    "loss_gradient",
    "metric",
    "path_rhs",
    "Solution",
    "solve",
    "crossings",
    "PAPER_THRESHOLDS",
    "PAPER_RATIOS",
]

PAPER_THRESHOLDS = (1.0, 1e-1, 1e-2, 1e-3, 1e-4)
"""Loss thresholds of the crossings table (the decades of Fig. 4's 50 log-spaced thresholds)."""
PAPER_RATIOS = (0.01, 0.1, 1.0, 10.0, 100.0)
"""r = η_QK/η_OV of Fig. 4 (the authors' README)."""


@dataclass(frozen=True)
class ReducedParams:
    """Constants of the reduced flow (the authors' README; defaults are the Fig. 4 simulation's).

    m: informative tokens; n: uninformative tokens; b: normalisation constant (its meaning is
    not stated in the README; 50 = V in the code); M: output classes; η_OV, η_QK: the circuits'
    learning rates; μ_OV(0), μ_QK(0): the initial state (0, 0 in Fig. 4).
    """

    m: float = 5.0
    n: float = 50.0
    b: float = 50.0
    M: float = 20.0
    eta_ov: float = 1.0
    eta_qk: float = 1.0
    mu_ov0: float = 0.0
    mu_qk0: float = 0.0

    @classmethod
    def from_ratio(cls, ratio: float, eta_ov: float = 1.0, **kw) -> ReducedParams:
        """η_QK = ratio·η_OV."""
        return cls(eta_ov=eta_ov, eta_qk=ratio * eta_ov, **kw)

    @property
    def ratio(self) -> float:
        return self.eta_qk / self.eta_ov

    def scaled(self, c: float) -> ReducedParams:
        """Both learning rates multiplied by c (same r)."""
        return replace(self, eta_ov=c * self.eta_ov, eta_qk=c * self.eta_qk)


def alpha(mu_qk, p: ReducedParams):
    """α = m e^{μ_QK}/(m e^{μ_QK} + n) = 1/(1 + (n/m) e^{−μ_QK}), overflow-safe."""
    return 1.0 / (1.0 + (p.n / p.m) * np.exp(-np.asarray(mu_qk, dtype=np.float64)))


def loss(mu_ov, mu_qk, p: ReducedParams):
    """L = log(1 + (M − 1) e^{−α μ_OV})."""
    a = alpha(mu_qk, p)
    return np.log1p((p.M - 1.0) * np.exp(-a * np.asarray(mu_ov, dtype=np.float64)))


def _denominator(z, p: ReducedParams):
    """e^{z} + M − 1 with z = α μ_OV."""
    return np.exp(z) + p.M - 1.0


def rhs(t: float, y: np.ndarray, p: ReducedParams) -> np.ndarray:
    """(dμ_OV/dt, dμ_QK/dt) of the reduced flow at y = (μ_OV, μ_QK)."""
    mu_ov, mu_qk = y
    a = alpha(mu_qk, p)
    den = _denominator(a * mu_ov, p)
    d_ov = p.eta_ov * a / (p.b * den)
    d_qk = p.eta_qk * (p.M - 1.0) * a * (1.0 - a) * mu_ov / (p.M * p.b**2 * den)
    return np.array([d_ov, d_qk])


def loss_gradient(mu_ov: float, mu_qk: float, p: ReducedParams) -> np.ndarray:
    """∇L = (∂L/∂μ_OV, ∂L/∂μ_QK) in closed form (ours):
    ∂L/∂μ_OV = −(M−1) α/(e^{αμ_OV} + M − 1), ∂L/∂μ_QK = −(M−1) μ_OV α(1−α)/(e^{αμ_OV} + M − 1)
    (dα/dμ_QK = α(1 − α))."""
    a = alpha(mu_qk, p)
    den = _denominator(a * mu_ov, p)
    return np.array([-(p.M - 1.0) * a / den, -(p.M - 1.0) * mu_ov * a * (1.0 - a) / den])


def metric(p: ReducedParams) -> np.ndarray:
    """diag of the constant metric with rhs = −metric·∇L (ours): (η_OV/(b(M−1)), η_QK/(M b²))."""
    return np.array([p.eta_ov / (p.b * (p.M - 1.0)), p.eta_qk / (p.M * p.b**2)])


def path_rhs(mu_ov: float, mu_qk: float, p: ReducedParams) -> float:
    """dμ_QK/dμ_OV = r (M − 1)(1 − α) μ_OV/(M b) (ours): the path in (μ_OV, μ_QK) depends on the
    learning rates only through r."""
    a = alpha(mu_qk, p)
    return p.ratio * (p.M - 1.0) * (1.0 - a) * mu_ov / (p.M * p.b)


@dataclass
class Solution:
    """The flow on a time grid plus the state at the first crossing of each loss threshold.

    ``times``: the grid (ends at the stop time); ``mu_ov``, ``mu_qk``, ``alpha``, ``loss``: values
    on it; ``crossings``: one dict per threshold {ratio, loss, mu_ov, mu_qk, alpha, time, tau}
    (time NaN and state NaN if the threshold was not reached by ``t_max``); ``t_stop``: the time
    the integration ended (the last threshold's crossing, or t_max).
    """

    params: ReducedParams
    times: np.ndarray
    mu_ov: np.ndarray
    mu_qk: np.ndarray
    alpha: np.ndarray
    loss: np.ndarray
    crossings: list[dict[str, float]]
    t_stop: float


def _events(thresholds: Sequence[float], p: ReducedParams, stop_at: float | None):
    events = []
    for th in thresholds:

        def event(t, y, th=th):
            return np.log(loss(y[0], y[1], p)) - np.log(th)

        events.append(
            ode.as_event(event, terminal=stop_at is not None and th == stop_at, direction=-1)
        )
    return events


def solve(
    p: ReducedParams,
    thresholds: Sequence[float] = PAPER_THRESHOLDS,
    *,
    stop_loss: float | None = None,
    t_max: float | None = None,
    times: np.ndarray | None = None,
    records: int = 200,
    grid: str = "log",
    rtol: float = 1e-10,
) -> Solution:
    """Integrate the reduced flow from (μ_OV(0), μ_QK(0)).

    The integration stops at the first time L ≤ ``stop_loss`` (default: the smallest
    threshold) or at ``t_max`` (default 1e18, i.e. effectively never), whichever comes first.
    The output grid is ``times`` if given (values past the stop are NaN), else ``records``
    points from 0 to the stop time, uniform in log10(1 + t) (``grid="log"``, Fig. 4's axis) or
    in t (``"linear"``).
    """
    thresholds = [float(x) for x in thresholds]
    if stop_loss is None:
        stop_loss = min(thresholds) if thresholds else None
    event_levels = list(thresholds)
    if stop_loss is not None and stop_loss not in event_levels:
        event_levels.append(stop_loss)
    horizon = 1e18 if t_max is None else float(t_max)
    y0 = np.array([p.mu_ov0, p.mu_qk0], dtype=np.float64)
    L0 = float(loss(y0[0], y0[1], p))
    stop = stop_loss if (stop_loss is not None and L0 > stop_loss) else None
    sol = ode.solve(
        lambda t, y: rhs(t, y, p),
        (0.0, horizon),
        y0,
        method="DOP853",
        rtol=rtol,
        atol=rtol * 1e-4,
        events=_events(event_levels, p, stop),
        dense_output=True,
        what="reduced flow",
    )
    t_stop = float(sol.t[-1])
    out = []
    for th in thresholds:
        k = event_levels.index(th)
        if L0 <= th:  # already below at t = 0
            t_c, y_c = 0.0, y0
        elif len(sol.t_events[k]):
            t_c, y_c = float(sol.t_events[k][0]), sol.y_events[k][0]
        else:
            t_c, y_c = np.nan, np.array([np.nan, np.nan])
        out.append(
            {
                "ratio": p.ratio,
                "loss": th,
                "mu_ov": float(y_c[0]),
                "mu_qk": float(y_c[1]),
                "alpha": float(alpha(y_c[1], p)),
                "time": t_c,
                "tau": t_c * min(p.eta_ov, p.eta_qk),
            }
        )
    if times is None:
        if grid == "log":
            times = np.power(10.0, np.linspace(0.0, np.log10(1.0 + t_stop), records)) - 1.0
            times[0], times[-1] = 0.0, t_stop
        else:
            times = np.linspace(0.0, t_stop, records)
    times = np.asarray(times, dtype=np.float64)
    ys = np.full((2, len(times)), np.nan)
    inside = times <= t_stop
    ys[:, inside] = sol.sol(times[inside])
    ys[:, times == 0.0] = y0[:, None]
    return Solution(
        params=p,
        times=times,
        mu_ov=ys[0],
        mu_qk=ys[1],
        alpha=alpha(ys[1], p),
        loss=loss(ys[0], ys[1], p),
        crossings=out,
        t_stop=t_stop,
    )


def crossings(
    ratios: Sequence[float] = PAPER_RATIOS,
    thresholds: Sequence[float] = PAPER_THRESHOLDS,
    *,
    eta_ov: float = 1.0,
    rtol: float = 1e-10,
    **params,
) -> list[dict[str, float]]:
    """The table of (ratio, loss, mu_ov, mu_qk, alpha, time, tau) at the first crossing of each
    loss threshold, one row per (ratio, threshold), ratio-major; ``params``: other
    :class:`ReducedParams` fields (m, n, b, M, mu_ov0, mu_qk0)."""
    rows = []
    for r in ratios:
        p = ReducedParams.from_ratio(float(r), eta_ov=eta_ov, **params)
        rows.extend(solve(p, thresholds, rtol=rtol, records=2).crossings)
    return rows
