"""Registered experiments: one module per published claim. ``attndyn list`` shows them."""

from __future__ import annotations

import importlib

from attndyn.errors import InputError
from attndyn.experiments.base import Claim, Experiment, ExperimentConfig, RunContext

# name -> "module:Class"; modules are imported lazily
REGISTRY: dict[str, str] = {
    "aim-parameterization": "attndyn.experiments.aim_parameterization:AIMParameterization",
    "aim-recovery-scaling": "attndyn.experiments.aim_recovery_scaling:AIMRecoveryScaling",
    "aim-solvable": "attndyn.experiments.aim_solvable:AIMSolvable",
    "aim-truncation": "attndyn.experiments.aim_truncation:AIMTruncation",
    "aim-untied": "attndyn.experiments.aim_untied:AIMUntied",
    "circuits-fixed-attention": "attndyn.experiments.circuits_fixed_attention:CircuitsFixedAttention",
    "circuits-lr-ratio": "attndyn.experiments.circuits_lr_ratio:CircuitsLRRatio",
    "circuits-ode": "attndyn.experiments.circuits_ode:CircuitsODE",
    "circuits-parameterization": (
        "attndyn.experiments.circuits_parameterization:CircuitsParameterization"
    ),
    "query-recovery": "attndyn.experiments.query_recovery:QueryRecovery",
}


def register(name: str, target: str) -> None:
    REGISTRY[name] = target


def get_experiment(name: str) -> Experiment:
    if name not in REGISTRY:
        allowed = ", ".join(sorted(REGISTRY)) or "(none)"
        raise InputError(f"unknown experiment '{name}'; allowed: {allowed}")
    module, cls = REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)()


def list_experiments() -> list[tuple[str, str]]:
    """(name, one-line description) of every registered experiment, sorted by name."""
    return [(name, get_experiment(name).description) for name in sorted(REGISTRY)]


__all__ = [
    "Claim",
    "Experiment",
    "ExperimentConfig",
    "RunContext",
    "get_experiment",
    "list_experiments",
    "register",
]
