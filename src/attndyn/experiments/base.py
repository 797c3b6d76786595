"""The experiment contract: a published claim, reproduced with one command.

An experiment has a ``name``, a one-line ``description``, a pydantic ``Config`` (extra keys
forbidden), ``presets`` (``small``: well under two minutes on two cores; ``paper``: the
publication's setting), and four steps that the runner calls in this order:

- ``run(config, ctx) -> results``: simulate / predict through ``ctx`` (which stores every run and
  reuses stored ones) and return the trajectories;
- ``measure(config, results) -> measurements``: every number the claims, the summary and the
  figure use, computed once;
- ``claims(config, measurements) -> list[Claim]``: each claim built by a :class:`Claim` helper
  that states its threshold once and writes the target text from it;
- ``figure(config, results, measurements, path) -> Path``.

``summary(measurements)`` (the ``--json`` summary) is the measurements made JSON-safe, unless an
experiment narrows it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import xarray as xr
from pydantic import BaseModel, ConfigDict

from attndyn import runs
from attndyn.core.config import SimulationConfig
from attndyn.core.serial import json_safe


class ExperimentConfig(BaseModel):
    """Base of experiment configs: extra keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}


@dataclass(frozen=True)
class Check:
    """A condition and its text, e.g. ``Check.compare("min z", z, ">=", 5)``: "min z >= 5"."""

    text: str
    passed: bool

    @classmethod
    def compare(cls, label: str, value: Any, op: str, threshold: float) -> Check:
        """``value <op> threshold`` (NaN fails every comparison)."""
        text = f"{label} {op} {threshold:g}".strip()
        return cls(text, bool(_OPS[op](value, threshold)))


@dataclass
class Claim:
    """One checked statement: ``value`` measured, ``target`` in words, ``passed`` the verdict.

    Build claims with the helpers (``at_least``, ``at_most``, ``above``, ``below``, ``equals``,
    ``within``, ``between``, ``holds``): each takes the threshold once and writes ``target``.
    ``ci_low``/``ci_high`` hold a confidence interval of ``value`` where one is measured.
    """

    name: str
    statement: str
    value: float | None
    target: str
    passed: bool
    ci_low: float | None = None
    ci_high: float | None = None

    @classmethod
    def holds(cls, name: str, statement: str, value: Any, *checks: Check) -> Claim:
        """Passes when every check passes; the target is the checks' texts joined by "and"."""
        if not checks:
            raise ValueError(f"claim {name!r} states no condition")
        text = " and ".join(c.text for c in checks)
        return cls(name, statement, _number(value), text, all(c.passed for c in checks))

    @classmethod
    def _compare(cls, op, name, statement, value, threshold, also: tuple[Check, ...]) -> Claim:
        return cls.holds(name, statement, value, Check.compare("", value, op, threshold), *also)

    @classmethod
    def at_least(cls, name, statement, value, threshold, *also: Check) -> Claim:
        """``value >= threshold`` (and every check in ``also``)."""
        return cls._compare(">=", name, statement, value, threshold, also)

    @classmethod
    def at_most(cls, name, statement, value, threshold, *also: Check) -> Claim:
        """``value <= threshold``."""
        return cls._compare("<=", name, statement, value, threshold, also)

    @classmethod
    def above(cls, name, statement, value, threshold, *also: Check) -> Claim:
        """``value > threshold``."""
        return cls._compare(">", name, statement, value, threshold, also)

    @classmethod
    def below(cls, name, statement, value, threshold, *also: Check) -> Claim:
        """``value < threshold``."""
        return cls._compare("<", name, statement, value, threshold, also)

    @classmethod
    def equals(cls, name, statement, value, expected, *also: Check) -> Claim:
        """``value == expected`` (exactly)."""
        return cls._compare("==", name, statement, value, expected, also)

    @classmethod
    def within(
        cls, name, statement, value, target: float, tol: float, relative: bool = False
    ) -> Claim:
        """``|value − target| <= tol`` (``relative``: ``|value/target − 1| <= tol``)."""
        dev = abs(value / target - 1) if relative else abs(value - target)
        text = f"{target:g} ± {tol:.0%}" if relative else f"{target:g} ± {tol:g}"
        return cls.holds(name, statement, value, Check(text, bool(dev <= tol)))

    @classmethod
    def between(
        cls, name, statement, value, low: float, high: float, open_low: bool = False
    ) -> Claim:
        """``low <= value <= high`` (``open_low``: ``low < value``)."""
        lower = value > low if open_low else value >= low
        text = f"in {'(' if open_low else '['}{low:.3g}, {high:.3g}]"
        return cls.holds(name, statement, value, Check(text, bool(lower and value <= high)))

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


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


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
        stored: for an experiment's own model, neither a registered family nor its theory."""
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

    def measure(self, config: ExperimentConfig, results: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def claims(self, config: ExperimentConfig, measurements: dict[str, Any]) -> list[Claim]:
        raise NotImplementedError

    def figure(
        self,
        config: ExperimentConfig,
        results: dict[str, Any],
        measurements: dict[str, Any],
        path: Path,
    ) -> Path:
        raise NotImplementedError

    def summary(self, measurements: dict[str, Any]) -> dict[str, Any]:
        return json_safe(measurements)
