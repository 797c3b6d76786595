"""Experiments: one class per published claim, found through the ``attndyn.experiments``
entry-point group (:mod:`attndyn.core.registry`); ``attndyn list`` shows them.

This package holds the framework only: the contract (:mod:`.base`) and the runner
(:mod:`.runner`). The experiments live in one subpackage per model family
(``experiments/<family>/<claim>.py``); their measured values and timings are in
docs/experiments.md."""

from __future__ import annotations

from attndyn.core import registry
from attndyn.experiments.base import Claim, Experiment, ExperimentConfig, RunContext


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
