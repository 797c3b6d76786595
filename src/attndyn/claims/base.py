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

Also part of the contract (docs/claims.md):

- ``claim_names(config)``: the claims ``claims`` must return, in order; the runner turns a
  dropped claim into a failure that says so, and zero claims is a failure;
- ``preconditions(config, measurements) -> list[Check]``: conditions under which the claims mean
  something (a matched loss reached, every seed finite); an unmet one makes the outcome
  *invalid*, never "passed";
- ``controls``: named :class:`Control` s, deliberately wrong models, scalings or theories for
  which the listed claims must fail (``attndyn run NAME --control C``; tested in CI);
- presets ``tiny`` (runs in the default test suite with ``--strict``), ``small`` and ``paper``;
- every config has ``seeds`` and ``seed`` (an offset: runs use seeds ``seed, …, seed+seeds−1``).

A claim over seeds takes an :class:`~attndyn.claims.stats.Interval` as its value and passes
only if the whole interval clears the target.

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
from pydantic import BaseModel, Field, model_validator

from attndyn import runs
from attndyn.claims.stats import Interval
from attndyn.core.config import SEED_LIMIT, STRICT_NUMBERS, SimulationConfig, reject_booleans
from attndyn.core.serial import json_safe


class ExperimentConfig(BaseModel):
    """Base of experiment configs: extra keys are errors."""

    model_config = STRICT_NUMBERS

    seed: int = Field(
        0,
        ge=0,
        lt=SEED_LIMIT,
        description="seed offset: runs use seeds seed, …, seed+seeds−1",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_booleans(cls, values: Any) -> Any:
        return reject_booleans(cls, values)


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


# the end of a confidence interval that must clear each comparison's threshold
_CONSERVATIVE = {">=": "low", ">": "low", "<=": "high", "<": "high"}


@dataclass
class Claim:
    """One checked statement: ``value`` measured, ``target`` in words, ``passed`` the verdict.

    Build claims with the helpers (``at_least``, ``at_most``, ``above``, ``below``, ``equals``,
    ``within``, ``between``, ``holds``): each takes the threshold once and writes ``target``.
    ``value`` may be an :class:`Interval` (a statistic over seeds with its confidence interval):
    the claim then passes only if the whole interval clears the threshold (``at_least``: its low
    end; ``at_most``: its high end; ``within``/``between``: both ends), and records ``ci_low``,
    ``ci_high`` and ``n_seeds``.
    """

    name: str
    statement: str
    value: float | None
    target: str
    passed: bool
    ci_low: float | None = None
    ci_high: float | None = None
    n_seeds: int | None = None

    @classmethod
    def holds(cls, name: str, statement: str, value: Any, *checks: Check) -> Claim:
        """Passes when every check passes; the target is the checks' texts joined by "and"."""
        if not checks:
            raise ValueError(f"claim {name!r} states no condition")
        text = " and ".join(c.text for c in checks)
        passed = all(c.passed for c in checks)
        if isinstance(value, Interval):
            return cls(
                name, statement, value.value, text, passed, value.low, value.high, value.n_seeds
            )
        return cls(name, statement, _number(value), text, passed)

    @classmethod
    def _compare(cls, op, name, statement, value, threshold, also: tuple[Check, ...]) -> Claim:
        if isinstance(value, Interval):
            ends = (
                [getattr(value, _CONSERVATIVE[op])]
                if op in _CONSERVATIVE
                else [value.low, value.high]
            )
            check = Check(
                f"{op} {threshold:g} ({value.level:.0%} CI)",
                bool(all(_OPS[op](e, threshold) for e in ends)),
            )
            return cls.holds(name, statement, value, check, *also)
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
        cls, name, statement, value, target: float, tol: float, relative: bool = False, *also
    ) -> Claim:
        """``|value − target| <= tol`` (``relative``: ``|value/target − 1| <= tol``)."""
        text = f"{target:g} ± {tol:.0%}" if relative else f"{target:g} ± {tol:g}"

        def ok(v: float) -> bool:
            return bool((abs(v / target - 1) if relative else abs(v - target)) <= tol)

        if isinstance(value, Interval):
            check = Check(f"{text} ({value.level:.0%} CI)", ok(value.low) and ok(value.high))
        else:
            check = Check(text, ok(value))
        return cls.holds(name, statement, value, check, *also)

    @classmethod
    def between(
        cls, name, statement, value, low: float, high: float, open_low: bool = False, *also
    ) -> Claim:
        """``low <= value <= high`` (``open_low``: ``low < value``)."""

        def ok(v: float) -> bool:
            return bool((v > low if open_low else v >= low) and v <= high)

        text = f"in {'(' if open_low else '['}{low:.3g}, {high:.3g}]"
        if isinstance(value, Interval):
            check = Check(f"{text} ({value.level:.0%} CI)", ok(value.low) and ok(value.high))
        else:
            check = Check(text, ok(value))
        return cls.holds(name, statement, value, check, *also)

    @classmethod
    def dropped(cls, name: str) -> Claim:
        """The failure that stands in for a declared claim the experiment did not evaluate."""
        return cls(
            name,
            "not evaluated: the experiment dropped this declared claim",
            None,
            "evaluated",
            False,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "statement": self.statement,
            "value": _finite(self.value),
            "ci_low": _finite(self.ci_low),
            "ci_high": _finite(self.ci_high),
            "n_seeds": self.n_seeds,
            "target": self.target,
            "passed": bool(self.passed),
        }


def _finite(value: float | None) -> float | None:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass(frozen=True)
class Control:
    """A negative control: config ``overrides`` that make the model, scaling or theory wrong
    (``reason`` says how), under which every claim in ``fails`` must fail."""

    overrides: dict[str, Any]
    fails: tuple[str, ...]
    reason: str


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
    controls: ClassVar[dict[str, Control]] = {}
    # True only where nothing random enters (an ODE): ``seed`` and ``seeds`` are then recorded
    # but change nothing, and docs/claims/<name>.md says so
    deterministic: ClassVar[bool] = False

    def claim_names(self, config: ExperimentConfig) -> list[str]:
        """The names of the claims that ``claims(config, …)`` returns, in order."""
        raise NotImplementedError

    def preconditions(self, config: ExperimentConfig, measurements: dict[str, Any]) -> list[Check]:
        """Conditions under which the claims are meaningful; an unmet one makes the outcome
        invalid."""
        return []

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
