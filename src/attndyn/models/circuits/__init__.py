"""QK/OV circuits toy of Vashisht & Ramaswamy, "Faster Query-Key Learning Sharpens Attention in
Self-Attention Models" (ICML 2026, arXiv 2608.06776). Model, data and training follow the
authors' code (docs/references.md); see docs/circuits.md.

The family's contract (:mod:`attndyn.models.base`), re-exported from its role files:
config.py (``NAME``, ``Config``, ``EXAMPLE``), data.py (sequences, the fixed ``test_set``),
model.py (forward and loss), observables.py (``SUMMARY``, ``LABELS``, ``OVERFLOW``),
simulation.py (``build(config)``, the trainer's Problem with groups ``qk`` and ``ov``;
``time_axes``, ``simulate(config)``: a Trajectory whose time axis is the SGD step), theory/
(``THEORY``) and bench.py (``BENCHMARKS``).
"""

from __future__ import annotations

from attndyn.models.base import CONTRACT, no_flops_floor
from attndyn.models.circuits.bench import BENCHMARKS
from attndyn.models.circuits.config import EXAMPLE, NAME, CircuitsConfig
from attndyn.models.circuits.config import CircuitsConfig as Config
from attndyn.models.circuits.data import test_set
from attndyn.models.circuits.memory import memory_terms
from attndyn.models.circuits.observables import LABELS, OVERFLOW, SUMMARY
from attndyn.models.circuits.simulation import TIME_LABEL, build, simulate, time_axes

OBSERVABLES_VERSION = 1
"""The version of the recorded observables (:mod:`attndyn.models.base`)."""

THEORY = "attndyn.models.circuits.theory"
"""The theory module (:mod:`attndyn.models.circuits.theory`)."""

flops_floor = no_flops_floor
"""No FLOP floor declared (docs/plugins.md): the time comes from the calibration alone."""

__all__ = [*CONTRACT, "CircuitsConfig", "test_set"]
