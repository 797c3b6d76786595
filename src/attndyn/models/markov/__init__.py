"""One-layer transformer on Markov chains and text: focus–dilution cycles (arXiv 2605.01199).

Chen, Lin, Xu & Luo, "Focus and Dilution: The Multi-stage Learning Process of Attention" (ICML
2026); the model, the data and our readings: docs/markov.md.

The family's contract (:mod:`attndyn.models.base`), re-exported from its role files:
config.py (``NAME``, ``Config``, ``EXAMPLE``), data.py (π, P, sequences; ``DataLaw``) and
text.py (corpora), model.py (Def. 2.2, the population loss of Prop. 2.3), observables.py
(``SUMMARY``, ``LABELS``, ``OVERFLOW``, ``tracked_tokens``), simulation.py (``build(config)``,
``run_records``; ``time_axes``: ``time`` = lr·step, the flow time; ``simulate``), theory/
(``THEORY``) and bench.py (``BENCHMARKS``); stages.py and snapshots.py hold the stage detection
and weight snapshots the experiments use.
"""

from __future__ import annotations

from attndyn.models.base import CONTRACT, no_flops_floor
from attndyn.models.markov.bench import BENCHMARKS
from attndyn.models.markov.config import EXAMPLE, NAME, MarkovConfig
from attndyn.models.markov.config import MarkovConfig as Config
from attndyn.models.markov.data import PAPER_PI, DataLaw, data_law
from attndyn.models.markov.memory import memory_terms
from attndyn.models.markov.observables import (
    LABELS,
    OBSERVABLES_VERSION,
    OVERFLOW,
    SUMMARY,
    tracked_tokens,
)
from attndyn.models.markov.simulation import (
    FROZEN,
    TIME_LABEL,
    build,
    run_records,
    simulate,
    time_axes,
)

THEORY = "attndyn.models.markov.theory"
"""The theory module (:mod:`attndyn.models.markov.theory`)."""

flops_floor = no_flops_floor
"""No FLOP floor declared (docs/plugins.md): the time comes from the calibration alone."""

__all__ = [
    *CONTRACT,
    "FROZEN",
    "MarkovConfig",
    "PAPER_PI",
    "DataLaw",
    "data_law",
    "tracked_tokens",
    "run_records",
]
