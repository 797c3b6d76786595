"""Theory of single-query softmax attention (our reconstruction of arXiv 2606.22406, docs/query.md;
derivations, which are ours, in docs/query-theory.md).

``predict(config)`` returns a Trajectory with the simulator's observable names (``overlap``,
``alignment``, ``q_norm``, ``perp_norm``, ``objective``) on the simulator's record grid (``time``
= SGA steps) with the coordinate ``ode_time`` = Σ_{j<k} η_j, the time of the limiting ODE.

Method (``method``):
- ``sphere`` (constraint = sphere): ṁ = (1 − m²)Φ'(m) with Φ the population objective on the
  sphere, estimated by Monte Carlo with common random numbers through the exact two-scalar
  reduction (theory/population.py, Eq. R) and interpolated by a Chebyshev series in m;
- ``unconstrained`` (constraint = unconstrained): the (α, b) gradient flow with the l2 penalty
  (theory/ode.py, ODE-U), derivatives of the CRN estimator at every right-hand-side call;
- ``auto``: the one matching ``constraint``.

Initial conditions: each of the config's seeds starts where the simulator's seed starts (its
q₀ and u drawn by the simulator's own ``init``), the ODE is solved per seed, and the observables
are averaged over seeds, as the simulator's seed means are. ``overlap`` keeps the sign (its seed
mean is near 0 from random starts: the ±u split); ``alignment`` = mean |m|.
"""

from __future__ import annotations

from typing import Literal

import jax
import numpy as np
from pydantic import Field, model_validator

from attndyn.core.config import SEED_LIMIT, canonical
from attndyn.core.grids import record_grid
from attndyn.core.trainer import seed_keys
from attndyn.core.trajectory import make_trajectory
from attndyn.models.query import SUMMARY, build, time_axes
from attndyn.models.query.config import QueryConfig
from attndyn.models.query.theory.ode import (
    fixed_points,
    solve_sphere,
    solve_unconstrained,
)
from attndyn.models.query.theory.population import PhiFit, Population, TokenLaw

__all__ = [
    "Config",
    "SUMMARY",
    "QueryTheoryConfig",
    "initial_state",
    "law_of",
    "phi_fit",
    "population",
    "predict",
]


class QueryTheoryConfig(QueryConfig):
    """A query config plus the theory's own settings."""

    method: Literal["auto", "sphere", "unconstrained"] = Field(
        "auto", description="ODE to integrate (see attndyn.models.query.theory)"
    )
    mc_samples: int = Field(
        4096, ge=16, le=1 << 22, description="Monte Carlo draws of the population objective"
    )
    mc_seed: int = Field(
        0, ge=0, lt=SEED_LIMIT, description="seed of the common random numbers (< 2^31)"
    )
    degree: int | None = Field(
        None, ge=4, le=512, description="Chebyshev degree of Φ; None: adaptive (tail < 1e-10)"
    )
    rtol: float = Field(1e-9, gt=0, lt=1e-2, description="relative tolerance of the ODE solver")

    @model_validator(mode="after")
    def _method_fits(self) -> QueryTheoryConfig:
        if self.method == "sphere" and self.constraint != "sphere":
            raise ValueError("method 'sphere' needs constraint='sphere'")
        if self.method == "unconstrained" and self.constraint != "unconstrained":
            raise ValueError("method 'unconstrained' needs constraint='unconstrained'")
        return self

    @property
    def resolved_method(self) -> str:
        return self.constraint if self.method == "auto" else self.method


Config = QueryTheoryConfig


def law_of(config: QueryConfig) -> TokenLaw:
    """The token law in effective units (σ per coordinate, β multiplying ⟨q, x⟩), resolving the
    config's ``noise_scaling`` and ``beta_scaling`` exactly as the simulator does."""
    return TokenLaw(
        d=config.d,
        n_informative=config.n_informative,
        n_nuisance=config.n_nuisance,
        theta=config.theta,
        sigma=config.sigma_eff,
        beta=config.beta_eff,
        sign_mode=config.sign_mode,
    )


_POPULATIONS: dict[tuple, Population] = {}
_FITS: dict[tuple, PhiFit] = {}


def population(config: QueryTheoryConfig) -> Population:
    """The CRN estimator of F(α, b) for ``config`` (cached per law, draws and seed)."""
    key = (law_of(config), config.mc_samples, config.mc_seed)
    if key not in _POPULATIONS:
        _POPULATIONS[key] = Population(key[0], samples=key[1], seed=key[2])
    return _POPULATIONS[key]


def phi_fit(config: QueryTheoryConfig) -> PhiFit:
    """Chebyshev interpolant of Φ̂ on [−1, 1] (cached)."""
    key = (law_of(config), config.mc_samples, config.mc_seed, config.degree)
    if key not in _FITS:
        _FITS[key] = population(config).fit(degree=config.degree)
    return _FITS[key]


def initial_state(config: QueryConfig) -> tuple[np.ndarray, np.ndarray]:
    """(α₀, b₀) per seed: ⟨q₀, u⟩ and ‖P_⊥q₀‖ of the simulator's own initial query and latent
    direction (or the reduced sampler's initial (α, b)) (seeds ``seed … seed + seeds − 1``; the
    draws in the config's dtype, as the simulator makes them)."""
    seeds = config.seed_list
    sim_fields = {k: getattr(config, k) for k in QueryConfig.model_fields}
    with jax.enable_x64(config.dtype == "float64"):
        problem = build(QueryConfig(**sim_fields), n_seeds=1)
        init_keys, _ = seed_keys(seeds)
        alphas, perps = [], []
        for key in init_keys:
            params, state = problem.init(key)
            q = np.asarray(params["q"], np.float64)
            if "u" not in state:  # sampler='reduced': the state is (α, b, 0) itself
                alphas.append(float(q[0]))
                perps.append(float(np.hypot(q[1], q[2])))
                continue
            u = np.asarray(state["u"], np.float64)
            u = u / np.linalg.norm(u)
            a = float(q @ u)
            alphas.append(a)
            perps.append(float(np.linalg.norm(q - a * u)))
    return np.array(alphas), np.array(perps)


def predict(config: QueryTheoryConfig):
    """Integrate the limiting ODE from each seed's initial state on the simulator's grid.

    Args:
        config: the validated QueryTheoryConfig (the simulator's fields plus ``method``,
            Monte Carlo and tolerance settings).

    Returns:
        Trajectory (xarray.Dataset) with dim ``time`` = (R,), ``time`` = SGA steps of the
        simulator's record grid: ``overlap``, ``alignment``, ``q_norm``, ``perp_norm``,
        ``objective`` (seed means), each (R,) float64; coordinates ``samples`` and ``ode_time``;
        attrs ``theory`` (the fit diagnostics and fixed points of the sphere method, as text).
    """
    steps = record_grid(config)
    axes = time_axes(config, steps)
    t = axes["ode_time"]
    alpha0, b0 = initial_state(config)
    method = config.resolved_method
    extra: dict[str, object] = {}
    if method == "sphere":
        fit = phi_fit(config)
        r0 = np.hypot(alpha0, b0)
        m = solve_sphere(fit, alpha0 / r0, t, rtol=config.rtol)
        obs = {
            "overlap": m.mean(axis=0),
            "alignment": np.abs(m).mean(axis=0),
            "q_norm": np.ones(len(t)),
            "perp_norm": np.sqrt(np.maximum(1 - m**2, 0.0)).mean(axis=0),
            "objective": fit.phi(m).mean(axis=0),
        }
        extra = {
            "fit_degree": len(fit.coef) - 1,
            "fit_error": fit.fit_error,
            "rhs_error": fit.rhs_error,
            "mc_se": fit.mc_se,
            "mc_se_rhs": fit.mc_se_rhs,
            "fixed_points": [(p.m, p.slope, p.kind) for p in fixed_points(fit)],
        }
    else:
        pop = population(config)
        a, b = solve_unconstrained(pop, alpha0, b0, t, l2=config.l2, rtol=max(config.rtol, 1e-6))
        r = np.hypot(a, b)
        m = a / r
        F = pop.evaluate(a.reshape(-1), b.reshape(-1), order=0)["F"].reshape(a.shape)
        obs = {
            "overlap": m.mean(axis=0),
            "alignment": np.abs(m).mean(axis=0),
            "q_norm": r.mean(axis=0),
            "perp_norm": b.mean(axis=0),
            "objective": F.mean(axis=0),
        }
    traj = make_trajectory(
        obs,
        time=axes["time"],
        samples=steps * config.batch,
        extra_times={"ode_time": t},
        family="query",
        config=dict(canonical(config), theory=method),
    )
    traj.attrs["theory"] = str(extra) if extra else ""
    return traj
