"""The experiment contract: a published claim, reproduced with one command.

An experiment has a ``name``, a one-line ``description``, a pydantic ``Config`` (extra keys
forbidden), ``presets`` (``small``: well under two minutes on two cores; ``paper``: the
publication's setting), and three methods:

- ``run(config, ctx) -> dict``: simulate / predict through ``ctx`` (which stores every run and
  reuses stored ones) and return whatever the claims and the figure need;
- ``claims(results) -> list[Claim]``: each claim's statement, measured value, target and verdict;
- ``figure(results, path) -> Path``; and ``summary(results) -> dict`` of key numbers for ``--json``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import xarray as xr
from pydantic import BaseModel, ConfigDict

from attndyn import runs
from attndyn.core.config import SimulationConfig


class ExperimentConfig(BaseModel):
    """Base of experiment configs: extra keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


@dataclass
class Claim:
    """One checked statement: ``value`` measured, ``target`` in words, ``passed`` the verdict."""

    name: str
    statement: str
    value: float | None
    target: str
    passed: bool

    def as_dict(self) -> dict[str, Any]:
        value = self.value
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        return {
            "name": self.name,
            "statement": self.statement,
            "value": value,
            "target": self.target,
            "passed": bool(self.passed),
        }


@dataclass
class RunContext:
    """Runs simulations and theory for an experiment, storing and reusing every run."""

    store: Any  # attndyn.store.Store
    force: bool = False
    run_ids: list[str] = field(default_factory=list)

    def simulate(self, family: str, **values) -> xr.Dataset:
        """The family's simulation of the config ``values`` (stored, reused)."""
        return self.simulate_config(family, runs.family_config(family, values))

    def simulate_config(self, family: str, config: SimulationConfig) -> xr.Dataset:
        traj, _ = runs.simulation(family, config, self.store, self.force)
        self.run_ids.append(traj.attrs["run_id"])
        return traj

    def compute(self, name: str, config: BaseModel, fn: Callable[[], xr.Dataset]) -> xr.Dataset:
        """Store ``fn()`` (a Trajectory) as the run ``run_id(name, config)``, or read it back if
        stored: for an experiment's own model (e.g. circuits-fixed-attention) that is neither a
        registered family nor its theory."""
        traj, _ = runs.load_or_compute(name, config, fn, self.store, self.force)
        self.run_ids.append(traj.attrs["run_id"])
        return traj

    def predict(self, family: str, **values) -> xr.Dataset:
        """The family theory's prediction for the config ``values`` (stored, reused)."""
        traj, _ = runs.theory(family, runs.theory_config(family, values), self.store, self.force)
        self.run_ids.append(traj.attrs["run_id"])
        return traj


class Experiment:
    """Subclass per published claim; see the module docstring."""

    name: ClassVar[str]
    description: ClassVar[str]
    Config: ClassVar[type[ExperimentConfig]]
    presets: ClassVar[dict[str, dict[str, Any]]]

    def run(self, config: ExperimentConfig, ctx: RunContext) -> dict[str, Any]:
        raise NotImplementedError

    def claims(self, results: dict[str, Any]) -> list[Claim]:
        raise NotImplementedError

    def figure(self, results: dict[str, Any], path: Path) -> Path:
        raise NotImplementedError

    def summary(self, results: dict[str, Any]) -> dict[str, Any]:
        return {}
