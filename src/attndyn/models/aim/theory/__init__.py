"""AIM theory: ``predict(config)`` returns a Trajectory with the simulator's observable names on
the simulator's time grid (no seed axis).

Methods (``method``):
- ``hierarchy``: tied moment hierarchy, Eq. 11 truncated at degree ``truncation`` (Eq. 13);
- ``matrix-flow``: tied matrix-level mean flow at the config's d (exact solution of Eq. 11 for
  that initial state), averaged over the config's seeds;
- ``direct-ode``: Theorem 4 (direct S);
- ``untied``: untied fast–slow theory (Eqs. 28–32): fast mean flow, then the matrix-level slow
  flow from the simulator's initial matrices; ``untied-hierarchy``: the same with the moment
  hierarchy Eq. 32 truncated at ``truncation`` (≤ 4 is practical); see theory/untied/;
- ``auto``: direct-ode for direct S, untied for untied; for tied, the hierarchy if the horizon
  is within half its radius estimate (below; there the degree-M error ~ (t/R)^M ≲ 2⁻ᴹ), else the
  matrix flow (at γ = 0 the truncation converges
  in M only for t below a finite radius, docs/aim-solvable.md).

Tied runs of ``auto`` and ``hierarchy`` (unless ``estimate_radius=False``) record in their
attrs ``truncation_radius``: the first time on a fine log grid of
[0, t_max] at which the increments of the hierarchy in its degree stop decreasing,
|μ^{M+2} − μ^{M+1}| ≥ |μ^{M+1} − μ^M| (max over t_k, q_kl; inf if they never do before 2t_max):
the ratio test of the truncation sequence, whose radius in t it estimates (for App. D.3 it
approaches R = ln(λmax/(λmax − c))/(4c) as M grows). ``method_reason`` says why ``auto`` chose
its method, and ``stop_reason``, ``stop_after``, ``stop_before`` why and when a truncation
stopped (its values are NaN from then on; NaN is never returned without them).

Initial conditions: the order parameters of the simulator's own initial matrices (same d, same
seeds: ``seed .. seed + seeds − 1``), averaged over seeds, so theory and simulation start from
the same point up to O(1/√d) seed-to-seed fluctuations.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar, Literal

import jax
import numpy as np
import xarray as xr
from pydantic import Field, model_validator

from attndyn.core.config import canonical
from attndyn.core.gaussian import antithetic
from attndyn.core.trajectory import make_trajectory
from attndyn.models.aim import SUMMARY
from attndyn.models.aim.config import AIMConfig
from attndyn.models.aim.observables import observe
from attndyn.models.aim.theory.direct import DirectODE
from attndyn.models.aim.theory.hierarchy import MatrixFlow, TiedHierarchy
from attndyn.models.aim.theory.initial import (
    initial_matrices,
    initial_observables,
    limit_state,
    n_student,
    time_grid,
)
from attndyn.models.aim.theory.population import flow_for
from attndyn.models.aim.theory.potential import cached_potential
from attndyn.models.aim.theory.untied import predict_untied

__all__ = [
    "AIMTheoryConfig",
    "Config",
    "SUMMARY",
    "predict",
    "initial_matrices",
    "initial_observables",
    "limit_state",
]


class AIMTheoryConfig(AIMConfig):
    """An AIM config plus the theory's own settings."""

    ID_NEUTRAL: ClassVar[dict] = {"cumulants": 2}

    method: Literal[
        "auto",
        "hierarchy",
        "matrix-flow",
        "direct-ode",
        "untied",
        "untied-hierarchy",
        "population-flow",
    ] = Field("auto", description="theory to integrate (see attndyn.models.aim.theory)")
    cumulants: int = Field(
        2,
        ge=2,
        le=3,
        description="population-flow: 2 = Theorem 1's Gaussian potential at the config's d; "
        "3 = plus the forms' third cumulants (the O(d^-1/2) Edgeworth term)",
    )
    truncation: int = Field(6, ge=2, le=12, description="degree M of the truncated hierarchy")
    estimate_radius: bool = Field(
        True,
        description="tied, method hierarchy: estimate its radius in t (attr truncation_radius; "
        "auto always does)",
    )
    rtol: float = Field(1e-8, gt=0, lt=1e-2, description="relative tolerance of the ODE solver")
    quad_log2: int = Field(
        14,
        ge=8,
        le=20,
        description="log2 of the quadrature node budget (Gauss–Hermite if it fits, else QMC)",
    )

    @model_validator(mode="after")
    def _method_fits(self) -> AIMTheoryConfig:
        if self.mixed:
            if self.method != "population-flow":
                raise ValueError(
                    "head_params, teacher_head_kinds: per-head kinds need method="
                    f"'population-flow' (got '{self.method}')"
                )
            if self.values != "identity":
                raise ValueError("values: the theory needs V = I (values='identity')")
            return self
        tied_only = self.method in ("hierarchy", "matrix-flow")
        if tied_only and self.param != "tied":
            raise ValueError(f"method '{self.method}' needs param='tied' (got '{self.param}')")
        if self.method == "direct-ode" and self.param != "direct":
            raise ValueError(f"method 'direct-ode' needs param='direct' (got '{self.param}')")
        untied = self.method in ("untied", "untied-hierarchy")
        if untied and self.param != "untied":
            raise ValueError(f"method '{self.method}' needs param='untied' (got '{self.param}')")
        if self.values != "identity":
            raise ValueError(
                "values: the theory is over the base forms of X₀, which needs V = I "
                "(values='identity')"
            )
        if self.param == "untied" and self.teacher_kind != "product":
            raise ValueError("teacher: untied theory needs the product teacher (teacher='product')")
        if self.param == "tied" and self.teacher_kind == "product":
            raise ValueError(
                "teacher: tied theory needs a symmetric teacher ('wishart' or 'identity')"
            )
        return self

    @property
    def resolved_method(self) -> str:
        if self.method != "auto":
            return self.method
        return {"tied": "hierarchy", "direct": "direct-ode", "untied": "untied"}[self.param]


Config = AIMTheoryConfig


def predict(config: AIMTheoryConfig) -> xr.Dataset:
    """Integrate the theory ``config.method`` on the simulator's time grid.

    Args:
        config: the validated AIMTheoryConfig (the simulator's fields plus ``method``,
            ``truncation``, ``rtol``, ``quad_log2``, …).

    Returns:
        Trajectory (xarray.Dataset) with dim ``time`` = (R,), the simulator's record grid for
        the same config: the simulator's observable names (``t_k``, ``q_kl``, ``p_kl``,
        ``loss``, moments, or the direct-S/untied ones), each (R,) float64; coordinates
        ``time``, ``samples`` (untied also ``time_fast``); attrs ``family``, ``config`` (with
        the resolved ``theory`` method).
    """
    if config.resolved_method.startswith("untied"):  # P1 §4.1, see theory/untied/
        axes, samples = time_grid(config)
        return make_trajectory(
            predict_untied(config, config.resolved_method),
            time=axes["time"],
            samples=samples,
            extra_times={"time_fast": axes["time_fast"]},
            family="aim",
            config=dict(canonical(config), theory=config.resolved_method),
        )
    axes, samples = time_grid(config)
    times = axes["time"]
    potential = cached_potential(config, config.quad_log2)
    if config.method == "population-flow":
        return make_trajectory(
            recorded(_population_flow(config, potential, times), config.moment_degree),
            time=times,
            samples=samples,
            extra_times={"time_fast": axes["time_fast"]} if "time_fast" in axes else None,
            family="aim",
            config=dict(canonical(config), theory="population-flow"),
        )
    K = potential.K
    trainable = tuple(range(1, n_student(config) + 1))
    method = config.resolved_method
    attrs: dict = {}
    hierarchy_asked = config.method == "hierarchy" and config.estimate_radius
    if config.param == "tied" and (config.method == "auto" or hierarchy_asked):
        radius = truncation_radius(config, potential, trainable)
        attrs["truncation_radius"] = radius
        if config.method == "auto":
            # inside R/2 the degree-M error ~ (t/R)^M is ≲ 2⁻ᴹ (ratio test)
            inside = config.t_max <= 0.5 * radius
            method = "hierarchy" if inside else "matrix-flow"
            estimate = f"{radius:.3g}" if np.isfinite(radius) else f"> {2 * config.t_max:g}"
            attrs["method_reason"] = (
                f"auto: the horizon t_max = {config.t_max:g} is "
                + ("within" if inside else "beyond")
                + f" half the degree-{config.truncation} hierarchy's radius estimate ({estimate})"
                + ("" if inside else "; the matrix flow (exact for this d) is used instead")
            )
    if method == "hierarchy":
        hierarchy = TiedHierarchy(
            K, trainable, config.truncation, potential.gamma_tied, config.weight_decay
        )
        mu0 = hierarchy.initial(initial_observables(config, config.truncation))
        obs = hierarchy.solve(mu0, times, config.rtol)
        if hierarchy.stop is not None:
            attrs |= {f"stop_{k}": v for k, v in hierarchy.stop.items()}
    elif method == "matrix-flow":
        obs = _matrix_flow(config, potential, trainable, times)
    else:
        init = {k: np.array([v]) for k, v in initial_observables(config, 2).items()}
        t0 = [init[f"t_{k}"][0] for k in range(1, K + 1)]
        ode = DirectODE(potential, trainable, config.weight_decay)
        obs = ode.solve(
            t0, sym_matrix(init, "Psi", K, 0), sym_matrix(init, "Omega", K, 0), times, config.rtol
        )
    obs["loss"] = np.array([_loss(potential, obs, method, i) for i in range(len(times))])
    _add_structural_overlaps(obs, K)
    traj = make_trajectory(
        recorded(obs, config.moment_degree),
        time=times,
        samples=samples,
        family="aim",
        config=dict(canonical(config), theory=method),
    )
    traj.attrs |= {"theory": method, **attrs}
    return traj


RADIUS_POINTS = 200
"""Points of the fine log grid on which :func:`truncation_radius` looks for the crossing."""


def truncation_radius(config, potential, trainable) -> float:
    """Estimated radius in t of the tied hierarchy at the config's degree M (see the module
    docstring): the first t on a log grid of [2t_max·1e-4, 2t_max] with δ_{M+2}(t) ≥ δ_{M+1}(t),
    δ_j = max over t_k, q_kl of |μ^{(j)} − μ^{(j−1)}|, or where a truncation stops (NaN);
    increments below 1e-7 (the solver's round-off at rtol 1e-8) are not compared. inf if none
    before 2t_max (what ``auto`` needs to know).
    """
    t_end = 2.0 * config.t_max
    times = np.concatenate([[0.0], np.geomspace(t_end * 1e-4, t_end, RADIUS_POINTS)])
    M = config.truncation
    runs = []
    for degree in (M, M + 1, M + 2):
        h = TiedHierarchy(potential.K, trainable, degree, potential.gamma_tied, config.weight_decay)
        obs = h.solve(h.initial(initial_observables(config, degree)), times, config.rtol)
        runs.append(np.array([v for k, v in obs.items() if not k.startswith("mu_")]))
    d1 = np.max(np.abs(runs[1] - runs[0]), axis=0)
    d2 = np.max(np.abs(runs[2] - runs[1]), axis=0)
    floor = 1e-7
    lost = ~np.isfinite(d1) | ~np.isfinite(d2) | ((d2 >= d1) & (d2 > floor))
    hits = np.nonzero(lost[1:])[0]
    return float(times[1:][hits[0]]) if len(hits) else float("inf")


def recorded(obs: dict, degree: int) -> dict:
    """The observables the simulator records for this config: trace moments ``mu_w`` up to the
    config's ``moment_degree`` (the hierarchy integrates words up to its truncation M, which are
    internal state when M exceeds it)."""
    return {
        k: v for k, v in obs.items() if not k.startswith("mu_") or len(k[3:].split(".")) <= degree
    }


def sym_matrix(obs: dict, prefix: str, K: int, i: int) -> np.ndarray:
    """The K×K symmetric matrix of observables ``<prefix>_kl`` (k ≤ l stored) at time index i."""
    return np.array(
        [
            [obs[f"{prefix}_{min(k, l)}{max(k, l)}"][i] for l in range(1, K + 1)]
            for k in range(1, K + 1)
        ]
    )


def _loss(potential, obs: dict, method: str, i: int) -> float:
    """Population loss Φ (plus the label-noise constant) at time index i; NaN after blow-up."""
    K = potential.K
    if method == "direct-ode":
        omega, psi = sym_matrix(obs, "Omega", K, i), sym_matrix(obs, "Psi", K, i)
    else:
        omega = psi = sym_matrix(obs, "q", K, i)
    if not (np.all(np.isfinite(omega)) and np.all(np.isfinite(psi))):
        return np.nan
    return potential.value(np.zeros(K), omega, psi)


def _add_structural_overlaps(obs: dict, K: int) -> None:
    for k in range(1, K + 1):
        for l in range(k, K + 1):
            if f"p_{k}{l}" not in obs and f"q_{k}{l}" in obs:
                obs[f"p_{k}{l}"] = obs[f"q_{k}{l}"] - obs[f"t_{k}"] * obs[f"t_{l}"]


def _matrix_flow(config, potential, trainable, times) -> dict[str, np.ndarray]:
    flow = MatrixFlow(trainable, potential.gamma_tied, config.weight_decay)
    seeds = config.seed_list
    acc: dict[str, np.ndarray] = {}
    for seed in seeds:
        student, teacher = initial_matrices(config, seed)
        mats = [np.asarray(f @ f.T) for f in np.asarray(student["F"])]
        mats += [np.asarray(f @ f.T) for f in np.asarray(teacher["F"])]
        path = flow.solve(np.stack(mats), times, config.rtol)
        with jax.enable_x64(True):
            obs = _observe_path(len(trainable), config.moment_degree)(path)
        for name, v in obs.items():
            acc.setdefault(name, np.zeros(len(times)))
            acc[name] += np.asarray(v, np.float64) / len(seeds)
    return acc


def _population_flow(config, potential, times) -> dict[str, np.ndarray]:
    """The population gradient flow (:mod:`.population`) from each seed's initial matrices,
    observed with the simulator's observables, averaged over seeds; ``loss`` is Φ_d."""
    # mirrored nodes: the layer-1 gradient of two-layer models and the Edgeworth term are small
    # differences, which the plain Sobol rule resolves to ±10 % only (docs/aim.md, "Finite d")
    potential = dataclasses.replace(potential, rule=antithetic(potential.rule), _jit={})
    acc: dict[str, np.ndarray] = {}
    for seed in config.seed_list:
        student, teacher = initial_matrices(config, seed)
        flow = flow_for(config, potential, teacher, config.cumulants)
        path = flow.solve(student, times, config.rtol)
        for i, side in enumerate(path):  # a stopped solve's records are NaN, and so is all
            with jax.enable_x64(True):  # that is observed of them
                obs = observe(side, teacher, config.observed_param, config.moment_degree)
            obs = {k: float(v) for k, v in obs.items()} | {"loss": flow.value(side)}
            for name, v in obs.items():
                acc.setdefault(name, np.zeros(len(times)))
                acc[name][i] += v / len(config.seed_list)
    return acc


@functools.cache
def _observe_path(n_student: int, moment_degree: int):
    """The tied observables of every record of a matrix-flow path (R, K, d, d) in one compiled
    call, :data:`OBSERVE_BATCH` records at a time (bounded memory at large d). Record by record,
    eager, they took a quarter of a prediction's time at d = 128."""

    def one(S):
        return observe({"Ssym": S[:n_student]}, {"Ssym": S[n_student:]}, "tied", moment_degree)

    return jax.jit(lambda path: jax.lax.map(one, path, batch_size=OBSERVE_BATCH))


OBSERVE_BATCH = 8
"""Records of a matrix-flow path observed together (:func:`_observe_path`)."""
