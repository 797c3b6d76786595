"""The experiment framework: the contract an experiment satisfies (:mod:`.base`), the statistics
of its claims (:mod:`.stats`), the runner (:mod:`.runner`) and the dry run (:mod:`.dryrun`).

Experiments themselves live in :mod:`attndyn.experiments` (one subpackage per model family) and
are found through the ``attndyn.experiments`` entry-point group (:mod:`attndyn.core.registry`);
``attndyn list`` shows them.
"""

from __future__ import annotations

from attndyn.claims.base import Claim, Experiment, ExperimentConfig, RunContext
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
    "Claim",
    "Experiment",
    "ExperimentConfig",
    "RunContext",
    "experiment_names",
    "get_experiment",
    "list_experiments",
]
