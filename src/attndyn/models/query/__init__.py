"""Single-query softmax attention learned by projected SGA (arXiv 2606.22406, Truong).

Our reconstruction of the model (docs/query.md; the paper's body was not available, only its
abstract): the query q maximises E‖a(q; X)‖², a = Σ softmax(β⟨q, x_i⟩) x_i, over tokens carrying
a latent direction u; the claim is that q → ±u.

The family's contract (:mod:`attndyn.models.base`), re-exported from its role files:
config.py (``NAME``, ``Config``, ``EXAMPLE``), model.py (tokens, objective, analytic gradient)
and reduced.py (the exact reduced sampler), observables.py (``observe``, ``SUMMARY``,
``LABELS``, ``OVERFLOW``), simulation.py (``build(config)``, the trainer's Problem;
``time_axes``: ``time`` = SGA steps and ``ode_time`` = Σ_{j<k} η_j; ``simulate``), theory/
(``THEORY``) and bench.py (``BENCHMARKS``).
"""

from __future__ import annotations

from attndyn.models.base import CONTRACT, no_flops_floor
from attndyn.models.query.bench import BENCHMARKS
from attndyn.models.query.config import EXAMPLE, NAME, QueryConfig
from attndyn.models.query.config import QueryConfig as Config
from attndyn.models.query.memory import memory_terms
from attndyn.models.query.observables import LABELS, OVERFLOW, SUMMARY, observe
from attndyn.models.query.simulation import (
    TIME_LABEL,
    build,
    ode_times,
    simulate,
    time_axes,
    token_spec,
)

OBSERVABLES_VERSION = 1
"""The version of the recorded observables (:mod:`attndyn.models.base`)."""

THEORY = "attndyn.models.query.theory"
"""The theory module (:mod:`attndyn.models.query.theory`)."""

flops_floor = no_flops_floor
"""No FLOP floor declared (docs/plugins.md): the time comes from the calibration alone."""

__all__ = [*CONTRACT, "QueryConfig", "observe", "token_spec", "ode_times"]
