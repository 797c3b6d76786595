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
- ``auto``: hierarchy for tied, direct-ode for direct S, untied for untied.

Initial conditions: the order parameters of the simulator's own initial matrices (same d, same
seeds: ``seed .. seed + seeds − 1``), averaged over seeds, so theory and simulation start from
the same point up to O(1/√d) seed-to-seed fluctuations.
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from pydantic import Field, model_validator

from attndyn.core.config import canonical
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

    method: Literal[
        "auto", "hierarchy", "matrix-flow", "direct-ode", "untied", "untied-hierarchy"
    ] = Field("auto", description="theory to integrate (see attndyn.models.aim.theory)")
    truncation: int = Field(6, ge=2, le=12, description="degree M of the truncated hierarchy")
    rtol: float = Field(1e-8, gt=0, lt=1e-2, description="relative tolerance of the ODE solver")
    quad_log2: int = Field(
        14,
        ge=8,
        le=20,
        description="log2 of the quadrature node budget (Gauss–Hermite if it fits, else QMC)",
    )

    @model_validator(mode="after")
    def _method_fits(self) -> AIMTheoryConfig:
        tied_only = self.method in ("hierarchy", "matrix-flow")
        if tied_only and self.param != "tied":
            raise ValueError(f"method '{self.method}' needs param='tied' (got '{self.param}')")
        if self.method == "direct-ode" and self.param != "direct":
            raise ValueError(f"method 'direct-ode' needs param='direct' (got '{self.param}')")
        untied = self.method in ("untied", "untied-hierarchy")
        if untied and self.param != "untied":
            raise ValueError(f"method '{self.method}' needs param='untied' (got '{self.param}')")
        if self.param == "untied" and self.teacher_kind != "product":
            raise ValueError("untied theory needs the product teacher (teacher='product')")
        if self.param == "tied" and self.teacher_kind == "product":
            raise ValueError("tied theory needs a symmetric teacher ('wishart' or 'identity')")
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
    K = potential.K
    trainable = tuple(range(1, n_student(config) + 1))
    method = config.resolved_method
    if method == "hierarchy":
        hierarchy = TiedHierarchy(
            K, trainable, config.truncation, potential.gamma_tied, config.weight_decay
        )
        mu0 = hierarchy.initial(initial_observables(config, config.truncation))
        obs = hierarchy.solve(mu0, times, config.rtol)
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
    return make_trajectory(
        recorded(obs, config.moment_degree),
        time=times,
        samples=samples,
        family="aim",
        config=dict(canonical(config), theory=method),
    )


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
        for i in range(len(times)):
            with jax.enable_x64(True):
                S = jnp.asarray(path[i])
                n_s = len(trainable)
                obs = observe({"Ssym": S[:n_s]}, {"Ssym": S[n_s:]}, "tied", config.moment_degree)
            for name, v in obs.items():
                acc.setdefault(name, np.zeros(len(times)))[i] += float(v) / len(seeds)
    return acc
