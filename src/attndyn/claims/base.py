"""The experiment contract: a published claim, reproduced with one command (docs/claims.md).

An experiment declares, as class attributes:

- ``name``, a one-line ``description`` (it opens with the paper and figure it reproduces);
- ``Config``: an :class:`~attndyn.claims.config.ExperimentConfig` that nests the config of the
  model it runs (``base: AIMConfig = Base(AIMConfig, …)``) beside the fields it varies;
- ``presets``: ``tiny`` (the test suite runs it with ``--strict``), ``small`` (minutes on two
  cores) and ``paper`` (the publication's setting), each a dict of overrides (dotted keys reach a
  nested config: ``{"base.batch": 512}``); ``preset_notes`` says what each can resolve (a
  plug-in may leave one out: asking for it is then a one-line error, exit 2);
- ``claims``: the :class:`~attndyn.claims.spec.ClaimSpec` declarations (name, statement,
  statistic, target, reason, the seeds and the controls that must fail it), read by the runner,
  the dry run, ``attndyn describe``, the tests and the generated page docs/claims/NAME.md;
- ``controls``: named :class:`Control` s, deliberately wrong models, scalings or theories
  (``attndyn run NAME --control C``), which the claims naming them must fail;
- ``deterministic``: True only where nothing random enters (an ODE);
- ``notes``: what else the page says (markdown), e.g. identities moved to unit tests;
- ``retired``: :class:`~attndyn.claims.spec.Retired` records, each a claim as it stood when it
  failed before it was changed (statement, target, failing value, why, what replaced it).

and four steps that the runner calls in this order:

- ``run(config, ctx) -> results``: simulate / predict through ``ctx`` (which stores every run and
  reuses stored ones) and return the trajectories;
- ``measure(config, results) -> measurements``: every number the claims, the summary and the
  figure use, computed once;
- ``evaluate(config, measurements) -> {claim name: value}``: the measured value of each declared
  claim (a number, an :class:`~attndyn.claims.stats.Interval` or an
  :class:`~attndyn.claims.spec.Evidence`); the runner judges it against the declared target;
- ``figure(config, results, measurements, path) -> Path``.

``preconditions(config, measurements) -> list[Check]`` are the conditions under which the claims
mean something (a matched loss reached, every seed finite): an unmet one makes the outcome
*invalid*, never "passed". ``summary(measurements)`` (the ``--json`` summary) is the
measurements made JSON-safe unless an experiment narrows it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import xarray as xr
from pydantic import BaseModel

from attndyn import runs
from attndyn.claims.config import ExperimentConfig, changed
from attndyn.claims.spec import ClaimSpec, Declared, Retired
from attndyn.claims.verdict import Check, Claim
from attndyn.core.config import SimulationConfig
from attndyn.core.serial import json_safe

__all__ = [
    "Check",
    "Claim",
    "Control",
    "Experiment",
    "ExperimentConfig",
    "Retired",
    "RunContext",
]


@dataclass(frozen=True)
class Control:
    """A negative control: config ``overrides`` that make the model, scaling or theory wrong;
    ``reason`` says how. The claims it must fail name it in their declaration."""

    overrides: dict[str, Any]
    reason: str


@dataclass
class RunContext:
    """Runs simulations and theory for an experiment, storing and reusing every run.

    ``simulate(family, base, **changes)`` runs the nested config ``base`` with ``changes``
    applied (validated against the family's config); ``predict`` the same for the family's
    theory (``changes`` may add theory fields)."""

    store: Any  # attndyn.store.Store
    force: bool = False
    run_ids: list[str] = field(default_factory=list)

    def simulate(self, family: str, base: BaseModel | None = None, **changes) -> xr.Dataset:
        """The family's simulation of ``base`` with ``changes`` (stored, reused)."""
        values = changed(base, **changes) if base is not None else changes
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

    def predict(self, family: str, base: BaseModel | None = None, **changes) -> xr.Dataset:
        """The family theory's prediction for ``base`` with ``changes`` (stored, reused)."""
        values = changed(base, **changes) if base is not None else changes
        traj, _ = runs.theory(family, runs.theory_config(family, values), self.store, self.force)
        self.run_ids.append(traj.attrs["run_id"])
        return traj


ConfigT = TypeVar("ConfigT", bound=ExperimentConfig)


class Experiment(Generic[ConfigT]):
    """Subclass per published claim; see the module docstring. ``Experiment[C]`` types the
    steps' ``config`` as the experiment's own config class ``C`` (its ``Config``)."""

    name: ClassVar[str]
    description: ClassVar[str]
    Config: ClassVar[type[ExperimentConfig]]
    presets: ClassVar[dict[str, dict[str, Any]]]
    preset_notes: ClassVar[Mapping[str, str]] = {}
    claims: ClassVar[tuple[ClaimSpec, ...]] = ()
    controls: ClassVar[dict[str, Control]] = {}
    # True only where nothing random enters (an ODE): ``seed`` and ``seeds`` are then recorded
    # but change nothing, and the experiment's page says so
    deterministic: ClassVar[bool] = False
    notes: ClassVar[str] = ""
    retired: ClassVar[tuple[Retired, ...]] = ()

    def declared_claims(self, config: ExperimentConfig) -> Declared:
        """The claims this experiment makes at ``config``, in declaration order."""
        return Declared.at(type(self).claims, config)

    def claim_names(self, config: ExperimentConfig) -> list[str]:
        """The names of the claims made at ``config``, in order."""
        return self.declared_claims(config).names

    def must_fail(self, control: str, config: ExperimentConfig) -> tuple[str, ...]:
        """The claims made at ``config`` that the negative ``control`` must fail."""
        return tuple(self.declared_claims(config).failing_under(control))

    def judged(self, config: ConfigT, measurements: dict[str, Any]) -> list[Claim]:
        """Every claim made at ``config`` with its verdict on ``measurements``."""
        return self.declared_claims(config).judge(config, self.evaluate(config, measurements))

    def preconditions(self, config: ConfigT, measurements: dict[str, Any]) -> list[Check]:
        """Conditions under which the claims are meaningful; an unmet one makes the outcome
        invalid."""
        return []

    def run(self, config: ConfigT, ctx: RunContext) -> dict[str, Any]:
        raise NotImplementedError

    def measure(self, config: ConfigT, results: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def evaluate(self, config: ConfigT, measurements: dict[str, Any]) -> dict[str, Any]:
        """Claim name → its measured value (see :class:`~attndyn.claims.spec.Evidence`)."""
        raise NotImplementedError

    def figure(
        self,
        config: ConfigT,
        results: dict[str, Any],
        measurements: dict[str, Any],
        path: Path,
    ) -> Path:
        raise NotImplementedError

    def summary(self, measurements: dict[str, Any]) -> dict[str, Any]:
        return json_safe(measurements)
