"""Stochastic training of attention and LoRA (arXiv 2605.07959, Frangi, Mukherjee, Kumar, Sun &
Sun): Langevin dynamics on regularised regression losses, and test potentials.

Our reconstruction (docs/langevin.md; only the abstract is public): F = L̂ + (λ/2)‖θ‖² on an
attention layer or a LoRA net (model.py), trained by the learning-rate-dependent SDE
dΘ = −∇F dt + √s dW (Shi, Su & Jordan, arXiv 2004.06977) whose Gibbs measure is
μ_s ∝ exp(−2F/s), by Langevin Monte Carlo at explicit β = 2/s, or by minibatch SGD at learning
rate s.

The family's contract (:mod:`attndyn.models.base`), re-exported from its role files:
config.py (``NAME``, ``Config``, ``EXAMPLE``), model.py (the potentials F and their frozen data,
``frozen_part``), observables.py (``observe``, ``SUMMARY``, ``LABELS``, ``OVERFLOW``),
simulation.py (``build(config)``: SGD with step h plus the trainer's N(0, s·h) noise, chains
vmapped; ``time_axes``, ``TIME_LABEL``, ``simulate``), theory/ (``THEORY``) and bench.py
(``BENCHMARKS``); stationary.py holds the stationarity checks, estimators and the minimiser
the experiments use.
"""

from __future__ import annotations

from attndyn.models.base import CONTRACT, no_flops_floor
from attndyn.models.langevin.bench import BENCHMARKS
from attndyn.models.langevin.config import (
    BETA_OF_S,
    EXAMPLE,
    NAME,
    THEORY_EXAMPLE,
    LangevinConfig,
)
from attndyn.models.langevin.config import LangevinConfig as Config
from attndyn.models.langevin.memory import memory_terms
from attndyn.models.langevin.model import (
    Potential,
    effective_params,
    frozen_part,
    n_params,
    potential,
)
from attndyn.models.langevin.observables import LABELS, OVERFLOW, SUMMARY, observe
from attndyn.models.langevin.simulation import TIME_LABEL, build, simulate, time_axes

OBSERVABLES_VERSION = 1
"""The version of the recorded observables (:mod:`attndyn.models.base`)."""

THEORY = "attndyn.models.langevin.theory"
"""The theory module (:mod:`attndyn.models.langevin.theory`)."""

flops_floor = no_flops_floor
"""No FLOP floor declared (docs/plugins.md): the time comes from the calibration alone."""

__all__ = [
    *CONTRACT,
    "THEORY_EXAMPLE",
    "BETA_OF_S",
    "LangevinConfig",
    "Potential",
    "frozen_part",
    "observe",
    "n_params",
    "effective_params",
    "potential",
]
