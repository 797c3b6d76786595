"""The experiment framework: the contract an experiment satisfies (:mod:`.base`), its nested
configs (:mod:`.config`), claim declarations (:mod:`.spec`) and verdicts (:mod:`.verdict`), the
statistics over seeds (:mod:`.stats`), the runner (:mod:`.runner`), the dry run (:mod:`.dryrun`)
and the generated claims pages (:mod:`.pages`). An experiment imports what it needs from here
(``__all__``; docs/plugins.md, "Experiments"), its figure helpers from :mod:`attndyn.figures`.

Experiments themselves live in :mod:`attndyn.experiments` (one subpackage per model family) and
are found through the ``attndyn.experiments`` entry-point group (:mod:`attndyn.core.registry`);
``attndyn list`` shows them.
"""

from __future__ import annotations

from attndyn.claims.base import Control, Experiment, RunContext
from attndyn.claims.config import Base, ExperimentConfig, variant
from attndyn.claims.spec import (
    Evidence,
    Retired,
    above,
    at_least,
    at_most,
    below,
    between,
    claim,
    equals,
    measured,
    within,
)
from attndyn.claims.stats import Interval, bootstrap_ci, jackknife_ci, mean_ci, worst
from attndyn.claims.verdict import Check, Claim
from attndyn.core import registry


def experiment_names() -> list[str]:
    """Names of the installed experiments (nothing is imported)."""
    return registry.names(registry.EXPERIMENTS)


def get_experiment(name: str) -> Experiment:
    """A fresh instance of the experiment registered as ``name`` (InputError if unknown)."""
    cls = registry.load(registry.EXPERIMENTS, name, "experiment")
    return cls()


def list_experiments() -> list[tuple[str, str]]:
    """(name, one-line description) of every registered experiment, sorted by name."""
    return [(name, get_experiment(name).description) for name in experiment_names()]


__all__ = [
    "Base",
    "Check",
    "Claim",
    "Control",
    "Evidence",
    "Experiment",
    "ExperimentConfig",
    "Interval",
    "Retired",
    "RunContext",
    "above",
    "at_least",
    "at_most",
    "below",
    "between",
    "bootstrap_ci",
    "claim",
    "equals",
    "experiment_names",
    "get_experiment",
    "jackknife_ci",
    "list_experiments",
    "mean_ci",
    "measured",
    "variant",
    "within",
    "worst",
]
