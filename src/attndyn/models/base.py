"""The family contract: what a model family provides, checked when it is loaded.

A family is a module (or any object) registered in the ``attndyn.families`` entry-point group
(:mod:`attndyn.core.registry`) with these attributes:

- ``NAME``: the registered name;
- ``Config``: a pydantic model deriving from :class:`~attndyn.core.config.SimulationConfig`
  (extra keys forbidden; ``total_steps`` defined);
- ``simulate(config, seeds=None) -> Trajectory``: dims ``(seed, time)``; ``seeds`` replaces the
  config's own ``seed, …, seed + seeds − 1`` (a sweep runs configs differing only in ``seed`` as
  one vmapped simulation). Most families write it as one call of
  :func:`attndyn.core.simulate.simulate_problem`;
- ``SUMMARY``: observables that ``attndyn simulate`` prints at the final time;
- ``THEORY`` (optional): the import path of a :class:`Theory` module, or None;
- ``BENCHMARKS`` (optional): :class:`Benchmark` entries that ``attndyn bench`` runs;
- ``EXAMPLE`` (optional): config values of a small run (about a second) that the contract test
  (tests/test_family_contract.py) and the docs use; the defaults when absent.
- ``OVERFLOW`` (optional): a positive float; a recorded observable with |value| above it (or
  non-finite) marks its seed as diverged from that record on
  (:func:`attndyn.core.trajectory.mark_divergence`); default
  :data:`~attndyn.core.trajectory.DEFAULT_OVERFLOW` (1e10). Declare it above every legitimate
  value of the family's observables.
- ``LABELS`` (optional): observable (or extra time coordinate) name → axis label with the
  paper's symbols, e.g. ``"p_12": "structural overlap p₁₂ = q₁₂ − t₁t₂"``; ``TIME_LABEL``
  (optional): the label of ``time``, e.g. ``"t = 4nα_d/d"``. :func:`attndyn.plot` uses them and
  the raw name where a label is absent.
- ``OBSERVABLES_VERSION`` (optional): a positive integer, raised when the observables the
  family records change; ``simulate`` writes it to the Trajectory's ``attrs``, and a stored run
  recorded under another version (or none, read as 1) is recomputed when read back through
  :func:`attndyn.runs.simulation`, since run ids hash the config, not the code. Default 1.
- ``time_axes(config, steps)`` (optional): the record steps → ``{"time": ..., other axes}``
  (the ``times`` of :func:`attndyn.core.simulate.simulate_problem`); default ``time`` = step.
  The dry run lays its placeholders on it.
- ``memory_terms(config, seeds)`` (optional): the run's largest arrays as a formula of its config,
  ``{term: bytes}`` for ``seeds`` seeds, each term named by what it is and the fields that size
  it (``"seeds·batch·seq_len tokens"``): parameters with their gradients and optimiser state,
  one step's batch and activations, the observation's temporaries, data held per seed. Pure
  arithmetic on the config: no JAX, no allocation. :mod:`attndyn.runs.memory` sums it and refuses
  a config above the machine's memory before anything is built; default ``{}`` (not checked).
- ``flops_floor(config, seeds)`` (optional): lower bounds ``(per_step, per_record)`` on the
  floating-point operations of one optimiser step and of one record point, all ``seeds`` seeds
  together: the products the step cannot skip (the tokens' projections and their gradients), the
  matrices an observation must form. Pure arithmetic, like ``memory_terms``.
  :func:`attndyn.runs.estimate.floor_seconds` divides them by the machine's measured matmul
  throughput, a time no run can beat, so a config far above the time limit is refused, and a dry
  run answered, without a calibration run; default ``(0, 0)`` (no floor).

Every optional attribute has its default in :data:`OPTIONAL`; the loader sets it on a family
that lacks it (:func:`complete_family`).

A Theory module has ``Config`` (a :class:`~attndyn.core.config.GridConfig`), ``SUMMARY`` and
``predict(config) -> Trajectory`` with the simulator's observable names on the simulator's time
grid for the same config, and no seed axis. A theory of a different, stylised model (its own
observables and time axis, e.g. the circuits family's reduced flow) says so with
``SAME_GRID = False`` and its docstring gives the reason.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import xarray as xr
from pydantic import BaseModel

from attndyn.core.config import GridConfig, SimulationConfig
from attndyn.core.trajectory import DEFAULT_OVERFLOW


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of a family: ``attndyn bench --name NAME`` calls ``target`` (an import path
    ``module:function``) as ``function(quick=..., torch_reference=..., log=...) -> list[dict]``
    (``log``: progress on stderr) and shows ``columns`` of its rows."""

    name: str
    target: str
    description: str
    columns: tuple[str, ...] = field(default=())

    def run(
        self, quick: bool = False, torch_reference: bool = True, log: bool = True
    ) -> list[dict[str, Any]]:
        module, _, function = self.target.partition(":")
        fn = getattr(importlib.import_module(module), function)
        return fn(quick=quick, torch_reference=torch_reference, log=log)


def no_memory_terms(config: Any, seeds: int) -> dict[str, float]:
    """The memory formula of a family that declares none: no terms (the check is skipped)."""
    return {}


def no_flops_floor(config: Any, seeds: int) -> tuple[float, float]:
    """The FLOP floor of a family that declares none: (0, 0), no floor."""
    return 0.0, 0.0


def default_time_axes(config: Any, steps: np.ndarray) -> dict[str, np.ndarray]:
    """The time axes of a family that declares none: ``time`` = the record step."""
    return {"time": np.asarray(steps, dtype=np.float64)}


OPTIONAL: dict[str, Any] = {
    "THEORY": None,
    "BENCHMARKS": (),
    "EXAMPLE": {},
    "OVERFLOW": DEFAULT_OVERFLOW,
    "LABELS": {},
    "TIME_LABEL": "time",
    "OBSERVABLES_VERSION": 1,
    "time_axes": default_time_axes,
    "memory_terms": no_memory_terms,
    "flops_floor": no_flops_floor,
}
"""The optional attributes of :class:`Family` and their defaults, which
:func:`complete_family` sets on a family that lacks them."""

CONTRACT: tuple[str, ...] = ("NAME", "Config", "SUMMARY", "build", "simulate", *OPTIONAL)
"""The names of :class:`Family`: what a family package re-exports (``__all__ = [*CONTRACT, …]``)."""


@runtime_checkable
class Family(Protocol):
    """A model family (see the module docstring). The attributes below ``simulate`` are
    optional for a plug-in: :func:`attndyn.models.get_family` gives a family that lacks one the
    default of :data:`OPTIONAL`, so the framework reads them as plain attributes."""

    NAME: str
    Config: type[SimulationConfig]
    SUMMARY: Sequence[str]
    OBSERVABLES_VERSION: int

    def simulate(self, config: Any, seeds: Sequence[int] | None = None) -> xr.Dataset: ...

    THEORY: str | None
    BENCHMARKS: Sequence[Benchmark]
    EXAMPLE: Mapping[str, Any]
    OVERFLOW: float
    LABELS: Mapping[str, str]
    TIME_LABEL: str

    def time_axes(self, config: Any, steps: np.ndarray) -> Mapping[str, np.ndarray]: ...

    def memory_terms(self, config: Any, seeds: int) -> Mapping[str, float]: ...

    def flops_floor(self, config: Any, seeds: int) -> tuple[float, float]: ...


@runtime_checkable
class Theory(Protocol):
    """A family's theory (see the module docstring)."""

    Config: type[GridConfig]
    SUMMARY: Sequence[str]

    def predict(self, config: Any) -> xr.Dataset: ...


def check_family(obj: Any, name: str) -> None:
    """Raise TypeError naming what ``obj`` (registered as ``name``) lacks of the contract."""
    _check(obj, f"family '{name}'", ("NAME", "Config", "SUMMARY", "simulate"), SimulationConfig)
    if obj.NAME != name:
        raise TypeError(f"family registered as '{name}' says NAME = {obj.NAME!r}")
    bound = getattr(obj, "OVERFLOW", OPTIONAL["OVERFLOW"])
    if isinstance(bound, bool) or not isinstance(bound, int | float) or not bound > 0:
        raise TypeError(f"family '{name}': OVERFLOW must be a positive number, got {bound!r}")
    labels = getattr(obj, "LABELS", OPTIONAL["LABELS"])
    if not isinstance(labels, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in labels.items()
    ):
        raise TypeError(f"family '{name}': LABELS must map names to non-empty strings")
    version = getattr(obj, "OBSERVABLES_VERSION", OPTIONAL["OBSERVABLES_VERSION"])
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise TypeError(f"family '{name}': OBSERVABLES_VERSION must be an integer >= 1")
    if not isinstance(getattr(obj, "TIME_LABEL", OPTIONAL["TIME_LABEL"]), str):
        raise TypeError(f"family '{name}': TIME_LABEL must be a string")
    if not callable(getattr(obj, "time_axes", OPTIONAL["time_axes"])):
        raise TypeError(f"family '{name}': time_axes must be a function (config, steps) -> axes")
    if not callable(getattr(obj, "memory_terms", OPTIONAL["memory_terms"])):
        raise TypeError(f"family '{name}': memory_terms must be a function (config, seeds) -> dict")
    if not callable(getattr(obj, "flops_floor", OPTIONAL["flops_floor"])):
        raise TypeError(f"family '{name}': flops_floor must be a function (config, seeds) -> pair")
    for bench in getattr(obj, "BENCHMARKS", OPTIONAL["BENCHMARKS"]):
        if not isinstance(bench, Benchmark):
            raise TypeError(f"family '{name}': BENCHMARKS must hold Benchmark entries")


def complete_family(obj: Any) -> Family:
    """``obj`` with every optional attribute it lacks set to its default (:data:`OPTIONAL`)."""
    for name, default in OPTIONAL.items():
        if not hasattr(obj, name):
            setattr(obj, name, default)
    return obj


def check_theory(obj: Any, name: str) -> None:
    """Raise TypeError naming what the theory of family ``name`` lacks of the contract."""
    _check(obj, f"theory of '{name}'", ("Config", "SUMMARY", "predict"), GridConfig)


def _check(obj: Any, label: str, needed: tuple[str, ...], base: type[BaseModel]) -> None:
    missing = [a for a in needed if not hasattr(obj, a)]
    if missing:
        raise TypeError(f"{label} lacks {', '.join(missing)} (see attndyn.models.base)")
    if not (isinstance(obj.Config, type) and issubclass(obj.Config, base)):
        raise TypeError(f"{label}: Config must derive from {base.__module__}.{base.__name__}")
