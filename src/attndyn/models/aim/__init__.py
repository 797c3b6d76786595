"""Attention-indexed models (arXiv 2609.03858, with 2506.01582 and 2509.24914).

In this package "P1" is arXiv 2609.03858 (Xu, Sagitova, Zdeborová, Krzakala) and "P1 Eq. n" its
Eq. n; docs/references.md has the entries, docs/aim.md the readings chosen where P1 is silent.

The family's contract (:mod:`attndyn.models.base`), re-exported from its role files:
config.py (``NAME``, ``Config``, ``EXAMPLE``), model.py (tokens, forms, outputs, loss),
observables.py (``observe``, ``SUMMARY``, ``LABELS``, ``OVERFLOW``), simulation.py
(``build(config)``, the trainer's Problem; ``time_axes``, ``TIME_LABEL`` and ``simulate(config)``,
a Trajectory on the family's macroscopic time axis: tied t = 4nα_d/d; direct S and untied
τ = nα_d/d, untied also ``time_fast`` = nα_d), theory/ (``THEORY``) and bench.py
(``BENCHMARKS``).
"""

from __future__ import annotations

from attndyn.models.aim.bench import BENCHMARKS
from attndyn.models.aim.config import EXAMPLE, NAME, AIMConfig
from attndyn.models.aim.config import AIMConfig as Config
from attndyn.models.aim.flops import flops_floor
from attndyn.models.aim.memory import memory_terms
from attndyn.models.aim.model import register_activation
from attndyn.models.aim.observables import LABELS, OVERFLOW, SUMMARY
from attndyn.models.aim.simulation import TIME_LABEL, build, simulate, student_side, time_axes
from attndyn.models.base import CONTRACT

OBSERVABLES_VERSION = 1
"""The version of the recorded observables (:mod:`attndyn.models.base`)."""

THEORY = "attndyn.models.aim.theory"
"""The theory module (:mod:`attndyn.models.aim.theory`)."""

__all__ = [*CONTRACT, "AIMConfig", "student_side", "register_activation"]
