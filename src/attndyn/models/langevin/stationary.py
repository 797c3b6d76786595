"""Stationary statistics of an ensemble of Langevin chains (docs/langevin.md, "Diagnostics").

With F Villani, the law of Θ_t approaches μ_s ∝ exp(−2F/s) exponentially (Shi, Su & Jordan,
arXiv 2004.06977, main theorem): E F(Θ_t) − E_μF ≈ D e^{−λ_s t}. These functions estimate the
plateau E_μF and the rate λ_s from a Trajectory's (seed, time) array; confidence intervals over
chains are the experiments' business (attndyn.experiments.stats), which resample seeds and call
these functions.
"""

from __future__ import annotations

import numpy as np


def time_average(values: np.ndarray, times: np.ndarray, t_from: float) -> np.ndarray:
    """Per-chain mean of ``values`` (seed, time) over the record points with time ≥ t_from.

    Chains are independent, so these are i.i.d. estimates of E_μ of the observable (once the
    chains have forgotten their start); their spread gives the CI."""
    mask = np.asarray(times) >= t_from
    if not mask.any():
        raise ValueError(f"no record point at time >= {t_from:g}")
    return np.mean(np.asarray(values)[:, mask], axis=1)


def exponential_rate(
    times: np.ndarray, mean_curve: np.ndarray, plateau: float, floor: float
) -> float:
    """λ of the least-squares fit log(m(t) − plateau) ≈ c − λt over the initial stretch where
    m(t) − plateau > floor (e.g. a few standard errors of the plateau): the approach to the
    Gibbs level. NaN when fewer than three points qualify."""
    excess = np.asarray(mean_curve, dtype=float) - plateau
    t = np.asarray(times, dtype=float)
    above = excess > floor
    # the first contiguous stretch above the floor
    stop = int(np.argmin(above)) if not above.all() else len(above)
    if stop < 3:
        return float("nan")
    slope, _ = np.polyfit(t[:stop], np.log(excess[:stop]), 1)
    return float(-slope)


def laplace_gap(s: float, p_eff: int) -> float:
    """E_μF − min F ≈ s·p_eff/4 at small s [I]: μ_s ≈ N(θ*, (s/2)H⁻¹) near a nondegenerate
    minimiser, so E(F − F*) ≈ ½ tr(H · (s/2)H⁻¹) = s·p/4; flat (symmetry) directions of an
    orbit of minimisers carry no energy (docs/langevin.md, "p_eff")."""
    return s * p_eff / 4.0
