"""What langevin-plateau and langevin-size share: the potentials' common fields, the SDE runs,
min F by damped Newton with the Hessian spectrum there, and the per-run plateau statistics
(docs/langevin.md, "Laplace gap": E_μF − min F = s·p_eff/4 + O(s²), μ_s ∝ exp(−2F/s))."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr
from pydantic import BaseModel, ConfigDict, Field

from attndyn.claims.base import RunContext
from attndyn.claims.config import Base, ExperimentConfig, changed
from attndyn.claims.stats import (
    MIN_BOOTSTRAP_SEEDS,
    Interval,
    bootstrap_ci,
    jackknife_ci,
    mean_ci,
)
from attndyn.models.langevin.config import LangevinConfig

GD_SEED = 1_000_000  # Newton starts use seeds GD_SEED + seed + i, apart from the chains'
FLAT_EIG = 0.01  # an eigenvalue |H_i| < FLAT_EIG·λ counts as flat (λ: the regulariser's curvature)
MINIMUM_RUN = "langevin-plateau:minimum-orbit"  # the stored min-F runs (both experiments)
RUN_FIELDS = ("s", "h", "t_max", "records", "grid", "seed", "seeds")  # not the potential's
COMMON = dict(
    lam=0.3,
    n=32,
    labels="teacher",
    teacher_scale=3.0,
    label_noise=0.3,  # keeps min F > 0
    data_seed=0,
    grid="linear",
)


# langevin-plateau's two potentials (also langevin-poincare's): the fields beside COMMON
ATTENTION_NET = dict(
    model="attention",
    d=4,
    tokens=4,
    heads=1,
    d_k=2,
    d_out=1,
    pooling="last",
    init_scale=0.3,
    h=0.02,
)
LORA_NET = dict(model="lora", d=4, width=8, rank=2, init_scale=1.0, h=0.01)


def potential_base(description: str, **fields: Any) -> Any:
    """A nested LangevinConfig with the common fields (λ = 0.3, n = 32, teacher labels)."""
    return Base(LangevinConfig, description, **COMMON, **fields)


class PlateauConfig(ExperimentConfig):
    """The fields langevin-plateau and langevin-size share beside their potentials."""

    burn: float = Field(0.5, gt=0, lt=1, description="plateau window: t ≥ burn·t_max")
    gd_steps: int = Field(200, ge=1, description="damped-Newton iterations per start")
    horizon: float = Field(
        1.0,
        gt=0,
        le=1,
        description="control short-horizon: every run stops at this fraction of its t_max "
        "(the plateau window is still its last half)",
    )
    beta_s: float = Field(
        2.0,
        gt=0,
        description="β·s of the predicted Gibbs measure exp(−βF): 2 (μ_s ∝ exp(−2F/s)); the "
        "control beta-1/s sets 1",
    )


def potential_fields(base: LangevinConfig, **changes: Any) -> dict[str, Any]:
    """The potential's given fields (no s, run length or seeds): what min F depends on."""
    return {k: v for k, v in changed(base, **changes).items() if k not in RUN_FIELDS}


def simulate(ctx: RunContext, config: Any, base: LangevinConfig, s: float, **changes: Any):
    """One SDE run of ``base`` (with ``changes``) at temperature s, cut at ``horizon``."""
    return ctx.simulate("langevin", base, **changes, s=s, t_max=base.t_max * config.horizon)


class MinimumConfig(BaseModel):
    """What min F depends on (the run id of :func:`minimum`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    potential: dict[str, Any]
    starts: int
    steps: int
    seed: int


def orbit_tolerance(grad_sq: float, lam: float) -> float:
    """How far the Newton end point may lie from the exact minimiser: with ∇F = H(θ − θ*) and
    every non-flat eigenvalue ≥ FLAT_EIG·λ, ‖θ − θ*‖ ≤ ‖∇F‖/(FLAT_EIG·λ); by Weyl's inequality
    the singular values of the weights' k-vectors move by no more, so a singular value below
    this bound is indistinguishable from zero (the span's rank, hence the orbit, is read with
    it: :func:`attndyn.models.langevin.model.orbit_dimension`)."""
    return math.sqrt(grad_sq) / (FLAT_EIG * lam)


def minimum(ctx: RunContext, config: Any, values: dict[str, Any]) -> dict[str, np.ndarray]:
    """min F by damped Newton from ``gd_starts`` starts (stored): ``F``, ``grad_sq`` per
    start, the Hessian eigenvalues ``eig`` at the best start and ``orbit``, the dimension of
    the symmetry orbit through it (:func:`orbit_tolerance`); NaN padding dropped."""
    mc = MinimumConfig(
        potential=values, starts=config.gd_starts, steps=config.gd_steps, seed=config.seed
    )

    def compute() -> xr.Dataset:
        from attndyn.models.langevin import frozen_part
        from attndyn.models.langevin.model import orbit_dimension
        from attndyn.models.langevin.stationary import minimise_newton

        lc = LangevinConfig(**values, s=0.0)
        seeds = range(GD_SEED + config.seed, GD_SEED + config.seed + config.gd_starts)
        F, g_sq, eig, params = minimise_newton(lc, seeds, config.gd_steps)
        tol = orbit_tolerance(float(g_sq[int(np.argmin(F))]), lc.lam)
        orbit = orbit_dimension(lc, params, frozen_part(lc).get("fixed", {}), tol)
        # the store keeps (time,) tables: one axis of length max(starts, p), NaN-padded
        size = max(len(F), len(eig))

        def pad(x):
            return ("time", np.concatenate([x, np.full(size - len(x), np.nan)]))

        return xr.Dataset(
            {"F": pad(F), "grad_sq": pad(g_sq), "eig": pad(eig), "orbit": pad(np.array([orbit]))},
            coords={"time": np.arange(size, dtype=float)},
            attrs={"family": "langevin"},
        )

    tr = ctx.compute(MINIMUM_RUN, mc, compute)
    # a dry run's placeholder has no values: empty arrays
    return {
        k: _finite(tr[k].values) if k in tr else np.array([])
        for k in ("F", "grad_sq", "eig", "orbit")
    }


def _finite(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x[np.isfinite(x)]


def spectrum(values: dict[str, Any], eig: np.ndarray, h: float, orbit: int) -> dict[str, Any]:
    """p, p_eff = p − ``orbit`` (the orbit through the minimiser, :func:`minimum`), the flat
    count expected (``orbit``; ``flat_generic`` at a generic point) and observed, the extreme
    non-flat eigenvalues and Euler–Maruyama's gap factor (stationary.em_gap_factor) at step h."""
    from attndyn.models.langevin.model import flat_directions, n_params
    from attndyn.models.langevin.stationary import em_gap_factor

    lc = LangevinConfig(**values, s=0.0)
    flat = int(orbit)
    order = np.sort(np.abs(eig))
    return {
        "p": n_params(lc),
        "p_eff": n_params(lc) - flat,
        "flat": flat,
        "flat_generic": flat_directions(lc),
        "flat_observed": int(np.sum(np.abs(eig) < FLAT_EIG * values["lam"])),
        "eig_min_nonflat": float(order[flat]) if flat < len(order) else float("nan"),
        "eig_max": float(np.max(eig)),
        "em_factor": em_gap_factor(eig, h, flat),
    }


def chains(tr: xr.Dataset, F_min: float, pred: float, burn: float) -> dict[str, Any]:
    """Per run: per-chain plateau (time average over t ≥ burn·t_max), the gap ratio
    (plateau − min F)/pred, the relaxation rate (bootstrap or jackknife-t over chains) and the
    window change of E F (Student-t over the per-chain changes), the smallest F any chain
    recorded."""
    from attndyn.models.langevin.stationary import relaxation_rate, time_average, window_change

    F = tr["F"].values.astype(float)
    t = tr["time"].values.astype(float)
    t_from = burn * t[-1]
    avg = time_average(F, t, t_from)
    late = t >= t_from
    chains_idx = np.arange(F.shape[0], dtype=float)

    def rate(idx) -> float:
        sub = F[idx.astype(int)]
        plateau = float(np.mean(sub[:, late]))
        se = float(np.mean(np.std(sub[:, late], axis=0))) / math.sqrt(sub.shape[0])
        return relaxation_rate(t, sub.mean(axis=0), plateau, 3.0 * se)

    # the window change is linear in F (a least-squares slope of the mean curve), so it is the
    # mean of the per-chain changes: a Student-t interval over chains
    change = [window_change(F[i : i + 1], t, t_from) / pred for i in range(F.shape[0])]

    return {
        "avg": avg,
        "plateau": mean_ci(avg),
        "ratio": mean_ci((avg - F_min) / pred),
        # the rate fit stops where E F meets the noise (not smooth in the chains): the percentile
        # bootstrap where its coverage holds (≥ MIN_BOOTSTRAP_SEEDS chains), else jackknife-t.
        # A precondition, not a claim: up to half the resamples may lack a fit window (fewer
        # than three points above the noise floor, e.g. at a large s), as before 2026-12-03
        "rate": bootstrap_ci(chains_idx, rate, n_boot=1000, max_dropped=0.5)
        if chains_idx.size >= MIN_BOOTSTRAP_SEEDS
        else jackknife_ci(chains_idx, rate),
        "change": mean_ci(change),
        "F_lowest": float(np.min(F)),
        "diverged": int(tr["diverged"].sum()),
        "mean_curve": F.mean(axis=0),
        "time": t,
        "pred": pred,
    }


def tolerance(s_min: float, s_max: float, em_factor: float) -> float:
    """τ = s_min/s_max + δ_h: the gap's next order is a relative correction c·s, bounded at s_min
    by s_min/s_max when |c|·s_max ≤ 1 (the Laplace regime reaches s_max, checked by the claims),
    plus EM's O(h) bias δ_h = em_factor − 1 (stationary.em_gap_factor)."""
    return s_min / s_max + abs(em_factor - 1.0)


def largest_deviation(cells: dict[Any, Interval]) -> Any:
    """The key whose interval reaches farthest from 0 (either end)."""
    return max(cells, key=lambda k: max(abs(cells[k].low), abs(cells[k].high)))


def triple(x: Interval) -> list[float]:
    """[value, low, high] of an interval (the JSON summary)."""
    return [x.value, x.low, x.high]
