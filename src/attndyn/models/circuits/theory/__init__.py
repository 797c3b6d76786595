"""Circuits theory (Vashisht & Ramaswamy, ICML 2026, arXiv 2608.06776; docs/circuits-theory.md).

``predict(config)`` integrates the reduced two-scalar gradient flow stated in the README of the
authors' code (docs/circuits-theory.md §1; :mod:`attndyn.models.circuits.theory.reduced`) and
returns a Trajectory (dim ``time``, the gradient-flow time t with the config's learning rates)
with observables ``mu_ov``, ``mu_qk``, ``alpha`` (attention mass on the informative tokens) and
``loss``. The crossing table at loss thresholds is :func:`reduced.crossings`.

Other parts: :mod:`~attndyn.models.circuits.theory.factorization` (factorisation as learning-rate
rescaling: the conserved quantity and the effective learning rate, docs/circuits-theory.md §2)
and :mod:`~attndyn.models.circuits.theory.fixed_attention` (the Fig. 3 fixed-attention model,
docs/circuits-theory.md §3).

Time: the reduced flow's t is not the toy simulator's SGD step (the reduced problem is a stylised
model, not the toy's exact order-parameter flow), so ``predict`` keeps its own axis.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from pydantic import Field, model_validator

from attndyn.core.config import GridConfig, canonical
from attndyn.core.trajectory import make_trajectory
from attndyn.models.circuits.theory.reduced import ReducedParams, solve

__all__ = ["CircuitsTheoryConfig", "Config", "predict", "params_of"]

SUMMARY = ("alpha", "mu_ov", "mu_qk", "loss")
"""Observables ``attndyn predict circuits`` prints at the final time."""
SAME_GRID = False
"""The reduced flow is a stylised two-scalar model (arXiv 2608.06776 §5.1) with its own
observables and gradient-flow time, not the order-parameter flow of the toy simulator."""


class CircuitsTheoryConfig(GridConfig):
    """The reduced flow's constants (docs/circuits-theory.md §1; defaults are Fig. 4's) and its time
    grid.

    Learning rates: ``eta_ov`` and either ``ratio`` r = η_QK/η_OV (default 1) or ``eta_qk``.
    The run ends at the first time the loss reaches ``stop_loss``, or at ``t_max`` if set;
    ``grid="log"`` records uniformly in log10(1 + t), ``"linear"`` uniformly in t.
    The README's M is the field ``n_classes``. The flow is deterministic and runs in float64,
    so the config has no seeds and no dtype.
    """

    m: float = Field(5.0, gt=0, description="informative tokens (logit μ_QK)")
    n: float = Field(50.0, gt=0, description="uninformative tokens (logit 0)")
    b: float = Field(50.0, gt=0, description="normalisation constant (50 = V in the code)")
    n_classes: float = Field(20.0, gt=1, description="M, the number of output classes")
    eta_ov: float = Field(1.0, gt=0, description="learning rate η_OV of the OV circuit")
    ratio: float | None = Field(None, gt=0, description="r = η_QK/η_OV (default 1)")
    eta_qk: float | None = Field(None, gt=0, description="η_QK (instead of ratio)")
    mu_ov0: float = Field(0.0, description="μ_OV(0)")
    mu_qk0: float = Field(0.0, description="μ_QK(0)")
    stop_loss: float = Field(1e-4, gt=0, description="stop at the first time L <= stop_loss")
    t_max: float | None = Field(None, gt=0, description="time horizon (None: until stop_loss)")
    records: int = Field(200, ge=2, le=100_000, description="number of record points")
    rtol: float = Field(1e-10, gt=0, lt=1e-4, description="relative tolerance of DOP853")

    @model_validator(mode="after")
    def _one_rate(self) -> CircuitsTheoryConfig:
        if self.ratio is not None and self.eta_qk is not None:
            raise ValueError("eta_qk: set one of ratio and eta_qk, not both")
        return self

    @property
    def resolved_eta_qk(self) -> float:
        if self.eta_qk is not None:
            return self.eta_qk
        return (1.0 if self.ratio is None else self.ratio) * self.eta_ov


Config = CircuitsTheoryConfig


def params_of(config: CircuitsTheoryConfig) -> ReducedParams:
    """The :class:`ReducedParams` of a theory config."""
    return ReducedParams(
        m=config.m,
        n=config.n,
        b=config.b,
        M=config.n_classes,
        eta_ov=config.eta_ov,
        eta_qk=config.resolved_eta_qk,
        mu_ov0=config.mu_ov0,
        mu_qk0=config.mu_qk0,
    )


def predict(config: CircuitsTheoryConfig) -> xr.Dataset:
    """Integrate the reduced flow from t = 0 to the stop.

    Args:
        config: the validated CircuitsTheoryConfig.

    Returns:
        Trajectory (xarray.Dataset) with dim ``time`` = (R,), R = ``records`` points uniform in
        log10(1 + t) for ``grid="log"`` (Fig. 4's axis), in t for ``"linear"``; ``time`` is the
        flow's own gradient-flow time, not the toy simulator's SGD step. Observables
        ``mu_ov``, ``mu_qk``, ``alpha``, ``loss``, each (R,) float64.
    """
    p = params_of(config)
    sol = solve(
        p,
        thresholds=[config.stop_loss],
        stop_loss=config.stop_loss,
        t_max=config.t_max,
        records=config.records,
        grid=config.grid,
        rtol=config.rtol,
    )
    obs = {"mu_ov": sol.mu_ov, "mu_qk": sol.mu_qk, "alpha": sol.alpha, "loss": sol.loss}
    return make_trajectory(
        {k: np.asarray(v) for k, v in obs.items()},
        time=sol.times,
        family="circuits",
        config=dict(canonical(config), theory="reduced"),
    )
