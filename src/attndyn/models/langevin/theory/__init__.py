"""Theory of the Langevin family's test potentials (docs/langevin.md, T1 and T2).

- ou.py: the exact Gaussian moments of the Ornstein–Uhlenbeck process (``model='quadratic'``)
  and of its Euler–Maruyama chain;
- fokker_planck.py: the double well's one-dimensional Fokker–Planck equation (finite volumes,
  Scharfetter–Gummel flux, BDF in time), its Gibbs means by quadrature, the spectral gap λ_s of
  the generator and the Eyring–Kramers rate.

``predict(config)`` gives the ensemble means of the simulator's observables of the continuous
SDE dΘ = −∇F dt + √s dW (s = ``config.temperature``) from θ₀ = x0 + init_scale·N(0, I), on the
simulator's record grid (``time`` = k·h), without a seed axis: ``F``, ``loss``, ``reg``,
``sq_norm``, ``grad_sq``, ``x`` (E θ₁) and ``mean_x``. The coordinates are independent and
identically distributed under both potentials, so every sum over coordinates is ``dim`` times a
one-dimensional mean. ``norm_theta`` (E‖θ‖) is not predicted. Other models raise InputError.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from attndyn.core.config import canonical
from attndyn.core.grids import record_grid
from attndyn.core.trajectory import make_trajectory
from attndyn.errors import InputError
from attndyn.models.langevin.config import TEST_POTENTIALS, LangevinConfig
from attndyn.models.langevin.theory import fokker_planck, ou

__all__ = [
    "Config",
    "SUMMARY",
    "LangevinTheoryConfig",
    "predict",
    "stationary_mean_F",
    "spectral_gap",
    "kramers_rate",
]

SUMMARY = ("F", "sq_norm", "x")
"""Observables ``attndyn predict langevin`` prints at the final time."""


class LangevinTheoryConfig(LangevinConfig):
    """A langevin config (test potentials only) plus the Fokker–Planck grid."""

    fp_cells: int = Field(
        0, ge=0, le=200_000, description="double well: finite-volume cells (0: Δ = σ_well/25)"
    )
    fp_rtol: float = Field(1e-9, gt=0, lt=1e-3, description="double well: BDF rtol")


Config = LangevinTheoryConfig


def _check(config: LangevinConfig) -> float:
    if config.model not in TEST_POTENTIALS:
        raise InputError(
            f"invalid value for 'model': the langevin theory covers {TEST_POTENTIALS} "
            f"(got {config.model!r})"
        )
    return config.temperature


def stationary_mean_F(model: str, s: float, lam: float = 0.0, dim: int = 1) -> float:
    """E_μF, μ_s ∝ exp(−2F/s): dim·s/4 (quadratic) or dim times the quadrature of
    :func:`fokker_planck.gibbs_mean_f` (double well)."""
    if model == "quadratic":
        return dim * s / 4.0
    if model == "double-well":
        return dim * fokker_planck.gibbs_mean_f(s, lam)
    raise InputError(f"invalid value for 'model': must be one of {TEST_POTENTIALS} (got {model!r})")


def spectral_gap(s: float, lam: float = 0.0, cells: int = 0) -> float:
    """λ_s of the one-dimensional double well (:func:`fokker_planck.spectral_gap`)."""
    return fokker_planck.spectral_gap(s, lam, cells)


def kramers_rate(s: float, lam: float = 0.0) -> float:
    """Eyring–Kramers approximation of λ_s (:func:`fokker_planck.kramers_rate`)."""
    return fokker_planck.kramers_rate(s, lam)


def _quadratic(config: LangevinConfig, s: float, times: np.ndarray) -> dict[str, np.ndarray]:
    m, v = ou.moments(times, config.lam, s, config.x0, config.init_scale)
    second = config.dim * (m * m + v)
    F = 0.5 * config.lam * second
    return {
        "F": F,
        "loss": np.zeros_like(F),
        "reg": F,
        "sq_norm": second,
        "grad_sq": config.lam**2 * second,
        "x": m,
        "mean_x": m,
    }


def _double_well(config: LangevinConfig, s: float, times: np.ndarray) -> dict:
    lam = config.lam
    g = fokker_planck.grid(
        s, lam, getattr(config, "fp_cells", 0), x0=config.x0, init_scale=config.init_scale
    )
    p = fokker_planck.evolve(
        g,
        fokker_planck.initial_masses(g, config.x0, config.init_scale),
        times,
        getattr(config, "fp_rtol", 1e-9),
    )
    x = g.x
    dim = config.dim
    second = p @ (x * x)
    return {
        "F": dim * (p @ fokker_planck.f(x, lam)),
        "loss": dim * (p @ np.square(x * x - 1.0)),
        "reg": dim * 0.5 * lam * second,
        "sq_norm": dim * second,
        "grad_sq": dim * (p @ np.square(fokker_planck.df(x, lam))),
        "x": p @ x,
        "mean_x": p @ x,
    }


def predict(config: LangevinConfig):
    """Ensemble means of the SDE on the simulator's record grid (module docstring)."""
    s = _check(config)
    steps = record_grid(config)
    times = steps.astype(np.float64) * config.step
    if config.model == "quadratic":
        obs, how = _quadratic(config, s, times), "Ornstein–Uhlenbeck moments"
    else:
        obs, how = _double_well(config, s, times), "Fokker–Planck (finite volumes)"
    return make_trajectory(
        obs, time=times, step=steps, family="langevin", config=dict(canonical(config), theory=how)
    )
